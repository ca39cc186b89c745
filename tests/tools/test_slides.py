"""The instructor's decks (`make slides`): one offline reveal.js deck per notebook.

Builds every notebook in notebooks/ plus a small fixture notebook (one cell of each slide type)
with tools/build_slides.py into a temporary folder, then reads the HTML; no browser needed.
The first run fetches reveal.js and MathJax with npm into build/npm-cache/; later runs reuse it.
"""

import base64
import html
import importlib.util
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import course_format as fmt
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[2]
# The English notebooks, then the Chinese edition's (notebooks/zh/, decks named NN_topic.zh).
NOTEBOOKS = (sorted((ROOT / "notebooks").glob("*.ipynb"))
             + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")))
BUILD = ROOT / "tools" / "build_slides.py"
CACHE = ROOT / "build" / "npm-cache"

pytestmark = pytest.mark.slow

NOTE_MARKER = "speakernotemarker"
SKIP_MARKER = "skippedcellmarker"
SOLUTION_MARKER = "solutioncodemarker"
NOTEBOOK_ONLY_MARKER = "notebookonlymarker"
# A 1x1 PNG, as a plot's output and as an image file next to the fixture notebook.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def _cell(cell, slide_type, *roles):
    cell.metadata["slideshow"] = {"slide_type": slide_type}
    if roles:
        cell.metadata["tags"] = list(roles)
    return cell


def _fixture_notebook(folder):
    (folder / "figure.png").write_bytes(PNG)
    plot = new_code_cell("plt.plot([1, 2])", execution_count=2)
    plot.outputs = [new_output("display_data", data={
        "image/png": base64.b64encode(PNG).decode(), "text/plain": "<Figure>"})]
    printed = new_code_cell("# NBVAL_IGNORE_OUTPUT\nprint(1 + 1)", execution_count=1)
    printed.outputs = [new_output("stream", name="stdout", text="fixtureoutput 2\n")]
    nb = new_notebook(cells=[
        _cell(new_markdown_cell("# Fixture deck\n\nThe first slide."), "slide"),
        _cell(new_markdown_cell(f"Say this out loud: {NOTE_MARKER}."), "notes"),
        _cell(new_markdown_cell("## Math\n\n$$z = \\sum_i \\alpha_i v_i$$"), "slide"),
        _cell(new_markdown_cell(f"Only in the notebook: {SKIP_MARKER}."), "skip"),
        _cell(printed, "subslide"),
        _cell(new_markdown_cell("A fragment."), "fragment"),
        _cell(new_markdown_cell("Same slide, no new section."), "-"),
        _cell(new_markdown_cell(f"For a learner only: {NOTEBOOK_ONLY_MARKER}."), "-",
              "notebook-only"),
        _cell(new_markdown_cell("Guess: what comes next?"), "subslide", "prediction"),
        _cell(new_markdown_cell("This, one step later."), "-", "answer"),
        _cell(plot, "slide"),
        _cell(new_markdown_cell("![a figure](figure.png)"), "slide"),
        _cell(new_markdown_cell(
            "### A task\n\n<details><summary>Solution</summary>\n\n```python\n"
            f"def {SOLUTION_MARKER}():\n    return 1\n```\n\n</details>"), "slide", "solution"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = folder / "99_fixture.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    src = tmp_path_factory.mktemp("nb")
    out = tmp_path_factory.mktemp("slides")
    fixture = _fixture_notebook(src)
    proc = subprocess.run(
        [sys.executable, str(BUILD), "--out", str(out), "--cache", str(CACHE),
         *map(str, NOTEBOOKS), str(fixture)],
        capture_output=True, text=True, cwd=ROOT,
    )
    if proc.returncode != 0:
        pytest.fail(f"tools/build_slides.py failed (it needs npm the first time, to fetch "
                    f"reveal.js and MathJax into {CACHE}):\n{proc.stderr}", pytrace=False)
    return out


class _Refs(HTMLParser):
    """Every src/href attribute, and the text of <script> and <style> elements."""

    def __init__(self):
        super().__init__()
        self.refs, self.code, self._in = [], [], None

    def handle_starttag(self, tag, attrs):
        self.refs += [(tag, name, value) for name, value in attrs
                      if name in ("src", "href") and value is not None]
        self._in = tag if tag in ("script", "style") else None

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in:
            self.code.append(data)


def _refs(text):
    parser = _Refs()
    parser.feed(text)
    return parser


def _read(out, stem):
    path = out / f"{stem}.slides.html"
    assert path.exists(), f"no deck {path.name}"
    return path.read_text(encoding="utf-8")


def _skip_lines(nb_path):
    """Lines found only in the notebook's `skip` cells."""
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    skip, other = set(), set()
    for cell in nb["cells"]:
        source = cell["source"]
        lines = {line.strip() for line in
                 ("".join(source) if isinstance(source, list) else source).splitlines()}
        slide_type = cell.get("metadata", {}).get("slideshow", {}).get("slide_type")
        # a line of a skip cell is evidence only if it is distinctive: long, and more than
        # one word (an import list's "cross_entropy," or a call's last "return_all=True)"
        # also occur inside shown code)
        if slide_type == "skip":
            skip.update(line for line in lines if len(line) > 12 and " " in line)
        else:
            other.update(lines)
    # ... and only if no shown line contains it ("import numpy as np" is inside a shown
    # "import numpy as np, torch")
    return {line for line in skip if not any(line in shown for shown in other)}


def _text(html_text):
    """The visible text of the deck, whitespace collapsed (code is split into spans)."""
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", html_text, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", text)).split())


def deck_stem(nb_path):
    return nb_path.stem + (".zh" if nb_path.parent.name == "zh" else "")


STEMS = [deck_stem(p) for p in NOTEBOOKS] + ["99_fixture"]


@pytest.mark.parametrize("stem", STEMS)
def test_deck_has_slides_and_speaker_notes(decks, stem):
    text = _read(decks, stem)
    assert text.count("<section") >= 5, "fewer than 5 slides"
    assert '<aside class="notes">' in text, "no speaker notes (cells of slide type 'notes')"


@pytest.mark.parametrize("stem", STEMS)
def test_deck_loads_nothing_from_the_network(decks, stem):
    text = _read(decks, stem)
    parsed = _refs(text)
    remote = [(tag, name, value) for tag, name, value in parsed.refs
              if re.match(r"\s*(https?:)?//", value)]
    assert not remote, f"src/href pointing at the network: {remote}"
    code = "\n".join(parsed.code)
    for pattern in (r"url\(\s*['\"]?\s*(https?:)?//", r"@import\s+['\"](https?:)?//",
                    r"\bfrom\s+['\"](https?:)?//", r"\bimport\s*\(\s*['\"](https?:)?//",
                    r"['\"]https?://"):
        found = re.search(pattern, code)
        assert not found, f"network URL in a script or style: {found.group(0)!r}"


@pytest.mark.parametrize("stem", STEMS)
def test_local_files_of_the_deck_exist(decks, stem):
    """reveal.js, its notes plugin, require.js, jQuery and MathJax sit in vendor/."""
    text = _read(decks, stem)
    local = {value.split("?")[0].split("#")[0] for _, _, value in _refs(text).refs}
    local = {v for v in local if v and not v.startswith("data:")}
    script = "\n".join(_refs(text).code)
    local |= set(re.findall(r"\"(vendor/[^\"?]+\.js)\"", script))
    local |= set(re.findall(r"url\(\s*['\"]?(vendor/[^'\")]+)", script))
    expected = {"vendor/reveal.js/dist/reveal.js", "vendor/reveal.js/plugin/notes/notes.js",
                "vendor/requirejs/require.js", "vendor/mathjax/MathJax.js"}
    assert expected <= local, f"missing references: {expected - local}"
    missing = [v for v in sorted(local) if not (decks / v).is_file()]
    assert not missing, f"referenced but not built: {missing}"
    assert "config=TeX-AMS_CHTML-full,Safe" in text
    assert (decks / "vendor/mathjax/config/TeX-AMS_CHTML-full.js").is_file()
    assert (decks / "vendor/mathjax/config/Safe.js").is_file()


@pytest.mark.parametrize("stem", STEMS)
def test_deck_is_sized_for_1280_by_720(decks, stem):
    text = _read(decks, stem)
    assert re.search(r"width:\s*1280\b", text) and re.search(r"height:\s*720\b", text)


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=[deck_stem(p) for p in NOTEBOOKS])
def test_notebook_deck_leaves_out_skip_cells_and_keeps_plots(decks, nb_path):
    text = _read(decks, deck_stem(nb_path))
    visible = _text(text)
    shown = [line for line in _skip_lines(nb_path) if " ".join(line.split()) in visible]
    assert not shown, f"lines of skip cells on the slides: {shown}"
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    plots = sum(1 for cell in nb["cells"]
                if fmt.slide_type(cell) != "skip"
                and not (fmt.is_lecture(nb) and fmt.has(cell, "notebook-only"))
                for out in cell.get("outputs", []) if "image/png" in out.get("data", {}))
    assert text.count('src="data:image/png;base64,') >= plots


def test_fixture_deck_follows_the_slide_types(decks):
    text = _read(decks, "99_fixture")
    assert SKIP_MARKER not in text and NOTEBOOK_ONLY_MARKER not in text
    answer = re.search(r'<div class="fragment"[^>]*>(?:(?!</section>).)*This, one step later',
                       text, flags=re.S)
    assert answer, "the answer to a prediction is not a fragment"
    notes = re.findall(r'<aside class="notes">(.*?)</aside>', text, flags=re.S)
    assert any(NOTE_MARKER in note for note in notes)
    assert '<div class="fragment"' in text
    assert "print" in _text(text) and "fixtureoutput 2" in text  # code and its output
    # the plot output and the markdown image, both embedded
    assert text.count('src="data:image/png;base64,') == 2
    assert 'src="figure.png"' not in text
    assert "\\sum_i \\alpha_i v_i" in text  # left for MathJax to typeset in the browser
    assert "NBVAL_" not in text  # the marker line is dropped from the code shown
    # the solution stays inside its <details> (nbconvert's embed_images emptied them)
    folded = re.search(r"<details>(.*?)</details>", text, flags=re.S)
    assert folded and SOLUTION_MARKER in folded.group(1)


@pytest.mark.parametrize("stem", STEMS)
def test_solutions_stay_inside_their_details(decks, stem):
    """No <details> is emitted empty with its content after it, and no NBVAL_ marker shows."""
    text = _read(decks, stem)
    empty = re.findall(r"<details>\s*<summary>(.*?)</summary>\s*</details>", text, flags=re.S)
    assert not empty, f"empty <details> (their content would be unfolded): {empty}"
    assert "NBVAL_" not in _text(text)


def _cjk_module():
    path = ROOT / "tools" / "make_cjk_font.py"
    spec = importlib.util.spec_from_file_location("make_cjk_font", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_font_covers_the_notebooks():
    """Every CJK character of every notebook (cells and outputs) is in minitf-cjk.otf."""
    from fontTools.ttLib import TTFont

    used = _cjk_module().used_chars(ROOT)
    assert "一" in used and "熵" in used  # the scan finds characters at all
    cmap = TTFont(ROOT / "minitf" / "figures" / "fonts" / "minitf-cjk.otf").getBestCmap()
    missing = {c: where for c, where in used.items() if ord(c) not in cmap}
    assert not missing, (f"not in the shipped font: {missing}; rebuild it with "
                         "tools/make_cjk_font.py (minitf/figures/fonts/README.md)")


def test_code_blocks_are_set_in_a_font_with_chinese(decks):
    """reveal's theme sets code in var(--r-code-font); ours lists the shipped CJK font."""
    text = _read(decks, "99_fixture")
    code_font = re.search(r"--r-code-font:([^;]*);", text)
    assert code_font and '"minitf CJK"' in code_font.group(1)
    assert re.search(r"\.reveal pre,[^{]*\{\s*font-family: var\(--r-code-font\)", text)


def test_index_lists_every_deck(decks):
    index = (decks / "index.html").read_text(encoding="utf-8")
    refs = _refs(index).refs
    links = [value for tag, _, value in refs if tag == "a"]
    assert sorted(links) == sorted(f"{stem}.slides.html" for stem in STEMS)
    assert "Fixture deck" in index
    for nb_path in NOTEBOOKS:  # each line: the deck's title, how many slides, the core path
        if nb_path.parent.name != "zh":
            line = re.search(rf'<li><a href="{nb_path.stem}\.slides\.html">.*?</li>', index)
            assert line and re.search(r"\d+ slides, core path about \d+ min", line.group(0))
    assert "<ol>" not in index  # the notebooks' own numbers, not a second numbering
    assert "`" not in _text(index.split("<body>")[1].split("<p>Keys")[0])  # `code` rendered
    for tag, _, value in refs:
        assert not re.match(r"\s*(https?:)?//", value), f"<{tag}> loads {value}"
        assert (decks / value).is_file(), f"<{tag}> points at a missing {value}"

"""Hygiene of the stored course notebooks: named NN_topic and numbered without gaps, each in
both READMEs' course maps, executed top to bottom in one fresh kernel, no errors or stderr,
nothing machine-specific in the outputs, at least five slides and some speaker notes, and 2-6
exercises whose checkers show "not written yet". What each cell is comes from its roles,
read through tools/course_format.py (tests/notebooks/test_format.py checks the format itself).

These tests only read the .ipynb files; nbval (`make test`) is what re-executes them.
"""

import getpass
import re
from pathlib import Path

import course_format as fmt
import nbformat
import pytest
from slide_metadata import RISE_SETTINGS

ROOT = Path(__file__).resolve().parents[2]

NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))

NAME = re.compile(r"\d\d_[a-z0-9]+(_[a-z0-9]+)*\.ipynb")
MIN_SLIDES = 5
EXERCISES = range(2, 7)  # 2 to 6 exercises (07 has six: one for each idea it builds)
IMPORTS_MINITF = re.compile(r"^\s*(import minitf|from minitf[\s.])", re.MULTILINE)
PATHS = ("/home/", "/root/", "/work/", "/tmp/", "C:\\")
MEMORY_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]{4,}")
MAX_BYTES = 600 * 1024


def user_name_pattern():
    """A regex for this machine's user name as a whole word, or None when it is too short
    or too common to test ("root" is a word of prose; its paths are caught by "/root/")."""
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name available: nothing to look for
        return None
    if len(user) <= 3 or user == "root":
        return None
    return re.compile(rf"(?<![\w-]){re.escape(user)}(?![\w-])")


def load(path):
    return nbformat.read(path, as_version=4)


def code_cells(nb):
    """(index in the notebook, cell) of every code cell."""
    return [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]


def output_text(cell):
    """Everything a code cell's stored outputs would show as text (images left out)."""
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type in ("execute_result", "display_data"):
            parts += [str(v) for k, v in out.data.items() if not k.startswith("image/")]
        elif out.output_type == "error":
            parts += [out.ename, out.evalue, *out.traceback]
    return "\n".join(parts)


def where(path, i):
    return f"{path.name} cell {i}"


def report(problems):
    assert not problems, "\n".join(problems)


parametrize = pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
# The outputs of both editions (the Chinese notebooks are executed from a clean run too).
BOTH_EDITIONS = NOTEBOOKS + sorted((NOTEBOOK_DIR / "zh").glob("*.ipynb"))
both_editions = pytest.mark.parametrize(
    "path", BOTH_EDITIONS, ids=[str(p.relative_to(NOTEBOOK_DIR)) for p in BOTH_EDITIONS])


@parametrize
def test_file_name_and_size(path):
    assert NAME.fullmatch(path.name), (
        f"{path.name}: name it NN_topic.ipynb (two digits, underscore, lower-case words)")
    size = path.stat().st_size
    assert size <= MAX_BYTES, f"{path.name}: {size // 1024} KiB, keep it under 600 KiB"


@parametrize
def test_kernelspec_is_python3(path):
    kernelspec = load(path).metadata.get("kernelspec", {})
    assert kernelspec.get("name") == "python3", (
        f"{path.name}: kernelspec name is {kernelspec.get('name')!r}, expected 'python3'")


@parametrize
def test_executed_once_in_order(path):
    nb = load(path)
    cells = code_cells(nb)
    problems = [f"{where(path, i)}: never executed (execution_count is None)"
                for i, c in cells if c.execution_count is None]
    counts = [c.execution_count for _, c in cells]
    if not problems and counts != list(range(1, len(cells) + 1)):
        first = next(k for k, n in enumerate(counts) if n != k + 1)
        i = cells[first][0]
        problems.append(f"{where(path, i)}: execution count {counts[first]}, expected "
                        f"{first + 1}; re-run the whole notebook in a fresh kernel "
                        "(make notebooks NB=...)")
    if not any(c.get("outputs") for _, c in cells):
        problems.append(f"{path.name}: no code cell has any stored output")
    report(problems)


@both_editions
def test_no_errors_or_stderr(path):
    problems = []
    for i, cell in code_cells(load(path)):
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                problems.append(f"{where(path, i)}: stored error {out.ename}: {out.evalue}")
            elif out.output_type == "stream" and out.name == "stderr":
                problems.append(f"{where(path, i)}: writes to stderr: {out.text[:120]!r}")
    report(problems)


@both_editions
def test_nothing_machine_specific_in_outputs(path):
    user = user_name_pattern()
    problems = []
    for i, cell in code_cells(load(path)):
        text = output_text(cell)
        problems += [f"{where(path, i)}: output contains the path {p!r}"
                     for p in PATHS if p in text]
        if user and user.search(text):
            problems.append(f"{where(path, i)}: output contains the user name")
        address = MEMORY_ADDRESS.search(text)
        if address:
            problems.append(f"{where(path, i)}: output contains a memory address "
                            f"{address.group().strip()!r} (end a plotting cell with plt.show(),"
                            " or assign the value: `_ = ...`)")
    report(problems)


@parametrize
def test_imports_minitf(path):
    assert any(IMPORTS_MINITF.search(c.source) for _, c in code_cells(load(path))), (
        f"{path.name}: no code cell imports minitf (`import minitf` or `from minitf...`)")


@parametrize
def test_slides_and_speaker_notes(path):
    cells = fmt.load(path)["cells"]
    slides = sum(fmt.slide_type(c) == "slide" for c in cells)
    assert slides >= MIN_SLIDES, (
        f"{path.name}: {slides} cells of slide type 'slide', expected at least {MIN_SLIDES}")
    assert any(fmt.is_notes(c) for c in cells), f"{path.name}: no speaker notes (role notes)"


# Markdown renders `<pad>` outside a code span as an HTML tag, and the tag is dropped: "the
# <pad> rows" reads "the  rows" in JupyterLab and on the slides.
SPECIAL_TOKEN = re.compile(r"<(pad|bos|eos|unk)>")
CODE_OR_MATH = re.compile(r"```.*?```|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$", re.S)


@parametrize
def test_special_tokens_in_markdown_are_in_code_spans(path):
    problems = []
    for i, cell in enumerate(load(path).cells):
        if cell.cell_type == "markdown":
            prose = CODE_OR_MATH.sub("", cell.source)
            problems += [f"{where(path, i)}: write `{m.group()}` in backticks, or it vanishes"
                         for m in SPECIAL_TOKEN.finditer(prose)]
    report(problems)


@parametrize
def test_exercises(path):
    nb = fmt.load(path)
    found = fmt.exercises(nb)
    problems = []
    if len(found) not in EXERCISES:
        problems.append(f"{path.name}: {len(found)} exercises (role exercise), expected "
                        f"{EXERCISES.start} to {EXERCISES.stop - 1}")
    problems += [f"{where(path, e.checker)}: the stored checker output should say 'not written "
                 "yet' (keep the stub unsolved when executing the notebook)"
                 for e in found if e.checker is not None
                 and "not written yet" not in output_text(load(path).cells[e.checker])]
    report(problems)


def test_the_course_is_numbered_without_gaps_and_mapped_in_both_readmes():
    numbers = [int(path.name[:2]) for path in NOTEBOOKS]
    assert numbers == list(range(len(NOTEBOOKS))), f"notebooks numbered {numbers}"
    for readme, folder in (("README.md", "notebooks"), ("README.zh.md", "notebooks/zh")):
        text = (ROOT / readme).read_text(encoding="utf-8")
        missing = [p.name for p in NOTEBOOKS if f"]({folder}/{p.name})" not in text]
        assert not missing, f"{readme}: the course map has no link to {missing}"


def test_every_notebook_has_the_live_slide_settings():
    """Every notebook carries slide_metadata.RISE_SETTINGS (`slide_metadata.py NB --rise`
    writes them), which tests/tools/test_rise_browser.py checks in RISE on notebook 07."""
    assert RISE_SETTINGS["theme"] == "white" and not RISE_SETTINGS["autolaunch"]
    differ = [path.name for path in NOTEBOOKS if load(path).metadata.get("rise") != RISE_SETTINGS]
    assert not differ, f"metadata.rise is not slide_metadata.RISE_SETTINGS in {differ}"

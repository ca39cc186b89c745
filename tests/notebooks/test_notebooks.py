"""Hygiene of the stored course notebooks: named NN_topic, executed top to bottom in one fresh
kernel, no errors or stderr, nothing machine-specific in the outputs, slide metadata on every
cell, speaker notes on the sub-slide they talk about, and 2-6 exercises whose checkers show
"not written yet".

These tests only read the .ipynb files; nbval (`make test`) is what re-executes them.
"""

import getpass
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "slides"))
from slide_metadata import RISE_SETTINGS, slide_numbers  # noqa: E402

NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))

NAME = re.compile(r"\d\d_[a-z0-9]+(_[a-z0-9]+)*\.ipynb")
SLIDE_TYPES = {"slide", "subslide", "fragment", "-", "skip", "notes"}
MIN_SLIDES = 5
EXERCISES = range(2, 7)  # 2 to 6 checker calls (07 has six: one for each idea it builds)
CHECKER_CALL = re.compile(r"\bcheck_(?!function\b)\w+\s*\(")
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


@parametrize
def test_no_errors_or_stderr(path):
    problems = []
    for i, cell in code_cells(load(path)):
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                problems.append(f"{where(path, i)}: stored error {out.ename}: {out.evalue}")
            elif out.output_type == "stream" and out.name == "stderr":
                problems.append(f"{where(path, i)}: writes to stderr: {out.text[:120]!r}")
    report(problems)


@parametrize
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
def test_slide_metadata(path):
    nb = load(path)
    problems, types = [], []
    for i, cell in enumerate(nb.cells):
        slide_type = cell.metadata.get("slideshow", {}).get("slide_type")
        types.append(slide_type)
        if slide_type not in SLIDE_TYPES:
            problems.append(f"{where(path, i)}: metadata.slideshow.slide_type is "
                            f"{slide_type!r}, expected one of {sorted(SLIDE_TYPES)}")
        elif slide_type == "notes" and not cell.source.startswith("**Speaker notes.**"):
            problems.append(f"{where(path, i)}: a notes cell should begin with "
                            "'**Speaker notes.**'")
    if types.count("slide") < MIN_SLIDES:
        problems.append(f"{path.name}: {types.count('slide')} cells of type 'slide', "
                        f"expected at least {MIN_SLIDES}")
    if "notes" not in types:
        problems.append(f"{path.name}: no speaker-notes cell (slide_type 'notes')")
    report(problems)


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


def sub_slides(nb):
    """[("h.v", [(index, cell), ...])] in deck order, numbered as the exported deck stacks
    them (slide_metadata.py --list): a notes cell belongs to the (sub-)slide it follows."""
    groups = []
    for i, (cell, (h, v)) in enumerate(zip(nb.cells, slide_numbers(nb.cells))):
        if not groups or groups[-1][0] != f"{h}.{v}":
            groups.append((f"{h}.{v}", []))
        groups[-1][1].append((i, cell))
    return groups


# A note that sends the presenter to a question's folded answer ("… in the lesson, folded",
# "before unfolding it", "Take the two predictions …").
ABOUT_A_FOLDED_QUESTION = re.compile(
    r"\bfold|\bunfold|\bTake\b[^.]*\b(prediction|question)s?\b", re.IGNORECASE)
FOLDED_ANSWER = re.compile(r"<details>\s*<summary>(?!Solution)")  # an answer, not a solution
NAMED_EXERCISE = re.compile(r"\b[Ee]xercises? (\d+)(?: and (\d+))?")
EXERCISE_HEADING = re.compile(r"^#+\s*(?:Optional\s*—\s*)?Exercise (\d+)\b", re.MULTILINE)
PARENTHESES = re.compile(r"\([^()]*\)")


@parametrize
def test_speaker_notes_sit_on_the_sub_slide_they_are_about(path):
    """reveal.js shows a notes cell only on the (sub-)slide it follows, so a note that talks
    about a question or an exercise must follow that question's or exercise's sub-slide, not
    wait at the end of its section. The notebook's opening slide is left out: its notes
    introduce the whole notebook and may name the first question ahead."""
    problems = []
    for label, cells in sub_slides(load(path))[1:]:
        markdown = [c.source for _, c in cells if c.cell_type == "markdown"]
        answers = any(FOLDED_ANSWER.search(text) for text in markdown)
        exercises = {n for text in markdown for n in EXERCISE_HEADING.findall(text)}
        for i, cell in cells:
            if cell.metadata.get("slideshow", {}).get("slide_type") != "notes":
                continue
            words = " ".join(cell.source.split())
            if ABOUT_A_FOLDED_QUESTION.search(words) and not answers:
                problems.append(f"{where(path, i)} (sub-slide {label}): the note talks about a "
                                "question's folded answer, but this sub-slide has none; move it "
                                "to the sub-slide of that question")
            named = {n for m in NAMED_EXERCISE.finditer(PARENTHESES.sub("", words))
                     for n in m.groups() if n}
            if named and not named & exercises:
                problems.append(f"{where(path, i)} (sub-slide {label}): the note is about "
                                f"exercise {' and '.join(sorted(named))}, which is not on this "
                                "sub-slide; move it to that exercise's sub-slide")
    report(problems)


@parametrize
def test_speaker_notes_are_folded_for_a_learner(path):
    """A learner reading in JupyterLab sees a notes cell as one folded bar (its standard
    `jupyter.source_hidden`); the decks still show the notes in the speaker view."""
    nb = load(path)
    notes = [i for i, cell in enumerate(nb.cells)
             if cell.metadata.get("slideshow", {}).get("slide_type") == "notes"]
    assert notes, f"{path.name}: no speaker notes"
    unfolded = [i for i in notes
                if not nb.cells[i].metadata.get("jupyter", {}).get("source_hidden")]
    assert not unfolded, f"{path.name}: notes cells {unfolded} are not folded"
    folded_others = [i for i, cell in enumerate(nb.cells) if i not in notes
                     and cell.metadata.get("jupyter", {}).get("source_hidden")]
    assert not folded_others, f"{path.name}: cells {folded_others} are folded but not notes"


@parametrize
def test_exercises(path):
    calls = [(i, c) for i, c in code_cells(load(path)) if CHECKER_CALL.search(c.source)]
    problems = []
    if len(calls) not in EXERCISES:
        found = ", ".join(str(i) for i, _ in calls) or "none"
        problems.append(f"{path.name}: {len(calls)} cells call a checker (cells {found}), "
                        f"expected {EXERCISES.start} to {EXERCISES.stop - 1} exercises")
    problems += [f"{where(path, i)}: the stored checker output should say 'not written yet' "
                 "(keep the stub unsolved when executing the notebook)"
                 for i, c in calls if "not written yet" not in output_text(c)]
    report(problems)


def test_the_whole_course_is_there():
    expected = ["00_overview", "01_single_query_attention", "02_matrix_attention",
                "03_multi_head_attention", "04_positional_encoding", "05_encoder",
                "06_masked_decoder", "07_generation", "08_training",
                "09_what_it_refers_to", "10_to_pytorch"]
    assert [path.stem for path in NOTEBOOKS] == expected


def test_every_notebook_has_the_live_slide_settings():
    """Every notebook carries slide_metadata.RISE_SETTINGS (`slide_metadata.py NB --rise`
    writes them), which tests/tools/test_rise_browser.py checks in RISE on notebook 07."""
    assert RISE_SETTINGS["theme"] == "white" and not RISE_SETTINGS["autolaunch"]
    differ = [path.name for path in NOTEBOOKS if load(path).metadata.get("rise") != RISE_SETTINGS]
    assert not differ, f"metadata.rise is not slide_metadata.RISE_SETTINGS in {differ}"

"""The course's format (tools/course_format.py): every notebook of both editions is well formed,
a malformed one gets one line naming the file, the cell and what is wrong, rewording the prose
changes nothing a tool believes a cell is, and no other code reads the prose for it."""

import ast
import copy
import re
from pathlib import Path

import core_path
import course_format as fmt
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = fmt.notebooks()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_notebook_is_well_formed(path):
    problems = fmt.validate(fmt.load(path), path)
    assert not problems, "\n".join(problems)


def test_both_editions_give_every_cell_the_same_roles():
    for path in NOTEBOOKS:
        if path.parent.name == "zh":
            en, zh = fmt.load(fmt.NOTEBOOK_DIR / path.name), fmt.load(path)
            assert [fmt.roles(c) for c in en["cells"]] == [fmt.roles(c) for c in zh["cells"]]
            assert fmt.stated_minutes(en) == fmt.stated_minutes(zh)


def test_the_roles_are_used():
    """Each role (but the lecture's, which decks add) marks cells somewhere in the course."""
    used = {r for path in NOTEBOOKS for c in fmt.load(path)["cells"] for r in fmt.roles(c)}
    assert set(fmt.ROLES) - used <= {"lecture-only", "notebook-only", "show-code"}


# -- a malformed notebook, one problem at a time ---------------------------------------------
def _notebook(*cells, minutes=12):
    nb = {"cells": [{"cell_type": "markdown", "id": "title", "metadata": {
        "slideshow": {"slide_type": "slide"}}, "source": f"# Title\n\nAbout {minutes} minutes."}],
        "metadata": {"minitf": {"minutes": minutes}}}
    for k, (kind, source, roles, slide) in enumerate(cells):
        cell = {"cell_type": kind, "id": f"c{k}", "source": source,
                "metadata": {"slideshow": {"slide_type": slide}}}
        if set(roles) <= set(fmt.ROLES):
            fmt.set_roles(cell, roles)
            if "exercise" in roles:
                cell["metadata"]["minitf"] = {"minutes": 6}
        else:  # a tag set_roles would refuse
            cell["metadata"]["tags"] = list(roles)
        nb["cells"].append(cell)
    return nb


GOOD_EXERCISE = [
    ("markdown", "### Exercise 1 — softmax", ["exercise"], "subslide"),
    ("code", "def f(x):\n    raise NotImplementedError\n\n\ncheck_softmax(f)",
     ["stub", "checker"], "-"),
    ("markdown", "<details><summary>Solution</summary>\n\n```python\ndef f(x):\n    return x\n"
                 "```\n</details>", ["solution"], "-"),
]


def test_a_well_formed_notebook_passes(tmp_path):
    nb = _notebook(*GOOD_EXERCISE, ("markdown", "**Speaker notes.** Say it.", ["notes"], "notes"),
                   ("markdown", "What happens?", ["prediction"], "subslide"),
                   ("code", "print(1)", ["answer"], "-"))
    assert fmt.validate(nb, tmp_path / "99_x.ipynb") == []
    (exercise,) = fmt.exercises(nb)
    assert (exercise.index, exercise.stubs, exercise.checker, exercise.solution) == (1, [2], 2, 3)
    assert fmt.checker_call(nb["cells"][2]) == "check_softmax(f)"


BROKEN = {
    "no stub": ([GOOD_EXERCISE[0], ("code", "check_softmax(f)", ["checker"], "-"),
                 GOOD_EXERCISE[2]], "cell 1 (c0): the exercise has no stub cell after it"),
    "no checker call": ([GOOD_EXERCISE[0], ("code", "raise NotImplementedError", ["stub",
                                                                                "checker"], "-"),
                         GOOD_EXERCISE[2]], "cell 2 (c1): a checker cell calls a check_… "),
    "solution not folded": ([*GOOD_EXERCISE[:2], ("markdown", "def f(x): return x",
                                                  ["solution"], "-")],
                            "cell 3 (c2): a solution cell folds its code in <details>"),
    "stub before its exercise": ([GOOD_EXERCISE[1], GOOD_EXERCISE[0], GOOD_EXERCISE[1],
                                  GOOD_EXERCISE[2]], "cell 1 (c0): a checker cell comes after"),
    "notes without the label": ([("markdown", "Say it.", ["notes"], "notes")],
                                "cell 1 (c0): a notes cell begins with '**Speaker notes.**'"),
    "notes of another slide type": ([("markdown", "**Speaker notes.** x", [], "notes")],
                                    "cell 1 (c0): a notes cell has slide type 'notes'"),
    "an unknown tag": ([("markdown", "text", ["exersize"], "-")],
                       "cell 1 (c0): unknown tag 'exersize'"),
    "an answer with no question": ([("code", "x = 1", ["answer"], "-")],
                                   "cell 1 (c0): an answer cell follows a prediction"),
    "an unanswered prediction": ([("markdown", "What happens?", ["prediction"], "-"),
                                  ("code", "x = 1", [], "-")],
                                 "cell 1 (c0): a prediction has its answer"),
    "a code cell as exercise": ([("code", "x = 1", ["exercise"], "-")],
                                "cell 1 (c0): a exercise cell is a markdown cell"),
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_malformed_notebook_gets_one_line_naming_file_cell_and_problem(tmp_path, name):
    cells, expected = BROKEN[name]
    problems = fmt.validate(_notebook(*cells), tmp_path / "99_x.ipynb")
    assert any(p.startswith("99_x.ipynb " + expected) for p in problems), problems


def test_an_exercise_states_its_minutes(tmp_path):
    nb = _notebook(*GOOD_EXERCISE)
    nb["cells"][1]["metadata"]["minitf"]["minutes"] = 0
    assert fmt.validate(nb, tmp_path / "a.ipynb") == [
        "a.ipynb cell 1 (c0): an exercise cell states the learner's minutes for it in "
        "metadata.minitf.minutes (a positive whole number), not 0"]


def test_the_stated_minutes_are_checked(tmp_path):
    nb = _notebook(*GOOD_EXERCISE)
    nb["cells"][0]["source"] = "# Title\n\nAbout 13 minutes."
    assert fmt.validate(nb, tmp_path / "a.ipynb") == [
        "a.ipynb cell 0 (title): the notebook's opening (its cells before the first section) "
        "does not state the core path's 12 minutes (metadata.minitf.minutes)"]
    del nb["metadata"]["minitf"]
    assert "metadata.minitf.minutes" in fmt.validate(nb, tmp_path / "a.ipynb")[0]


def test_the_command_line_names_each_problem_and_fails(tmp_path, capsys):
    path = tmp_path / "99_x.ipynb"
    fmt.save(_notebook(*BROKEN["no stub"][0]), path)
    assert fmt.main([str(path)]) == 1
    assert "99_x.ipynb cell 1 (c0): the exercise has no stub" in capsys.readouterr().err
    fmt.save(_notebook(*GOOD_EXERCISE), path)
    assert fmt.main([str(path)]) == 0
    assert fmt.main(["--tag", str(path), "c0=exercise,optional"]) == 0
    assert fmt.roles(fmt.load(path)["cells"][1]) == {"exercise", "optional"}
    assert fmt.main(["--tag", str(path), "c0=exersize"]) == 2


# -- rewording changes nothing a tool does ---------------------------------------------------
REWORDINGS = [(r"\bExercise\b", "习题"), (r"\bOptional\b", "Extra"), (r"\bPredict\b", "Guess"),
              (r"\bSolution\b", "Key"), (r"\bQuestions?\b", "Puzzle"), (r"\bThink\b", "Ponder"),
              (r"Speaker notes\.", "Speaker notes."), (r"core path", "main route")]


def _reworded(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for pattern, new in REWORDINGS:
                cell.source = re.sub(pattern, new, cell.source)
    out = tmp_path / path.name
    nbformat.write(nb, out)
    return out


def _what_the_tools_see(path):
    nb = fmt.load(path)
    exercises = [(e.index, e.stubs, e.checker, e.solution, e.optional)
                 for e in fmt.exercises(nb)]
    m = core_path.measure(path)
    sections = [(s["minutes"], s["optional"]) for s in core_path.sections(path)]
    return exercises, (m["code_cells"], m["exercises"], m["stated"]), sections


def _deck_cells(path):
    import minitf_slides
    from nbconvert.preprocessors import Preprocessor  # noqa: F401 - the preprocessor's base

    nb = nbformat.read(path, as_version=4)
    pre = minitf_slides.SlidesPreprocessor()
    nb, _ = pre.preprocess(copy.deepcopy(nb), {"metadata": {"name": path.stem,
                                                            "path": str(path.parent)}})
    return [(c.cell_type, minitf_slides.slide_type(c),
             "In JupyterLab" in c.source if c.cell_type == "markdown" else None)
            for c in nb.cells]


@pytest.mark.parametrize("name", ["01_single_query_attention.ipynb", "07_generation.ipynb"])
def test_rewording_the_prose_changes_nothing_a_tool_does(tmp_path, name):
    path = fmt.NOTEBOOK_DIR / name
    reworded = _reworded(path, tmp_path)
    assert reworded.read_text(encoding="utf-8") != path.read_text(encoding="utf-8")
    assert _what_the_tools_see(reworded) == _what_the_tools_see(path)
    assert _deck_cells(reworded) == _deck_cells(path)
    nb = fmt.load(path)
    shown = [e for e in fmt.exercises(nb) if not fmt.has(nb["cells"][e.index], "notebook-only")]
    assert sum(card is True for *_, card in _deck_cells(path)) == len(shown)


# -- nobody else reads the prose for structure -----------------------------------------------
STRUCTURAL = re.compile(r"Exercise|练习|Predict|先预测|Think|想一想|Question|问题|Solution|参考解答"
                        r"|Optional|选学|Speaker notes|讲者备注|Answer")
REGEX_CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn",
               "split"}


def prose_parsers(source, filename):
    """Where code matches notebook text against the course's structural words: a regular
    expression (re.*, or a JavaScript regex in a string) that names one."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                and node.func.attr in REGEX_CALLS and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                and STRUCTURAL.search(node.args[0].value)):
            found.append(f"{filename}:{node.lineno}: re.{node.func.attr}({node.args[0].value!r})")
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and re.search(r"/[^/\n]*(" + STRUCTURAL.pattern + r")[^/\n]*\|[^/\n]*/",
                            node.value)):
            found.append(f"{filename}:{node.lineno}: a regex in a string names a structural word")
    return found


def test_the_lint_finds_a_prose_parser():
    assert prose_parsers('import re\nre.compile(r"^### Exercise")\n', "a.py")
    assert prose_parsers('JS = "const ask = /^(Predict|Think)/;"\n', "b.py")
    assert not prose_parsers('import re\nre.compile(r"^#+ ")\nWORD = "Exercise"\n', "c.py")


def test_only_the_format_module_reads_structure_from_prose():
    files = [p for folder in ("tools", "tests", "minitf", "benchmarks")
             for p in sorted((ROOT / folder).rglob("*.py"))
             if p.name not in ("course_format.py", "test_format.py")]
    found = [hit for p in files
             for hit in prose_parsers(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert not found, "\n".join(found)

"""The course's format: what each cell of a notebook *is*, kept as data and known only here.

A cell's role is a standard Jupyter cell tag (`metadata.tags`, the tag editor of JupyterLab's
property inspector); a notebook's numbers live under `metadata.minitf`. The prose never says
what a cell is to a tool: rewording a heading, or writing 习题 for 练习, changes nothing a tool
does. Every tool (the slides, the Chinese edition, the core path) and every test reads the
format through this module, and `validate` names, in one line each, whatever breaks it.

Usage: python tools/course_format.py [NOTEBOOK ...]          validate (default: every notebook,
                                                            both editions); exit 1 on a problem
       python tools/course_format.py --list NOTEBOOK         every cell with its roles
       python tools/course_format.py --tag NOTEBOOK CELL=ROLE[,ROLE] ...
                                                            set cells' roles, replacing theirs
                                                            (CELL: id or index; ROLE - for none)
"""

import argparse
import ast
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
ZH_DIR = NOTEBOOK_DIR / "zh"
# Numbers live under a cell's or the notebook's metadata.minitf: the notebook's {"minutes": the
# core path's minutes}; an exercise cell's {"minutes": the learner's own work on it}. A notebook
# whose lecture is authored has {"lecture": true}: then the cell that starts each slide has
# {"title": what the slide shows}, and each slide's notes cell {"minutes": its class minutes}.
LECTURE_MINUTES = 90  # one class
TITLE_CHARACTERS = 90  # a title is one line on a slide

# The roles a cell can play, each a cell tag. CONTRIBUTING.md ("Anatomy of a notebook") says
# the same for people.
ROLES = {
    "exercise": "markdown: sets an exercise; its heading is the exercise's name",
    "stub": "code: what the learner completes; raises NotImplementedError until then",
    "checker": "code: calls the exercise's checker (may be the stub's own cell)",
    "solution": "markdown: the exercise's solution, folded in <details> with a ```python fence",
    "prediction": "markdown: a question the learner answers before reading on",
    "answer": "a cell that answers the prediction before it (shown one step later on a slide)",
    "notes": "markdown: speaker notes (slide type notes; folded in JupyterLab)",
    "optional": "a cell of an optional part: outside the core path",
    "lecture-only": "shown on the slides only (folded in JupyterLab, code and output)",
    "notebook-only": "left out of the slides",
    "show-code": "code with a figure: the slides keep its code (they hide a figure's by default)",
}
# Tags other tools own, allowed beside the roles.
OTHER_TAGS = {"nbval-ignore-output", "nbval-skip", "nbval-raises-exception"}
FOLDED = {"notes", "lecture-only"}  # folded for a learner in JupyterLab (jupyter.source_hidden)
SLIDE_TYPES = ("slide", "subslide", "fragment", "-", "skip", "notes")
# What a learner sees at the top of a notes cell, in each edition.
NOTES_LABEL = {"en": "**Speaker notes.**", "zh": "**讲者备注：**"}
STUB_LINE = "raise NotImplementedError"

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)
PYTHON_FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


# -- reading ---------------------------------------------------------------------------------
class NotebookError(ValueError):
    """A file that is not a notebook the tools can read; the message names it."""


def load(path):
    """The notebook at `path` as a dict (cells' sources joined into strings); a NotebookError
    naming the file and the problem otherwise (a merge conflict, a folder, a binary file)."""
    try:
        nb = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except OSError as e:
        raise NotebookError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise NotebookError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise NotebookError(f"{path}: not JSON ({e.msg} at line {e.lineno}; a merge "
                            "conflict?)") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise NotebookError(f"{path}: not a notebook (no list of 'cells')")
    for index, cell in enumerate(cells):
        text = cell.get("source") if isinstance(cell, dict) else None
        if not (isinstance(cell, dict) and isinstance(cell.get("cell_type"), str)
                and (isinstance(text, str) or isinstance(text, list)
                     and all(isinstance(line, str) for line in text))):
            raise NotebookError(f"{path}: cell {index} lacks a cell_type or a text source")
        cell["source"] = source(cell)
        cell.setdefault("metadata", {})
    nb.setdefault("metadata", {})
    return nb


def source(cell):
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def language(path):
    """'zh' for a notebook of the Chinese edition (notebooks/zh/), else 'en'."""
    return "zh" if Path(path).resolve().parent.name == "zh" else "en"


def roles(cell):
    """The set of the cell's roles."""
    return {t for t in cell.get("metadata", {}).get("tags", []) if t in ROLES}


def has(cell, role):
    assert role in ROLES, f"unknown role {role!r}"
    return role in cell.get("metadata", {}).get("tags", [])


def slide_type(cell):
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")


def headings(cell):
    """[(level, title)] of a markdown cell's headings (none in its code blocks)."""
    if cell["cell_type"] != "markdown":
        return []
    return [(len(h), t) for h, t in HEADING.findall(FENCE.sub("", source(cell)))]


def title(cell):
    """The cell's first heading's text, or None."""
    found = headings(cell)
    return found[0][1] if found else None


def stated_minutes(nb):
    """The core path's minutes the notebook states (metadata.minitf.minutes), or None."""
    return nb.get("metadata", {}).get("minitf", {}).get("minutes")


def exercise_minutes(cell):
    """An exercise's own minutes (metadata.minitf.minutes of its exercise cell), or None."""
    return cell.get("metadata", {}).get("minitf", {}).get("minutes")


def is_lecture(nb):
    """Whether the notebook's lecture is authored (metadata.minitf.lecture)."""
    return nb.get("metadata", {}).get("minitf", {}).get("lecture") is True


def slide_title(cell):
    """The title of the slide this cell starts (metadata.minitf.title), or None."""
    return cell.get("metadata", {}).get("minitf", {}).get("title")


def notes_minutes(cell):
    """The class minutes a slide takes (metadata.minitf.minutes of its notes cell), or None."""
    return cell.get("metadata", {}).get("minitf", {}).get("minutes")


def starts_slide(cell):
    return slide_type(cell) in ("slide", "subslide")


@dataclass
class Slide:
    """One slide of an authored lecture: the indices of its cells in the notebook."""
    start: int
    cells: list
    notes: list
    section: str                    # the '## ' heading it falls under ("" before the first)

    def minutes(self, nb):
        return sum(notes_minutes(nb["cells"][i]) or 0 for i in self.notes)


def lecture(nb):
    """[Slide] of the notebook's deck: every cell shown on a slide (no notebook-only or skip
    cell), a new slide at each cell of slide type slide or subslide; notes cells belong to
    the slide they follow."""
    slides, section = [], ""
    for i, cell in enumerate(nb["cells"]):
        if has(cell, "notebook-only") or slide_type(cell) == "skip":
            continue
        level2 = [t for level, t in headings(cell) if level == 2]
        if level2 and not has(cell, "notes"):
            section = level2[0]
        if starts_slide(cell) or not slides:
            slides.append(Slide(i, [], [], section))
        (slides[-1].notes if has(cell, "notes") else slides[-1].cells).append(i)
    return slides


def is_optional(cell):
    return has(cell, "optional")


def is_notes(cell):
    return has(cell, "notes")


@dataclass
class Exercise:
    """One exercise: the indices of its cells in the notebook."""
    index: int                      # the `exercise` cell
    title: str                      # its (last) heading
    stubs: list = field(default_factory=list)
    checker: int = None
    solution: int = None
    optional: bool = False

    def cells(self):
        return [self.index, *self.stubs, self.checker, self.solution]


def exercises(nb):
    """[Exercise] in notebook order: each `exercise` cell with the stub, checker and solution
    cells that follow it (before the next exercise)."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        if has(cell, "exercise"):
            names = headings(cell)  # the last heading names it (a cell may open a part first)
            found.append(Exercise(i, names[-1][1] if names else "", optional=is_optional(cell)))
        elif found:
            if has(cell, "stub"):
                found[-1].stubs.append(i)
            if has(cell, "checker") and found[-1].checker is None:
                found[-1].checker = i
            if has(cell, "solution") and found[-1].solution is None:
                found[-1].solution = i
    return found


def checker_call(cell):
    """The checker call of a `checker` cell as written (`check_softmax(softmax_mine)`)."""
    for node in ast.parse(source(cell)).body:
        if isinstance(node, ast.Expr) and _is_check_call(node.value):
            return ast.unparse(node.value)
    return None


def _is_check_call(node):
    return (isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
            and (node.func.id if isinstance(node.func, ast.Name)
                 else node.func.attr).startswith("check_"))


def defined_functions(cell):
    """Names of the functions a code cell defines (a stub's: what the learner writes)."""
    try:
        tree = ast.parse(source(cell))
    except SyntaxError:
        return []
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]


def solution_code(cell):
    """The Python code blocks of a `solution` cell."""
    return PYTHON_FENCE.findall(source(cell))


def core_cells(nb):
    """The cells a learner reads on the core path: no optional part, no speaker notes, no
    lecture-only cell."""
    return [c for c in nb["cells"]
            if not (roles(c) & {"optional", "notes", "lecture-only"})]


def sections(nb):
    """[(title, [cells], optional)] for each second-level ('## ') heading of the notebook, the
    cells before the first left out. A section is optional when its heading cell is."""
    parts = []
    for cell in nb["cells"]:
        level2 = [t for level, t in headings(cell) if level == 2]
        if level2:
            parts.append((level2[0], [], is_optional(cell)))
        if parts:
            parts[-1][1].append(cell)
    return parts


# -- writing ---------------------------------------------------------------------------------
def set_roles(cell, new_roles):
    """Give the cell exactly `new_roles` (other tools' tags are kept), and what they imply:
    notes are slide type 'notes'; notes and lecture-only cells are folded."""
    unknown = set(new_roles) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown role(s) {sorted(unknown)}; the roles are {', '.join(ROLES)}")
    meta = cell.setdefault("metadata", {})
    others = [t for t in meta.get("tags", []) if t not in ROLES]
    tags = others + [r for r in ROLES if r in new_roles]
    if tags:
        meta["tags"] = tags
    else:
        meta.pop("tags", None)
    if "notes" in new_roles:
        meta.setdefault("slideshow", {})["slide_type"] = "notes"
    folded = bool(set(new_roles) & FOLDED)
    keys = ["source_hidden"] + (["outputs_hidden"] if cell["cell_type"] == "code" else [])
    for key in keys:
        if folded:
            meta.setdefault("jupyter", {})[key] = True
        elif meta.get("jupyter", {}).get(key):
            del meta["jupyter"][key]
    if "jupyter" in meta and not meta["jupyter"]:
        del meta["jupyter"]


def dumps(nb):
    """The notebook as Jupyter writes it (one-space indent, sorted keys, sources as lines)."""
    out = json.loads(json.dumps(nb))
    for cell in out["cells"]:
        cell["source"] = source(cell).splitlines(keepends=True)
    return json.dumps(out, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def save(nb, path):
    Path(path).write_text(dumps(nb), encoding="utf-8")


# -- validating ------------------------------------------------------------------------------
def validate(nb, path):
    """One line per problem with the notebook's format: '<file> cell <i> (<id>): <what>'."""
    name = Path(path).name if Path(path).parent.name != "zh" else f"zh/{Path(path).name}"
    lang = language(path)
    problems = []

    def bad(i, what):
        cell = nb["cells"][i]
        problems.append(f"{name} cell {i} ({cell.get('id', '?')}): {what}")

    for i, cell in enumerate(nb["cells"]):
        meta = cell.get("metadata", {})
        tags = meta.get("tags", [])
        mine = roles(cell)
        kind, text = cell["cell_type"], source(cell)
        for tag in tags:
            if tag not in ROLES and tag not in OTHER_TAGS:
                bad(i, f"unknown tag {tag!r} (roles: {', '.join(ROLES)})")
        if slide_type(cell) not in SLIDE_TYPES:
            bad(i, f"slide type {slide_type(cell)!r} is not one of {', '.join(SLIDE_TYPES)}")
        if "slideshow" not in meta:
            bad(i, "no slide type (metadata.slideshow.slide_type)")
        if ("notes" in mine) != (slide_type(cell) == "notes"):
            bad(i, "a notes cell has slide type 'notes', and only a notes cell has it")
        folded = bool(meta.get("jupyter", {}).get("source_hidden"))
        if kind == "code" and "lecture-only" in mine and not meta.get("jupyter", {}).get(
                "outputs_hidden"):
            bad(i, "a lecture-only code cell folds its output too (jupyter.outputs_hidden)")
        if folded != bool(mine & FOLDED):
            bad(i, "notes and lecture-only cells are folded (jupyter.source_hidden), "
                   "and no other cell is" if not folded else
                   "folded (jupyter.source_hidden) but neither notes nor lecture-only")
        for role, want in (("exercise", "markdown"), ("solution", "markdown"),
                           ("prediction", "markdown"), ("notes", "markdown"),
                           ("stub", "code"), ("checker", "code"),
                           ("show-code", "code")):
            if role in mine and kind != want:
                bad(i, f"a {role} cell is a {want} cell, this is {kind}")
        if "exercise" in mine and not _whole_minutes(exercise_minutes(cell)):
            bad(i, "an exercise cell states the learner's minutes for it in "
                   f"metadata.minitf.minutes (a positive whole number), not "
                   f"{exercise_minutes(cell)!r}")
        if kind == "markdown":
            if "exercise" in mine and not headings(cell):
                bad(i, "an exercise cell starts with a heading that names the exercise")
            if "solution" in mine and ("<details>" not in text or not solution_code(cell)):
                bad(i, "a solution cell folds its code in <details>, in a ```python block")
            if "notes" in mine and not text.startswith(NOTES_LABEL[lang]):
                bad(i, f"a notes cell begins with {NOTES_LABEL[lang]!r}")
        elif kind == "code":
            if "stub" in mine and STUB_LINE not in text:
                bad(i, f"a stub cell contains `{STUB_LINE}` until the learner writes it")
            if "checker" in mine and checker_call(cell) is None:
                bad(i, "a checker cell calls a check_… function on a line of its own")
        if "answer" in mine and not _after_prediction(nb["cells"], i):
            bad(i, "an answer cell follows a prediction (or another answer)")
        if "prediction" in mine and "<details>" not in text and not _answered(nb["cells"], i):
            bad(i, "a prediction has its answer: folded in <details> in the cell, or in the "
                   "answer cells after it")
    for ex in exercises(nb):
        where = ex.index
        if not ex.stubs:
            bad(where, "the exercise has no stub cell after it")
        if ex.checker is None:
            bad(where, "the exercise has no checker cell after it")
        if ex.solution is None:
            bad(where, "the exercise has no solution cell after it")
    first_exercise = next((e.index for e in exercises(nb)), len(nb["cells"]))
    for i, cell in enumerate(nb["cells"][:first_exercise]):
        for role in sorted({"stub", "checker", "solution"} & roles(cell)):
            bad(i, f"a {role} cell comes after its exercise cell")
    if is_lecture(nb):
        problems += [f"{name} cell {i} ({nb['cells'][i].get('id', '?')}): {what}"
                     for i, what in _lecture_problems(nb)]
    minutes = stated_minutes(nb)
    if not _whole_minutes(minutes):
        problems.append(f"{name}: metadata.minitf.minutes (the core path's minutes) is "
                        f"{minutes!r}, expected a positive whole number")
    elif nb["cells"] and not re.search(rf"(?<!\d){minutes}(?!\d)", source(nb["cells"][0])):
        bad(0, f"the first cell does not state the core path's {minutes} minutes "
               "(metadata.minitf.minutes)")
    return problems


def _lecture_problems(nb):
    """(cell index, problem) for an authored lecture."""
    found, titles = [], {}
    for k, slide in enumerate(lecture(nb)):
        start = nb["cells"][slide.start]
        title = slide_title(start)
        if k and not title:
            found.append((slide.start, "this cell starts a slide: give it a title that states "
                                       "the slide's point (metadata.minitf.title)"))
        elif title and (len(title) > TITLE_CHARACTERS or "\n" in title):
            found.append((slide.start, f"a slide's title is one line of at most "
                                       f"{TITLE_CHARACTERS} characters"))
        elif title in titles:
            found.append((slide.start, f"two slides are titled {title!r} (cell "
                                       f"{titles[title]} too)"))
        titles.setdefault(title, slide.start)
        if len(slide.notes) != 1:
            found.append((slide.start, f"a slide has one notes cell of its own, this one has "
                                       f"{len(slide.notes)}"))
        for i in slide.notes:
            m = notes_minutes(nb["cells"][i])
            if not (isinstance(m, (int, float)) and not isinstance(m, bool) and m > 0):
                found.append((i, "a slide's notes state its class minutes "
                                 f"(metadata.minitf.minutes, a positive number), not {m!r}"))
        for i in slide.cells:
            if {"stub", "checker"} & roles(nb["cells"][i]) and i == slide.start:
                found.append((i, "a stub or checker cell does not start a slide (the slide "
                                 "shows the exercise's task card instead)"))
    return found


def _whole_minutes(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _after_prediction(cells, i):
    for cell in reversed(cells[:i]):
        if has(cell, "notes"):
            continue
        return has(cell, "prediction") or has(cell, "answer")
    return False


def _answered(cells, i):
    after = [c for c in cells[i + 1:] if not has(c, "notes")]
    return bool(after) and has(after[0], "answer")


def notebooks():
    """Every notebook of the course, English then Chinese."""
    return sorted(NOTEBOOK_DIR.glob("*.ipynb")) + sorted(ZH_DIR.glob("*.ipynb"))


# -- command line ----------------------------------------------------------------------------
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks (with --tag: one, then CELL=ROLE…)")
    parser.add_argument("--list", action="store_true", help="print every cell and its roles")
    parser.add_argument("--tag", action="store_true", help="set roles: NOTEBOOK CELL=ROLE[,ROLE]…")
    args = parser.parse_args(argv)
    if args.tag:
        if len(args.notebooks) < 2:
            parser.error("--tag takes a notebook, then CELL=ROLE[,ROLE] …")
        path, changes = Path(args.notebooks[0]), args.notebooks[1:]
        nb = load(path)
        by_id = {c.get("id"): c for c in nb["cells"]}
        for change in changes:
            key, _, value = change.partition("=")
            cell = by_id.get(key) or (nb["cells"][int(key)] if key.isdigit()
                                      and int(key) < len(nb["cells"]) else None)
            if cell is None or not value:
                print(f"course_format: {path}: {change!r}: no such cell, or no role given",
                      file=sys.stderr)
                return 2
            try:
                set_roles(cell, [] if value == "-" else value.split(","))
            except ValueError as err:
                print(f"course_format: {path}: {err}", file=sys.stderr)
                return 2
        save(nb, path)
        return 0
    if args.list:
        for path in map(Path, args.notebooks):
            for i, cell in enumerate(load(path)["cells"]):
                first = source(cell).strip().split("\n")[0][:56]
                print(f"{i:3d} {cell.get('id', ''):>10s} {cell['cell_type'][:2]} "
                      f"{slide_type(cell):9s} {','.join(sorted(roles(cell))) or '-':22s} {first}")
        return 0
    problems = []
    for path in map(Path, args.notebooks) if args.notebooks else notebooks():
        try:
            problems += validate(load(path), path)
        except NotebookError as e:
            problems.append(str(e))
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

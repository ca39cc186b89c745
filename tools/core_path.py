"""How long each notebook's core path takes a learner working alone, by one stated rule.

Usage: python tools/core_path.py [NOTEBOOK ...]    (default: notebooks/*.ipynb)

The core path is every cell outside an optional part. An optional part starts at a heading
that begins with "Optional" ("## Optional: …", "### Optional — …") and runs to the next
heading of the same or a higher level that does not. Speaker notes (cells whose slide type is
"notes") are the teacher's, and a folded "Solution" is read only by a learner who is stuck;
neither counts. What is left is timed as

    minutes = words / 120  +  0.75 × code cells  +  6 × exercises

120 words a minute is a careful reading of technical prose with formulas; three quarters of a
minute per code cell is reading it, running it and looking at what it printed or drew; an
exercise ("### Exercise …" heading) is six minutes of the learner's own code on top of its
cells. Each notebook's first cell states its core path as "core path … about N minutes", and
tests/notebooks/test_core_path.py keeps N within the budget and the estimate within N.
"""

import json
import math
import re
import sys
from pathlib import Path

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
BUDGET = 45  # minutes: one sitting
WORDS_PER_MINUTE = 120
MINUTES_PER_CODE_CELL = 0.75
MINUTES_PER_EXERCISE = 6

HEADING = re.compile(r"^(#{1,6})\s+(.*)$", re.MULTILINE)
# A folded solution runs from its opening to the next </details>; the two are found apart
# (a lazy .*? between them backtracks quadratically over many unclosed openings).
SOLUTION_OPENS = re.compile(r"<details>\s*<summary>\s*Solution", re.IGNORECASE)
CORE_PATH = re.compile(r"core path\b", re.IGNORECASE)
ABOUT_MINUTES = re.compile(r"\babout (\d+) minutes", re.IGNORECASE)


class NotebookError(ValueError):
    """A file that is not a notebook this tool can read; the message names it."""


def read_cells(path):
    """The cells of the notebook at `path`, each a dict with a cell_type and a text source;
    a NotebookError naming the file otherwise (a merge conflict, a folder, a binary file)."""
    try:
        cells = json.loads(Path(path).read_text(encoding="utf-8-sig"))["cells"]
    except OSError as e:
        raise NotebookError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise NotebookError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise NotebookError(f"{path}: not JSON ({e.msg} at line {e.lineno}; a merge "
                            "conflict?)") from None
    except (KeyError, TypeError):
        raise NotebookError(f"{path}: not a notebook (no list of 'cells')") from None
    if not isinstance(cells, list):
        raise NotebookError(f"{path}: not a notebook ('cells' is not a list)")
    for index, cell in enumerate(cells):
        source = cell.get("source") if isinstance(cell, dict) else None
        if not (isinstance(cell, dict) and isinstance(cell.get("cell_type"), str)
                and (isinstance(source, str) or isinstance(source, list)
                     and all(isinstance(line, str) for line in source))):
            raise NotebookError(f"{path}: cell {index} lacks a cell_type or a text source")
    return cells


def stated_minutes(text):
    """N of the first "core path … about N minutes" in `text`, or None."""
    core = CORE_PATH.search(text)
    about = core and ABOUT_MINUTES.search(text, core.end())
    return int(about.group(1)) if about else None


def _without_solutions(text):
    pieces, start = [], 0
    for opening in SOLUTION_OPENS.finditer(text):
        if opening.start() < start:
            continue  # inside a solution already left out
        end = text.find("</details>", opening.end())
        if end < 0:
            break  # an unclosed solution is read as it stands
        pieces.append(text[start:opening.start()])
        start = end + len("</details>")
    return " ".join(pieces + [text[start:]])
WORD = re.compile(r"[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*|[\u3400-\u9fff]")


def _source(cell):
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def is_speaker_notes(cell):
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type") == "notes"


def core_cells(cells):
    """The cells outside optional parts, with speaker notes left out."""
    optional_level = None  # the level of the optional heading we are under, if any
    kept = []
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for hashes, title in HEADING.findall(_source(cell)):
                level = len(hashes)
                if title.lstrip("*_ ").lower().startswith("optional"):
                    if optional_level is None or level < optional_level:
                        optional_level = level
                elif optional_level is not None and level <= optional_level:
                    optional_level = None
        if optional_level is None and not is_speaker_notes(cell):
            kept.append(cell)
    return kept


def count_words(text):
    """Words a learner reads: a CJK character counts as one word (they stand beside English)."""
    text = _without_solutions(text)
    text = re.sub(r"<[^>]+>", " ", text)  # HTML tags (<details>, <summary>) are not read
    return len(WORD.findall(text))


def measure(path):
    """{'words', 'code_cells', 'exercises', 'minutes', 'stated'} for one notebook's core path."""
    cells = read_cells(path)
    core = core_cells(cells)
    words = sum(count_words(_source(c)) for c in core if c["cell_type"] == "markdown")
    code_cells = sum(1 for c in core if c["cell_type"] == "code")
    exercises = sum(
        1
        for c in core
        if c["cell_type"] == "markdown"
        for _, title in HEADING.findall(_source(c))
        if title.lower().startswith("exercise")
    )
    minutes = (words / WORDS_PER_MINUTE + MINUTES_PER_CODE_CELL * code_cells
               + MINUTES_PER_EXERCISE * exercises)
    return {
        "words": words,
        "code_cells": code_cells,
        "exercises": exercises,
        "minutes": math.ceil(minutes),
        "stated": stated_minutes(_source(cells[0])) if cells else None,
    }


def _minutes(cells):
    words = sum(count_words(_source(c)) for c in cells if c["cell_type"] == "markdown")
    code_cells = sum(1 for c in cells if c["cell_type"] == "code")
    exercises = sum(1 for c in cells if c["cell_type"] == "markdown"
                    for _, title in HEADING.findall(_source(c))
                    if title.lower().startswith("exercise"))
    return (words / WORDS_PER_MINUTE + MINUTES_PER_CODE_CELL * code_cells
            + MINUTES_PER_EXERCISE * exercises)


def _parts(cells):
    """[(title, cells)] for each '## ' section, the cells before the first one left out."""
    parts = []
    for cell in cells:
        found = [t for h, t in HEADING.findall(_source(cell))
                 if len(h) == 2] if cell["cell_type"] == "markdown" else []
        if found:
            parts.append((found[0], []))
        if parts:
            parts[-1][1].append(cell)
    return parts


def sections(path):
    """[{'title', 'minutes', 'optional'}] for each '## ' section of a notebook: the minutes of
    its core cells by the rule (of all its cells, for an optional section); for an agenda."""
    cells = read_cells(path)
    core_ids = {id(c) for c in core_cells(cells)}
    out = []
    for title, part in _parts(cells):
        optional = title.lstrip("*_ ").lower().startswith("optional")
        counted = [c for c in part if not is_speaker_notes(c)
                   and (optional or id(c) in core_ids)]
        out.append({"title": title, "minutes": max(1, round(_minutes(counted))),
                    "optional": optional})
    return out


def section_titles(path):
    """The '## ' headings of a notebook, in order (those of a translated notebook, say)."""
    cells = read_cells(path)
    return [title for title, _ in _parts(cells)]


def main(args):
    paths = [Path(a) for a in args] or sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    print(f"minutes = words/{WORDS_PER_MINUTE} + {MINUTES_PER_CODE_CELL} × code cells"
          f" + {MINUTES_PER_EXERCISE} × exercises; budget {BUDGET}")
    print(f"{'notebook':34} {'words':>6} {'code':>5} {'exerc':>5} {'min':>4} {'stated':>6}")
    failed = 0
    for path in paths:
        try:
            m = measure(path)
        except NotebookError as e:  # one line per file it cannot read; the others still count
            print(f"core_path: {e}", file=sys.stderr)
            failed += 1
            continue
        stated = "—" if m["stated"] is None else m["stated"]
        print(f"{path.name:34} {m['words']:6} {m['code_cells']:5} {m['exercises']:5}"
              f" {m['minutes']:4} {stated:>6}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""How long each notebook's core path takes a learner working alone, by one stated rule.

Usage: python tools/core_path.py [NOTEBOOK ...]    (default: notebooks/*.ipynb)

The core path is every cell that is not optional, speaker notes or lecture-only (the cells'
roles, tools/course_format.py); a solution is read only by a learner who is stuck, so it does
not count either. What is left is timed as

    minutes = words / 120  +  0.75 × code cells  +  6 × exercises

120 words a minute is a careful reading of technical prose with formulas; three quarters of a
minute per code cell is reading it, running it and looking at what it printed or drew; an
exercise is six minutes of the learner's own code on top of its cells. Each notebook states its
core path's minutes in metadata.minitf.minutes and on its first cell, and
tests/notebooks/test_core_path.py keeps them within the budget and the estimate within them.
"""

import math
import re
import sys
from pathlib import Path

import course_format as fmt

NOTEBOOK_DIR = fmt.NOTEBOOK_DIR
BUDGET = 45  # minutes: one sitting
WORDS_PER_MINUTE = 120
MINUTES_PER_CODE_CELL = 0.75
MINUTES_PER_EXERCISE = 6

WORD = re.compile(r"[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*|[\u3400-\u9fff]")


def count_words(text):
    """Words a learner reads: a CJK character counts as one word (they stand beside English)."""
    text = re.sub(r"<[^>]+>", " ", text)  # HTML tags (<details>, <summary>) are not read
    return len(WORD.findall(text))


def minutes(cells):
    """The rule's minutes for these cells (solutions left out), not rounded."""
    read = [c for c in cells if not fmt.has(c, "solution")]
    words = sum(count_words(fmt.source(c)) for c in read if c["cell_type"] == "markdown")
    code_cells = sum(1 for c in read if c["cell_type"] == "code")
    exercises = sum(1 for c in read if fmt.has(c, "exercise"))
    return (words / WORDS_PER_MINUTE + MINUTES_PER_CODE_CELL * code_cells
            + MINUTES_PER_EXERCISE * exercises), words, code_cells, exercises


def measure(path):
    """{'words', 'code_cells', 'exercises', 'minutes', 'stated'} for one notebook's core path."""
    nb = fmt.load(path)
    total, words, code_cells, exercises = minutes(fmt.core_cells(nb))
    return {
        "words": words,
        "code_cells": code_cells,
        "exercises": exercises,
        "minutes": math.ceil(total),
        "stated": fmt.stated_minutes(nb),
    }


def sections(path):
    """[{'title', 'minutes', 'optional'}] for each '## ' section of a notebook: the minutes of
    its core cells by the rule (of all its cells but notes, for an optional section); for an
    agenda."""
    nb = fmt.load(path)
    core = {id(c) for c in fmt.core_cells(nb)}
    out = []
    for title, part, optional in fmt.sections(nb):
        counted = [c for c in part if id(c) in core
                   or (optional and not fmt.roles(c) & {"notes", "lecture-only"})]
        out.append({"title": title, "minutes": max(1, round(minutes(counted)[0])),
                    "optional": optional})
    return out


def section_titles(path):
    """The '## ' headings of a notebook, in order (those of a translated notebook, say)."""
    return [title for title, _, _ in fmt.sections(fmt.load(path))]


def main(args):
    paths = [Path(a) for a in args] or sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    print(f"minutes = words/{WORDS_PER_MINUTE} + {MINUTES_PER_CODE_CELL} × code cells"
          f" + {MINUTES_PER_EXERCISE} × exercises; budget {BUDGET}")
    print(f"{'notebook':34} {'words':>6} {'code':>5} {'exerc':>5} {'min':>4} {'stated':>6}")
    for path in paths:
        m = measure(path)
        stated = "—" if m["stated"] is None else m["stated"]
        print(f"{path.name:34} {m['words']:6} {m['code_cells']:5} {m['exercises']:5}"
              f" {m['minutes']:4} {stated:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

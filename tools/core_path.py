"""How long each notebook's core path takes a learner working alone, by a rule calibrated on
newcomers' measured times.

Usage: python tools/core_path.py [NOTEBOOK ...]    (default: notebooks/*.ipynb)

The core path is every cell that is not optional, speaker notes or lecture-only (the cells'
roles, tools/course_format.py); a solution is read only by a learner who is stuck, so it does
not count either. What is left is timed as

    minutes = words × READING + code cells × CODE_CELL + predictions × PREDICTION
              + each exercise's own minutes (metadata.minitf.minutes of its exercise cell)

An exercise's minutes are its author's estimate of the learner's own work (a five-line function
5, a bug hunt in three parts 10, the multi-head attention by blocks 15). READING, CODE_CELL and
PREDICTION are not chosen: they are the least-squares fit to CALIBRATION, two newcomers' times
for every notebook, measured cell by cell (the reviews of turn 4), against what the rule counted
in the notebooks they read. `python tools/core_path.py --calibration` prints the fit and how far
it is from each measured time. Each notebook states its core path's minutes (metadata.minitf.
minutes, and its first cell says them): at least the rule's, rounded up to five.
tests/notebooks/test_core_path.py checks both, and that the constants are the fit.
"""

import math
import re
import sys
from pathlib import Path

import course_format as fmt
import numpy as np

NOTEBOOK_DIR = fmt.NOTEBOOK_DIR
BUDGET = 75  # minutes: one long sitting; a core path that needs more is split or trimmed
ROUND_TO = 5  # stated minutes are rounded up to this

# (notebook, words, code cells, predictions, its exercises' minutes) as the rule counted the core
# paths the newcomers read, and the minutes they measured (low, high).
CALIBRATION = [
    ("00", 1865, 16, 5, 11, 40, 50), ("01", 1832, 19, 6, 18, 50, 60),
    ("02", 1829, 15, 5, 24, 55, 65), ("03", 2013, 20, 2, 25, 60, 75),
    ("04", 1857, 19, 6, 8, 45, 55), ("05", 2044, 21, 7, 18, 60, 70),
    ("06", 2017, 21, 7, 18, 60, 75), ("07", 1878, 15, 5, 28, 65, 80),
    ("08", 2130, 19, 6, 18, 65, 80), ("09", 2518, 22, 5, 6, 55, 65),
    ("10", 2208, 22, 6, 6, 60, 75),
]


def fit(calibration=CALIBRATION):
    """(minutes per word, per code cell, per prediction): least squares on the measured
    midpoints, the exercises' own minutes taken off first."""
    counts = np.array([row[1:4] for row in calibration], dtype=float)
    rest = np.array([(low + high) / 2 - ex for *_, ex, low, high in calibration])
    return tuple(round(float(c), 4) for c in np.linalg.lstsq(counts, rest, rcond=None)[0])


READING, CODE_CELL, PREDICTION = fit()

WORD = re.compile(r"[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*|[\u3400-\u9fff]")


def count_words(text):
    """Words a learner reads: a CJK character counts as one word (they stand beside English)."""
    text = re.sub(r"<[^>]+>", " ", text)  # HTML tags (<details>, <summary>) are not read
    return len(WORD.findall(text))


def minutes(cells):
    """{'minutes' (not rounded), 'words', 'code_cells', 'predictions', 'exercises',
    'exercise_minutes'} of these cells by the rule; solutions left out."""
    read = [c for c in cells if not fmt.has(c, "solution")]
    words = sum(count_words(fmt.source(c)) for c in read if c["cell_type"] == "markdown")
    code_cells = sum(1 for c in read if c["cell_type"] == "code")
    predictions = sum(1 for c in read if fmt.has(c, "prediction"))
    exercises = [fmt.exercise_minutes(c) for c in read if fmt.has(c, "exercise")]
    total = (words * READING + code_cells * CODE_CELL + predictions * PREDICTION
             + sum(exercises))
    return {"minutes": total, "words": words, "code_cells": code_cells,
            "predictions": predictions, "exercises": len(exercises),
            "exercise_minutes": sum(exercises)}


def measure(path):
    """minutes() of one notebook's core path, 'minutes' rounded up, with 'stated' (the
    notebook's metadata.minitf.minutes) and 'states' (what it should state)."""
    nb = fmt.load(path)
    m = minutes(fmt.core_cells(nb))
    m["minutes"] = math.ceil(m["minutes"])
    m["stated"] = fmt.stated_minutes(nb)
    m["states"] = ROUND_TO * math.ceil(m["minutes"] / ROUND_TO)
    return m


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
        out.append({"title": title, "minutes": max(1, round(minutes(counted)["minutes"])),
                    "optional": optional})
    return out


def section_titles(path):
    """The '## ' headings of a notebook, in order (those of a translated notebook, say)."""
    return [title for title, _, _ in fmt.sections(fmt.load(path))]


def calibration_report():
    lines = [f"fit to {len(CALIBRATION)} measured core paths: {60 * READING:.1f} s a word "
             f"({1 / READING:.0f} words a minute), {CODE_CELL:.2f} min a code cell, "
             f"{PREDICTION:.2f} min a prediction, plus each exercise's own minutes",
             f"{'notebook':9} {'rule':>5} {'measured':>9}"]
    for name, words, code, preds, ex, low, high in CALIBRATION:
        rule = words * READING + code * CODE_CELL + preds * PREDICTION + ex
        lines.append(f"{name:9} {rule:5.0f} {f'{low}–{high}':>9}")
    return "\n".join(lines)


def main(args):
    if args[:1] == ["--calibration"]:
        print(calibration_report())
        return 0
    paths = [Path(a) for a in args] or sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    print(f"minutes = words × {READING} + code cells × {CODE_CELL} + predictions × {PREDICTION}"
          f" + exercises' minutes (--calibration shows the fit); budget {BUDGET}")
    print(f"{'notebook':34} {'words':>6} {'code':>5} {'pred':>5} {'exerc':>9} {'min':>4}"
          f" {'states':>6} {'stated':>6}")
    failed = 0
    for path in paths:
        try:
            m = measure(path)
        except fmt.NotebookError as e:  # one line per file it cannot read; the others count
            print(f"core_path: {e}", file=sys.stderr)
            failed += 1
            continue
        stated = "—" if m["stated"] is None else m["stated"]
        exercises = f"{m['exercises']}: {m['exercise_minutes']}"
        print(f"{path.name:34} {m['words']:6} {m['code_cells']:5} {m['predictions']:5}"
              f" {exercises:>9} {m['minutes']:4} {m['states']:6} {stated:>6}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

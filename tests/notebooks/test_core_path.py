"""Every notebook's core path fits one sitting, by the rule of tools/core_path.py, and the
notebook states how long it takes (metadata.minitf.minutes, and its first cell)."""

import json
import math
from pathlib import Path

import core_path
import pytest

ROOT = Path(__file__).resolve().parents[2]

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_notebook_states_its_core_path_by_the_calibrated_rule(path):
    m = core_path.measure(path)
    assert m["stated"] is not None, (
        f"{path.name}: metadata.minitf.minutes should state the core path's minutes")
    assert m["minutes"] <= m["stated"], (
        f"{path.name}: the core path takes {m['minutes']} minutes by the rule "
        f"({m['words']} words, {m['code_cells']} code cells, {m['predictions']} predictions, "
        f"exercises {m['exercise_minutes']} min), more than the {m['stated']} it states; "
        f"state {m['states']}, or mark a part optional")
    assert m["stated"] <= core_path.BUDGET, (
        f"{path.name}: states {m['stated']} minutes, over the {core_path.BUDGET}-minute budget: "
        "mark parts optional")
    assert m["stated"] - m["minutes"] < core_path.ROUND_TO, (
        f"{path.name}: states {m['stated']} minutes where the rule gives {m['minutes']}: "
        f"state {m['states']}")


def test_the_constants_are_the_fit_to_the_measured_times():
    assert (core_path.READING, core_path.CODE_CELL, core_path.PREDICTION) == core_path.fit()
    report = core_path.calibration_report()
    assert "words a minute" in report and report.count("\n") == len(core_path.CALIBRATION) + 1
    # the fit explains the measurements: off by under 5 minutes on average
    off = [abs(words * core_path.READING + code * core_path.CODE_CELL
               + preds * core_path.PREDICTION + ex - (low + high) / 2)
           for _, words, code, preds, ex, low, high in core_path.CALIBRATION]
    assert sum(off) / len(off) < 5, off
    # and it is a fit: other measurements give other constants
    slower = [(n, w, c, p, e, lo + 10, hi + 10) for n, w, c, p, e, lo, hi in core_path.CALIBRATION]
    assert core_path.fit(slower) != core_path.fit()


def _notebook(tmp_path, cells, minutes=None):
    path = tmp_path / "nb.ipynb"
    meta = {"minitf": {"minutes": minutes}} if minutes else {}
    path.write_text(json.dumps({"cells": cells, "metadata": meta}), encoding="utf-8")
    return path


def _md(text, *roles):
    return {"cell_type": "markdown", "source": text, "metadata": {"tags": list(roles)}}


def _code(*roles):
    return {"cell_type": "code", "source": "x = 1", "metadata": {"tags": list(roles)}}


def test_the_rule_counts_the_core_and_leaves_out_optional_parts_notes_and_solutions(tmp_path):
    words = " ".join(["word"] * 120)
    exercise = _md("### Exercise 1 — do it", "exercise")                     # 4 words
    exercise["metadata"]["minitf"] = {"minutes": 7}
    reworded = _md("### 习题 — a heading's words decide nothing", "exercise")  # 7 words
    reworded["metadata"]["minitf"] = {"minutes": 5}
    path = _notebook(tmp_path, [
        _md("# Title\n\nThe core path takes about 20 minutes. " + words),   # 8 + 120 words
        _code(),
        exercise,
        _code("stub", "checker"),
        _md("<details><summary>Solution</summary>\n\n" + words + "\n</details>", "solution"),
        _md("**Speaker notes.** " + words, "notes"),
        _md("## 2. More\n\n注意力"),                                         # 2 + 3 words
        _md("What now? <details><summary>Answer</summary>x</details>", "prediction"),  # 4 words
        _md("### Deeper\n\n" + words, "optional"),
        _code("optional"),
        reworded,
        _code("stub"),
        _md("On the board only. " + words, "lecture-only"),
        _md("### Optional in its words only"),                              # 5 words
        _code(),
    ], minutes=20)
    m = core_path.measure(path)
    assert m["words"] == 128 + 4 + 5 + 4 + 7 + 5
    assert (m["code_cells"], m["predictions"], m["exercises"]) == (4, 1, 2)
    assert m["exercise_minutes"] == 12
    assert m["stated"] == 20
    rule = 153 * core_path.READING + 4 * core_path.CODE_CELL + core_path.PREDICTION + 12
    assert m["minutes"] == math.ceil(rule)
    assert m["states"] == 5 * math.ceil(math.ceil(rule) / 5)


def test_a_notebook_that_states_no_time_is_reported(tmp_path):
    m = core_path.measure(_notebook(tmp_path, [_md("# Title\n\nNo time here."), _code()]))
    assert m["stated"] is None

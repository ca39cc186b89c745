"""Every notebook's core path fits one sitting, by the rule of tools/core_path.py, and the
notebook states how long it takes (metadata.minitf.minutes, and its first cell)."""

import json
from pathlib import Path

import core_path
import pytest

ROOT = Path(__file__).resolve().parents[2]

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_core_path_fits_its_stated_time_and_the_budget(path):
    m = core_path.measure(path)
    assert m["stated"] is not None, (
        f"{path.name}: metadata.minitf.minutes should state the core path's minutes")
    assert m["stated"] <= core_path.BUDGET, (
        f"{path.name}: states {m['stated']} minutes, over the {core_path.BUDGET}-minute budget")
    assert m["minutes"] <= m["stated"], (
        f"{path.name}: the core path takes {m['minutes']} minutes by the rule "
        f"({m['words']} words, {m['code_cells']} code cells, {m['exercises']} exercises), "
        f"more than the {m['stated']} its first cell states; mark a part optional or say less")


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
    path = _notebook(tmp_path, [
        _md("# Title\n\nThe core path takes about 20 minutes. " + words),   # 8 + 120 words
        _code(),
        _md("### Exercise 1 — do it", "exercise"),                          # 4 words, 1 exercise
        _code("stub", "checker"),
        _md("<details><summary>Solution</summary>\n\n" + words + "\n</details>", "solution"),
        _md("**Speaker notes.** " + words, "notes"),
        _md("## 2. More\n\n注意力"),                                         # 2 + 3 words
        _md("### Deeper\n\n" + words, "optional"),
        _code("optional"),
        _md("### 习题 — a heading's words decide nothing", "exercise"),       # 7 words, 1 exercise
        _code("stub"),
        _md("On the board only. " + words, "lecture-only"),
        _md("### Optional in its words only"),                              # 5 words
        _code(),
    ], minutes=20)
    m = core_path.measure(path)
    assert m["words"] == 128 + 4 + 5 + 7 + 5
    assert m["code_cells"] == 4
    assert m["exercises"] == 2
    assert m["stated"] == 20
    assert m["minutes"] == 17  # ceil(149/120 + 4 × 0.75 + 12) = ceil(16.24)


def test_a_notebook_that_states_no_time_is_reported(tmp_path):
    m = core_path.measure(_notebook(tmp_path, [_md("# Title\n\nNo time here."), _code()]))
    assert m["stated"] is None

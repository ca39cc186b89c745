"""Every notebook's core path fits one sitting, by the rule of tools/core_path.py, and its first
cell says how long it takes."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import core_path  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_core_path_fits_its_stated_time_and_the_budget(path):
    m = core_path.measure(path)
    assert m["stated"] is not None, (
        f"{path.name}: the first cell should state 'core path … about N minutes'")
    assert m["stated"] <= core_path.BUDGET, (
        f"{path.name}: states {m['stated']} minutes, over the {core_path.BUDGET}-minute budget")
    assert m["minutes"] <= m["stated"], (
        f"{path.name}: the core path takes {m['minutes']} minutes by the rule "
        f"({m['words']} words, {m['code_cells']} code cells, {m['exercises']} exercises), "
        f"more than the {m['stated']} its first cell states; mark a part optional or say less")


def _notebook(tmp_path, cells):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    return path


def _md(text, **slideshow):
    meta = {"slideshow": slideshow} if slideshow else {}
    return {"cell_type": "markdown", "source": text, "metadata": meta}


def _code(text="x = 1"):
    return {"cell_type": "code", "source": text, "metadata": {}}


def test_the_rule_counts_the_core_and_leaves_out_optional_parts_notes_and_solutions(tmp_path):
    words = " ".join(["word"] * 120)
    path = _notebook(tmp_path, [
        _md("# Title\n\nThe core path takes about 20 minutes. " + words),   # 8 + 120 words
        _code(),
        _md("### Exercise 1 — do it"),                                      # 4 words, 1 exercise
        _code(),
        _md("<details><summary>Solution</summary>\n\n" + words + "\n</details>"),
        _md("**Speaker notes.** " + words, slide_type="notes"),
        _md("## 2. More\n\n注意力"),                                         # 2 + 3 words
        _md("### Optional: deeper\n\n" + words),
        _code(),
        _md("#### still optional"),
        _md("### Back in the core"),                                        # 4 words
        _code(),
        _md("## Optional — the end\n\n" + words),
        _code(),
        _md("### Exercise 2 (optional part)"),
    ])
    m = core_path.measure(path)
    assert m["words"] == 128 + 4 + 5 + 4
    assert m["code_cells"] == 3
    assert m["exercises"] == 1
    assert m["stated"] == 20
    assert m["minutes"] == 10  # ceil(141/120 + 3 × 0.75 + 6) = ceil(9.42)


def test_a_notebook_that_states_no_time_is_reported(tmp_path):
    m = core_path.measure(_notebook(tmp_path, [_md("# Title\n\nNo time here."), _code()]))
    assert m["stated"] is None

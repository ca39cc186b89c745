"""Issue #36 (P21): the contributor tools name the file they cannot read, in one line, and
finish in linear time on pathological text."""

import json
import subprocess
import sys
import time
from pathlib import Path

import build_zh
import core_path
import pytest

ROOT = Path(__file__).resolve().parents[2]


def notebook(cells, minutes=None):
    meta = {"minitf": {"minutes": minutes}} if minutes else {}
    return json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5})


def markdown(source, **extra):
    return {"cell_type": "markdown", "metadata": {}, "source": source, "id": "a1", **extra}


@pytest.mark.parametrize("write, problem", [
    (lambda p: p.write_text('{"cells": [\n<<<<<<< HEAD\n]}'), "not JSON"),  # TL102
    (lambda p: None, "No such file or directory"),  # TL103
    (lambda p: p.mkdir(), "Is a directory"),  # TL104
    (lambda p: p.write_text('{"metadata": {}}'), "not a notebook"),  # TL105
    (lambda p: p.write_text(json.dumps({"cells": [{"source": "x"}]})),
     "cell 0 lacks a cell_type"),  # TL106
    (lambda p: p.write_bytes(bytes(range(256)) * 4), "not UTF-8"),  # TL107
    (lambda p: p.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": None}]})),
     "cell 0 lacks a cell_type or a text source"),  # TL109
])
def test_core_path_names_a_file_it_cannot_read(tmp_path, write, problem):
    path = tmp_path / "x.ipynb"
    write(path)
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "core_path.py"), str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"core_path: {path}: ") and problem in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_core_path_still_measures_the_other_files(tmp_path):
    good = tmp_path / "good.ipynb"
    good.write_text(notebook([markdown("Core path: about 5 minutes. Some words here.")], 5))
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{")
    assert core_path.main([str(bad), str(good)]) == 1
    assert core_path.measure(good)["stated"] == 5 and core_path.measure(good)["words"] == 8


@pytest.mark.parametrize("text", [
    "<details><summary>Solution" * 10_000,  # TL110: unclosed solutions, 280 KB
    "core path " * 20_000,  # TL111: no minutes stated, 200 KB
])
def test_core_path_is_linear_on_pathological_text(tmp_path, text):
    path = tmp_path / "x.ipynb"
    path.write_text(notebook([markdown(text)]))
    start = time.perf_counter()
    core_path.measure(path)
    assert time.perf_counter() - start < 2


def test_build_zh_reads_a_translation_with_a_byte_order_mark(tmp_path):  # TL123
    path = tmp_path / "01_x.md"
    path.write_text("\ufeff<!-- cell a1 en:0123456789 -->\n中文\n", encoding="utf-8")
    assert build_zh.read_text(path) == {"a1": ("0123456789", "中文")}


def test_build_zh_names_a_translation_that_is_not_utf8(tmp_path):  # TL124
    path = tmp_path / "01_x.md"
    path.write_bytes("<!-- cell a1 en:0123456789 -->\n中文\n".encode("gbk"))
    with pytest.raises(build_zh.Problem, match=f"^{path}: not UTF-8 .* save it as UTF-8$"):
        build_zh.read_text(path)


@pytest.mark.parametrize("text, problem", [
    ('{"cells": [\n<<<<<<< HEAD\n]}', "not a notebook nbformat can read"),  # TL125
    (json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": "x"}],
                 "metadata": {}, "nbformat": 4, "nbformat_minor": 4}),
     "cell 0 has no id"),  # TL131
])
def test_build_zh_names_a_notebook_it_cannot_read(tmp_path, text, problem):
    path = tmp_path / "01_x.ipynb"
    path.write_text(text)
    for call in (lambda: build_zh.problems(path, entries={}), lambda: build_zh.todo(path)):
        with pytest.raises(build_zh.Problem, match=f"^{path}: {problem}"):
            call()

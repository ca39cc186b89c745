"""Start a new notebook that passes every test as it stands, to be written on from there.

Usage: python tools/new_notebook.py NN TOPIC "English title" "中文标题"
       (or `make new-notebook NN=12 TOPIC=sampling TITLE="…" TITLE_ZH="…"`)

Writes, for notebook NN_TOPIC:
- notebooks/NN_TOPIC.ipynb: the anatomy every notebook has (CONTRIBUTING.md, "Anatomy of a
  notebook"): a title cell that states the core path's minutes, an imports cell, numbered
  sections with speaker notes, a prediction and its answer, two exercises (heading, stub with
  its checker call, folded solution), an optional part and a Summary, each cell with its roles
  and slide type; executed in a fresh kernel, so its outputs are stored;
- minitf/check/nbNN.py: the two exercises' checkers, registered in minitf/check/__init__.py;
- translations/zh/NN_TOPIC.md: the Chinese of every markdown cell (then builds notebooks/zh/);
- a row for it in the course maps of README.md and README.zh.md.
Every sentence in them says what belongs there; replace them all, and the placeholder
exercises with the notebook's own. It refuses to overwrite anything.
"""

import hashlib
import json
import re
import subprocess
import sys

import course_format as fmt

ROOT = fmt.ROOT
PYTHON = sys.executable

EN, ZH = "en", "zh"


def _id(nn, k):
    return hashlib.sha256(f"{nn}-{k}".encode()).hexdigest()[:8]


def cells(nn, title, title_zh):
    """[(kind, slide type, roles, English, Chinese, extra metadata)] of the skeleton."""
    first = "first_" + nn
    second = "second_" + nn
    return [
        ("markdown", "slide", [], f"# {nn} · {title} ({title_zh})\n\n"
         "What this notebook builds and why a learner wants it, in two or three sentences, "
         "with the formula it teaches:\n\n$$z = \\sum_i \\alpha_i v_i$$\n\n"
         "**Time.** The core path (§1–§2 and the Summary) takes about MINUTES minutes, with two "
         "exercises; the optional part adds about 5.",
         f"# {nn} · {title_zh}（{title}）\n\n"
         "用两三句话说明本笔记本要搭建什么、学习者为什么需要它，并给出它讲授的公式：\n\n"
         "$$z = \\sum_i \\alpha_i v_i$$\n\n"
         "**用时：** 核心部分（§1–§2 和“小结”）约 MINUTES 分钟，含两道练习；"
         "选学部分另需约 5 分钟。",
         {}),
        ("code", "skip", [], "import numpy as np\n\n"
         f"from minitf.check import check_{first}, check_{second}\n\n"
         "np.set_printoptions(precision=4, suppress=True)\nrng = np.random.default_rng(0)",
         None, {}),
        ("markdown", "notes", ["notes"],
         f"{fmt.NOTES_LABEL[EN]} What to say and ask on the opening slide, and how long it takes.",
         f"{fmt.NOTES_LABEL[ZH]} 开场这一页要讲什么、问什么，大约需要几分钟。", {}),
        ("markdown", "slide", [], "## 1. The first idea\n\n"
         "A sentence of why, then the piece built from scratch on numbers small enough to "
         "print.",
         "## 1. 第一个想法\n\n先用一句话说明为什么，再用小到可以打印出来的数字从零搭建它。", {}),
        ("code", "-", [], "x = np.array([1.0, 2.0, 3.0])\nprint(\"x =\", x)", None, {}),
        ("markdown", "subslide", ["prediction"],
         "**Predict.** A question the learner answers before the next cell shows the answer.",
         "**先预测：** 一个问题：学习者先回答，下一格再揭晓答案。", {}),
        ("code", "-", ["answer"], "print(\"2x =\", 2 * x)", None, {}),
        ("markdown", "notes", ["notes"],
         f"{fmt.NOTES_LABEL[EN]} Take the room's predictions before running the cell.",
         f"{fmt.NOTES_LABEL[ZH]} 先收集大家的预测，再运行这一格。", {}),
        ("markdown", "subslide", ["exercise"], "### Exercise 1 — the first exercise\n\n"
         "What the learner writes, in the section it practises: here, `x` doubled.",
         "### 练习 1 — 第一道练习\n\n学习者要写什么，放在它所练习的那一节里：这里是把 `x` 乘以 2。",
         {"minitf": {"minutes": 3}}),
        ("code", "-", ["stub", "checker"], f"def {first}_mine(x):\n"
         "    \"\"\"x (n,) -> (n,): x doubled.\"\"\"\n"
         "    raise NotImplementedError  # your code here\n\n\n"
         f"check_{first}({first}_mine)", None, {}),
        ("markdown", "-", ["solution"], "<details><summary>Solution</summary>\n\n```python\n"
         f"def {first}_mine(x):\n    \"\"\"x (n,) -> (n,): x doubled.\"\"\"\n    return 2 * x\n"
         "```\n\n</details>",
         "<details><summary>参考解答</summary>\n\n```python\n"
         f"def {first}_mine(x):\n    \"\"\"x (n,) -> (n,): x doubled.\"\"\"\n    return 2 * x\n"
         "```\n\n</details>", {}),
        ("markdown", "slide", [], "## 2. The second idea\n\nThe next piece, and the library's "
         "tested version beside it (`np.testing.assert_allclose`).",
         "## 2. 第二个想法\n\n下一块内容，以及库里经过测试的版本与它并排对照"
         "（`np.testing.assert_allclose`）。", {}),
        ("code", "-", [], "m = np.arange(6.0).reshape(2, 3)\n"
         "np.testing.assert_allclose(m.sum(axis=-1), [3.0, 12.0])\n"
         "print(\"✓ row sums equal\")", None, {}),
        ("markdown", "notes", ["notes"],
         f"{fmt.NOTES_LABEL[EN]} What to point at on this slide.",
         f"{fmt.NOTES_LABEL[ZH]} 这一页要指给大家看什么。", {}),
        ("markdown", "subslide", ["exercise"], "### Exercise 2 — the second exercise\n\n"
         "Here: the sum of each row of a matrix.",
         "### 练习 2 — 第二道练习\n\n这里是：矩阵每一行的和。", {"minitf": {"minutes": 3}}),
        ("code", "-", ["stub", "checker"], f"def {second}_mine(m):\n"
         "    \"\"\"m (rows, cols) -> (rows,): the sum of each row.\"\"\"\n"
         "    raise NotImplementedError  # your code here\n\n\n"
         f"check_{second}({second}_mine)", None, {}),
        ("markdown", "-", ["solution"], "<details><summary>Solution</summary>\n\n```python\n"
         f"def {second}_mine(m):\n    \"\"\"m (rows, cols) -> (rows,): the sum of each row.\"\"\"\n"
         "    return m.sum(axis=-1)\n```\n\n</details>",
         "<details><summary>参考解答</summary>\n\n```python\n"
         f"def {second}_mine(m):\n    \"\"\"m (rows, cols) -> (rows,): the sum of each row.\"\"\"\n"
         "    return m.sum(axis=-1)\n```\n\n</details>", {}),
        ("markdown", "slide", [], "## Summary\n\n* What the learner now knows, in a few lines.\n"
         "* **Next:** the notebook that builds on it.",
         "## 小结\n\n* 用几行写下学习者现在掌握了什么。\n"
         "* **下一步：** 在此基础上继续的那个笔记本。", {}),
        ("markdown", "slide", ["optional"], "## Optional: deeper\n\n"
         "Material for a learner with more time: outside the core path.",
         "## 选学：更深入\n\n留给时间更充裕的学习者的内容：不在核心部分之内。", {}),
        ("code", "-", ["optional"], "print(\"x · x =\", x @ x)", None, {}),
        ("markdown", "slide", ["optional"], "## Optional: further\n\n"
         "A second optional part, so the deck has its five slides.",
         "## 选学：更进一步\n\n第二个选学部分，让幻灯片凑足五页。", {}),
    ]


CHECK_MODULE = '''"""Exercises of notebook {nn}: the skeleton's two placeholder exercises (cases,
references, known mistakes, other right answers, in English and Chinese). Replace them with the
notebook's own (CONTRIBUTING.md, "Adding an exercise")."""

import numpy as np

from .core import Case, Exercise, Mistake

__all__ = ["check_{first}", "check_{second}"]


def _vectors():
    return [Case((np.array([1.0, 2.0, 3.0]),), {{"en": "three numbers", "zh": "三个数"}}),
            Case((np.array([-1.5, 0.0]),), {{"en": "a negative number and zero",
                                             "zh": "一个负数和零"}})]


def _double_in_place(x):
    out = np.empty_like(x)
    np.multiply(x, 2, out=out)
    return out


FIRST = Exercise(
    name="{first}", checker="check_{first}", args=("x",),
    task={{"en": "x doubled", "zh": "x 的两倍"}},
    cases=_vectors, reference=lambda x: 2 * x,
    mistakes=(Mistake({{"en": "you added 2; double means multiply by 2",
                        "zh": "你加了 2；两倍是乘以 2"}}, lambda x: x + 2),),
    answers=(_double_in_place,))


def _matrices():
    return [Case((np.arange(6.0).reshape(2, 3),), {{"en": "a 2 x 3 matrix",
                                                    "zh": "2 x 3 的矩阵"}}),
            Case((np.arange(12.0).reshape(4, 3),), {{"en": "a 4 x 3 matrix",
                                                     "zh": "4 x 3 的矩阵"}})]


def _row_sums_by_loop(m):
    return np.array([sum(row) for row in m])


SECOND = Exercise(
    name="{second}", checker="check_{second}", args=("m",),
    task={{"en": "the sum of each row", "zh": "每一行的和"}},
    cases=_matrices, reference=lambda m: m.sum(axis=-1),
    mistakes=(Mistake({{"en": "those are the column sums (axis 0); a row's sum runs along axis -1",
                        "zh": "那是各列的和（axis 0）；一行的和要沿 axis -1 求"}},
                      lambda m: m.sum(axis=0)),),
    answers=(_row_sums_by_loop,))


def check_{first}(fn):
    """fn(x) -> x doubled. An exercise of notebook {nn} (§1)."""
    return FIRST.check(fn)


def check_{second}(fn):
    """fn(m) -> the sum of each row of m. An exercise of notebook {nn} (§2)."""
    return SECOND.check(fn)


EXERCISES = [FIRST, SECOND]
'''


def notebook(nn, cells_):
    nb = {"cells": [], "metadata": {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                       "name": "python3"},
        "language_info": {"name": "python"},
        "minitf": {"minutes": 0},
    }, "nbformat": 4, "nbformat_minor": 5}
    for k, (kind, slide, roles, en, _zh, meta) in enumerate(cells_):
        cell = {"cell_type": kind, "id": _id(nn, k), "metadata": {
            "slideshow": {"slide_type": slide}, **json.loads(json.dumps(meta))}, "source": en}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        fmt.set_roles(cell, roles)
        nb["cells"].append(cell)
    return nb


def translation(nn, nb, cells_):
    import build_zh

    out = []
    for cell, (kind, *_, zh, _meta) in zip(nb["cells"], cells_):
        if kind == "markdown":
            out.append(f"<!-- cell {cell['id']} en:{build_zh.fingerprint(fmt.source(cell))} -->"
                       f"\n{zh}\n")
    return "\n".join(out)


def readme_row(path, row):
    """Insert `row` after the last row of the course map (the table whose rows link notebooks)."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    last = max(i for i, line in enumerate(lines) if re.match(r"\| \[\d\d\]\(notebooks/", line))
    lines.insert(last + 1, row)
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv):
    if len(argv) != 4 or not re.fullmatch(r"\d\d", argv[0]) or not re.fullmatch(
            r"[a-z0-9]+(_[a-z0-9]+)*", argv[1]):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    nn, topic, title, title_zh = argv
    stem = f"{nn}_{topic}"
    paths = {"notebook": fmt.NOTEBOOK_DIR / f"{stem}.ipynb",
             "checker": ROOT / "minitf" / "check" / f"nb{nn}.py",
             "translation": ROOT / "translations" / "zh" / f"{stem}.md"}
    taken = [str(p.relative_to(ROOT)) for p in paths.values() if p.exists()]
    taken += [p.name for p in fmt.NOTEBOOK_DIR.glob(f"{nn}_*.ipynb")]
    if taken:
        print(f"new_notebook: already there: {', '.join(sorted(set(taken)))}", file=sys.stderr)
        return 2
    skeleton = cells(nn, title, title_zh)
    nb = notebook(nn, skeleton)
    sys.path.insert(0, str(ROOT / "tools" / "slides"))
    from slide_metadata import RISE_SETTINGS

    nb["metadata"]["rise"] = dict(RISE_SETTINGS)
    fmt.save(nb, paths["notebook"])
    paths["checker"].write_text(CHECK_MODULE.format(nn=nn, first=f"first_{nn}",
                                                    second=f"second_{nn}"), encoding="utf-8")
    register(nn)
    readme_row(ROOT / "README.md",
               f"| [{nn}](notebooks/{stem}.ipynb) | {title}: what it builds | `minitf…` |")
    readme_row(ROOT / "README.zh.md",
               f"| [{nn}](notebooks/zh/{stem}.ipynb) | {title_zh}：它搭建什么 | `minitf…` |")
    subprocess.run([PYTHON, str(ROOT / "tools" / "run_notebooks.py"), str(paths["notebook"])],
                   check=True)
    # the minutes the rule gives, stated in the metadata and on the first cell
    import core_path

    nb = fmt.load(paths["notebook"])
    minutes = core_path.measure(paths["notebook"])["states"]
    nb["metadata"]["minitf"]["minutes"] = minutes
    nb["cells"][0]["source"] = fmt.source(nb["cells"][0]).replace("MINUTES", str(minutes))
    fmt.save(nb, paths["notebook"])
    paths["translation"].write_text(
        translation(nn, nb, skeleton).replace("MINUTES", str(minutes)), encoding="utf-8")
    subprocess.run([PYTHON, str(ROOT / "tools" / "build_zh.py")], check=True)
    print(f"new_notebook: wrote {', '.join(str(p.relative_to(ROOT)) for p in paths.values())}, "
          "notebooks/zh/, and a row in README.md and README.zh.md; CONTRIBUTING.md says what "
          "to do next")
    return 0


def register(nn):
    """Add notebook nn's exercises to minitf/check/__init__.py."""
    path = ROOT / "minitf" / "check" / "__init__.py"
    text = path.read_text(encoding="utf-8")
    modules = re.search(r"^from \. import ([\w, ]+)$", text, re.M)
    names = modules.group(1).split(", ") + [f"nb{nn}"]
    text = text.replace(modules.group(0), f"from . import {', '.join(names)}")
    star = list(re.finditer(r"^from \.nb\d\d import \*  # noqa: F403$", text, re.M))[-1]
    text = text[:star.end()] + f"\nfrom .nb{nn} import *  # noqa: F403" + text[star.end():]
    tuple_ = re.search(r"^_NOTEBOOKS = \(([\w, ]+)\)$", text, re.M)
    text = text.replace(tuple_.group(0), f"_NOTEBOOKS = ({tuple_.group(1)}, nb{nn})")
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

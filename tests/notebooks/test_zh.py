"""The Chinese edition (notebooks/zh/) is complete, current and built from one source.

Fails when an English markdown cell has no Chinese, when it changed after its Chinese was
written, when an entry is left untranslated, when a Chinese cell's structure (headings, folds,
code and display formulas) differs from its English cell, and when a built Chinese notebook
differs from what tools/build_zh.py builds. See tools/build_zh.py and CONTRIBUTING.md.
"""

import re
from pathlib import Path

import build_zh
import course_format as fmt
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CJK = re.compile(r"[\u3400-\u9fff]")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.DOTALL)
INLINE = re.compile(r"`[^`\n]*`|\$[^$\n]*\$|<[^>]+>|\[[^\]]*\]\([^)]*\)")
HEADING = re.compile(r"^(#{1,6})\s", re.MULTILINE)


def english_words(text):
    """Words of English prose: code, formulas, tags and link targets left out."""
    for pattern in (FENCE, DISPLAY_MATH, INLINE):
        text = pattern.sub(" ", text)
    return re.findall(r"[A-Za-z]{2,}", text)


def structure(text):
    """What a translation keeps from its English cell, whatever the language."""
    return {
        "heading levels": [len(h) for h in HEADING.findall(FENCE.sub("", text))],
        "code blocks": FENCE.findall(text),
        "display formulas": DISPLAY_MATH.findall(FENCE.sub("", text)),
        "folds": text.count("<details>"),
        "speaker notes": text.startswith(fmt.NOTES_LABEL["en"]),
    }


def pairs(nb_path):
    """(index, English cell, Chinese text) for each markdown cell that has an entry."""
    entries = build_zh.read_text(build_zh.text_path(nb_path))
    nb = nbformat.read(nb_path, as_version=4)
    return [(i, c, entries[c.id][1]) for i, c in enumerate(nb.cells)
            if c.cell_type == "markdown" and c.id in entries]


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_markdown_cell_has_current_chinese(nb_path):
    found = build_zh.problems(nb_path)
    assert not found, "\n".join(found) + "\n(python tools/build_zh.py --todo NN prints them)"


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_chinese_is_chinese_and_keeps_the_cell_structure(nb_path):
    bad = []
    for index, cell, zh in pairs(nb_path):
        if "<!-- todo" in zh:
            bad.append(f"cell {index}: the '<!-- todo' line of --todo is still there")
        if len(english_words(cell.source)) >= 3 and not CJK.search(zh):
            bad.append(f"cell {index}: no Chinese in its translation")
        want, got = structure(cell.source), structure(zh)
        if want["speaker notes"]:
            want["speaker notes"] = got["speaker notes"] = zh.startswith(fmt.NOTES_LABEL["zh"])
        for key in want:
            if want[key] != got[key]:
                bad.append(f"cell {index}: {key} differ: English {want[key]!r}, "
                           f"Chinese {got[key]!r}")
    assert not bad, f"{nb_path.name}:\n" + "\n".join(bad)


def test_built_chinese_notebooks_are_what_the_build_gives():
    built, found = build_zh.outputs()
    assert not found, "\n".join(found)
    differ = [str(p.relative_to(ROOT)) for p, text in built.items()
              if not p.exists() or p.read_text(encoding="utf-8") != text]
    assert not differ, f"run `make notebooks` (or python tools/build_zh.py): {differ}"


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_and_outputs_exist_once(nb_path):
    """The Chinese notebook's code cells and outputs are the English notebook's, cell for cell."""
    zh_path = build_zh.ZH_DIR / nb_path.name
    assert zh_path.exists(), f"{zh_path.relative_to(ROOT)} is missing"
    en, zh = (nbformat.read(p, as_version=4) for p in (nb_path, zh_path))
    assert [c.id for c in en.cells] == [c.id for c in zh.cells]
    for a, b in zip(en.cells, zh.cells):
        assert a.cell_type == b.cell_type
        if fmt.slide_title(a):  # a slide title is translated
            assert fmt.slide_title(b) and fmt.slide_title(b) != fmt.slide_title(a), a.id
            b.metadata["minitf"]["title"] = fmt.slide_title(a)
        assert a.metadata == b.metadata
        if a.cell_type == "code":
            assert (a.source, a.outputs) == (b.source, b.outputs), f"cell {a.id} differs"


def test_the_build_names_a_changed_english_cell(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title\n\nSome English words."),
                nbformat.v4.new_code_cell("x = 1")]
    nb_path = tmp_path / "notebooks" / "99_fixture.ipynb"
    nb_path.parent.mkdir()
    nbformat.write(nb, nb_path)
    text_dir = tmp_path / "translations"
    text_dir.mkdir()
    monkeypatch.setattr(build_zh, "TEXT_DIR", text_dir)
    monkeypatch.setattr(build_zh, "ROOT", tmp_path)
    assert "missing" in build_zh.problems(nb_path)[0]

    cell = nb.cells[0]
    (text_dir / "99_fixture.md").write_text(
        f"<!-- cell {cell.id} en:{build_zh.fingerprint(cell.source)} -->\n# 标题\n\n一些中文。\n",
        encoding="utf-8")
    assert build_zh.problems(nb_path) == []
    built = nbformat.reads(build_zh.build(nb_path), as_version=4)
    assert built.cells[0].source == "# 标题\n\n一些中文。" and built.cells[1].source == "x = 1"

    cell.source += " More."
    nbformat.write(nb, nb_path)
    (found,) = build_zh.problems(nb_path)
    assert "changed in English" in found and cell.id in found
    with pytest.raises(build_zh.Problem):
        build_zh.build(nb_path)
    assert f"<!-- cell {cell.id} en:{build_zh.fingerprint(cell.source)} -->" in build_zh.todo(
        nb_path)

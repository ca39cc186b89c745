"""The Chinese edition (notebooks/zh/) is complete, current and built from one source.

Fails when an English markdown cell has no Chinese, when it changed after its Chinese was
written, when an entry is left untranslated, when a Chinese cell's structure (headings, folds,
code and display formulas) differs from its English cell, and when a built Chinese notebook
differs from what tools/build_zh.py builds. See tools/build_zh.py and CONTRIBUTING.md.
"""

import io
import re
import sys
import tokenize
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
        # code is the same in both languages; a drawing or a transcript in a plain block
        # (```text) is translated like prose, and keeps its place
        "code blocks": [b if re.match(r"```(python|py|sh|bash)?\n", b) else "```text"
                        for b in FENCE.findall(text)],
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


def code_tokens(source):
    """The code's tokens, its comments left out and its strings' contents blanked: what the
    Chinese edition's code must share with the English (Python 3.12's f-string pieces too)."""
    kept = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL):
            continue
        blank = token.type == tokenize.STRING or token.type == getattr(
            tokenize, "FSTRING_MIDDLE", None)
        kept.append((token.type, "…" if blank else token.string))
    return kept


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_chinese_code_differs_only_in_comments_and_strings(nb_path):
    """The Chinese notebook is the English one, cell for cell: the same ids, kinds and
    metadata (a slide title translated), and code that differs only in its comments and the
    contents of its string literals (translations/zh's code entries)."""
    zh_path = build_zh.ZH_DIR / nb_path.name
    assert zh_path.exists(), f"{zh_path.relative_to(ROOT)} is missing"
    en, zh = (nbformat.read(p, as_version=4) for p in (nb_path, zh_path))
    assert [c.id for c in en.cells] == [c.id for c in zh.cells]
    for a, b in zip(en.cells, zh.cells):
        assert a.cell_type == b.cell_type
        if fmt.slide_title(a):  # a slide title is translated
            assert fmt.slide_title(b) and fmt.slide_title(b) != fmt.slide_title(a), a.id
            b.metadata["minitf"]["title"] = fmt.slide_title(a)
        assert a.metadata == b.metadata, a.id
        if a.cell_type == "code":
            assert code_tokens(a.source) == code_tokens(b.source), (
                f"cell {a.id}: the Chinese code differs from the English in more than its "
                "comments and strings")


def test_the_code_comparison_sees_a_changed_name_but_not_a_translated_string():
    english = 'x = softmax(s)  # weights\nprint(f"row sums: {x.sum(-1)}")\n'
    assert code_tokens(english) == code_tokens(
        'x = softmax(s)  # 权重\nprint(f"各行之和：{x.sum(-1)}")\n')
    assert code_tokens(english) != code_tokens(english.replace("softmax", "log_softmax"))
    assert code_tokens(english) != code_tokens(english.replace("(s)", "(s, -1)"))


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


def test_a_code_entry_gives_the_chinese_comments_and_strings(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"),
                nbformat.v4.new_code_cell('print("row sums")  # the check')]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="row sums\n")]
    nb_path = tmp_path / "notebooks" / "99_fixture.ipynb"
    nb_path.parent.mkdir()
    nbformat.write(nb, nb_path)
    monkeypatch.setattr(build_zh, "TEXT_DIR", tmp_path)
    monkeypatch.setattr(build_zh, "ZH_DIR", tmp_path / "zh")
    title, code = nb.cells
    entry = (f"<!-- cell {title.id} en:{build_zh.fingerprint(title.source)} -->\n# 标题\n\n"
             f"<!-- code {code.id} en:{build_zh.fingerprint(code.source)} -->\n"
             '```python\nprint("各行之和")  # 检查一下\n```\n')
    (tmp_path / "99_fixture.md").write_text(entry, encoding="utf-8")
    built = nbformat.reads(build_zh.build(nb_path), as_version=4)
    assert built.cells[1].source == 'print("各行之和")  # 检查一下'
    assert code_tokens(built.cells[1].source) == code_tokens(code.source)
    # until the Chinese notebook is executed its output is the English one; then its own
    assert built.cells[1].outputs[0].text == "row sums\n"
    built.cells[1].outputs[0].text = "各行之和\n"
    (tmp_path / "zh").mkdir()
    nbformat.write(built, tmp_path / "zh" / nb_path.name)
    again = nbformat.reads(build_zh.build(nb_path), as_version=4)
    assert again.cells[1].outputs[0].text == "各行之和\n"
    # the English code changes: the entry is stale, and --todo gives the new code to translate
    code.source = 'print("row sums:")  # the check'
    nbformat.write(nb, nb_path)
    assert any("its code changed in English" in p for p in build_zh.problems(nb_path))
    assert f"<!-- code {code.id} en:{build_zh.fingerprint(code.source)} -->" in build_zh.todo(
        nb_path)
    # an entry that is not one python block is refused, naming the cell
    (tmp_path / "99_fixture.md").write_text(entry.replace("```python\n", ""), encoding="utf-8")
    with pytest.raises(build_zh.Problem, match=f"code cell {code.id} is not one ```python"):
        build_zh.read_text(tmp_path / "99_fixture.md")


# -- the glossary: one file decides each term ------------------------------------------------
GLOSSARY = ROOT / "translations" / "zh" / "glossary.tsv"


def glossary():
    """[(english, chinese, notebooks, [variants])] of translations/zh/glossary.tsv."""
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            english, chinese, notebooks, variants = line.split("\t")
            rows.append((english, chinese, notebooks, [v for v in variants.split(",") if v]))
    return rows


def chinese_texts():
    """(where, text) of every Chinese text a learner reads: the translation entries (code,
    formulas and inline code left out) and README.zh.md."""
    for path in sorted((ROOT / "translations" / "zh").glob("[0-9][0-9]_*.md")):
        for cell_id, (_, text) in build_zh.read_text(path).items():
            yield f"{path.name} {cell_id}", INLINE.sub(" ", DISPLAY_MATH.sub(" ", FENCE.sub(
                " ", text)))
    yield "README.zh.md", INLINE.sub(" ", FENCE.sub(" ", (ROOT / "README.zh.md").read_text(
        encoding="utf-8")))


def test_notebook_00s_glossary_is_the_glossary_file():
    rows = {(english, chinese, notebooks) for english, chinese, notebooks, _ in glossary()}
    nb = fmt.load(ROOT / "notebooks" / "00_overview.ipynb")
    tables = [m.groups() for c in nb["cells"] if "| English | 中文 | nb |" in fmt.source(c)
              for m in re.finditer(r"^\| (.+?) \| (.+?) \| (.*?) \|$", fmt.source(c), re.M)
              if m.group(1) != "English" and not m.group(1).startswith("---")]
    assert len(tables) >= 50  # the tables were read
    missing = [row for row in tables if row not in rows]
    assert not missing, f"notebook 00's glossary rows not in {GLOSSARY.name}: {missing}"


def test_no_chinese_text_uses_a_variant_of_a_glossary_term():
    found = [f"{where}: {variant!r} (the glossary's term for {english!r} is {chinese!r})"
             for english, chinese, _, variants in glossary() for variant in variants
             for where, text in chinese_texts() if variant in text]
    assert not found, "\n".join(found)
    assert any(variants for *_, variants in glossary())  # the lint has something to look for


def test_the_variant_lint_finds_a_variant(monkeypatch, tmp_path):
    path = tmp_path / "glossary.tsv"
    path.write_text("sampling\t采样\t07\t抽样\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "GLOSSARY", path)
    monkeypatch.setattr(sys.modules[__name__], "chinese_texts",
                        lambda: iter([("x.md", "在抽样之前")]))
    with pytest.raises(AssertionError, match="抽样"):
        test_no_chinese_text_uses_a_variant_of_a_glossary_term()

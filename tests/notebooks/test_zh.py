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


def fenced(block):
    """A fenced block as a translation must keep it. Python (a folded solution) is compared
    as a code entry is: by its code_tokens, so its comments and docstrings may be translated
    but not a name, an operator or an indent (⇥ ⇤ ⏎ mark them). A shell block (or a bare ```)
    is the same in both languages; a drawing or a transcript in a plain block (```text) is
    translated like prose, and keeps its place."""
    python = re.fullmatch(r"```(?:python|py)\n(.*\n)```", block, re.DOTALL)
    if python:
        marks = {tokenize.INDENT: "⇥", tokenize.DEDENT: "⇤", tokenize.NEWLINE: "⏎"}
        try:
            return "```python " + " ".join(marks.get(kind, string)
                                             for kind, string in code_tokens(python[1]))
        except (tokenize.TokenError, SyntaxError):  # not Python after all: as it is
            return block
    return block if re.match(r"```(sh|bash)?\n", block) else "```text"


def structure(text):
    """What a translation keeps from its English cell, whatever the language."""
    return {
        "heading levels": [len(h) for h in HEADING.findall(FENCE.sub("", text))],
        "code blocks": [fenced(b) for b in FENCE.findall(text)],
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


def test_the_structure_check_lets_a_solution_speak_chinese_but_not_change_its_code():
    english = ('<details><summary>Solution</summary>\n\n```python\ndef twice(x):\n'
               '    """x, doubled."""\n    return 2 * x  # a new array\n```\n\n</details>')
    chinese = (english.replace("Solution", "参考解答").replace("x, doubled.", "x 的两倍。")
               .replace("# a new array", "# 一个新数组"))
    assert structure(english) == structure(chinese)
    for changed in (chinese.replace("2 * x", "x + x"), chinese.replace("twice", "double"),
                    chinese.replace("    return", "    y = 2 * x\n    return"),
                    chinese.replace("```python", "```sh")):
        assert structure(english)["code blocks"] != structure(changed)["code blocks"]
    # a shell block is the same in both languages; a plain one is translated like prose
    assert structure("```sh\nmake lab  # opens\n```") != structure("```sh\nmake lab  # 打开\n```")
    assert structure("```\nX → Y\n```") != structure("```\nX → 甲\n```")
    assert structure("```text\nX → Y\n```") == structure("```text\nX → 甲\n```")


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


# -- README.zh.md: a complete Chinese README, one line per paragraph -------------------------
# Each heading (## and ###) of README.md and its Chinese heading in README.zh.md, in order: a
# section added to README.md fails the test until README.zh.md has it too.
README_SECTIONS = {
    "## Quick start": "## 快速开始",
    "### With conda instead": "### 改用 conda",
    "## Course map": "## 课程地图",
    "## The translator": "## 翻译器",
    "## To PyTorch, a GPU and several machines": "## 迁移到 PyTorch、GPU 与多台机器",
    "## Performance": "## 性能",
    "## For instructors": "## 授课指南",
    "## Common commands": "## 常用命令",
    "### Where `make test` has been checked": "### `make test` 在哪些环境中检查过",
    "## For contributors": "## 参与贡献",
    "## Run one test": "## 运行单个测试",
    "## Chinese characters in plots": "## 图中的中文",
}
CJK_END = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]\s*$")
CJK_START = re.compile(r"^\s*[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
# a line that starts a block of its own: a heading, a list item, a table row, a fence, HTML
BLOCK_START = re.compile(r"^\s*(#{1,6}\s|[-*+]\s|\d+[.)]\s|\||```|<)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def hard_breaks(text):
    """Line numbers where a paragraph or list item goes on to the next line with Chinese on
    either side of the break: Markdown renders that break as a stray space."""
    found, fenced = [], False
    lines = text.split("\n")
    for number, (line, after) in enumerate(zip(lines, lines[1:]), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or not line.strip() or HEADING.match(line) or line.lstrip()[:1] in "|<":
            continue  # a code block, a blank line, a heading, a table row, HTML: no paragraph
        if not after.strip() or BLOCK_START.match(after):
            continue
        if CJK_END.search(line) or CJK_START.search(after):
            found.append(number)
    return found


def headings(text):
    return [line for line in FENCE.sub("", text).split("\n") if re.match(r"#{2,3} ", line)]


def missing_sections(english, chinese):
    """What README.zh.md lacks of README.md's sections (README_SECTIONS maps them)."""
    unmapped = [h for h in headings(english) if h not in README_SECTIONS]
    want = [README_SECTIONS[h] for h in headings(english) if h in README_SECTIONS]
    return [f"README.md's {h!r} has no Chinese heading in README_SECTIONS" for h in unmapped] + (
        [] if headings(chinese) == want else
        [f"README.zh.md's sections {headings(chinese)} are not README.md's {want}"])


def slug(heading):
    """The anchor GitHub gives a heading: lower case, punctuation (Chinese too) dropped."""
    return re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower()).replace(" ", "-")


def code_lines(text):
    """The commands of each fenced block, comments dropped (README.zh.md's are Chinese)."""
    return [[re.sub(r"(^|\s+)#.*$", "", line) for line in block.split("\n")]
            for block in FENCE.findall(text)]


def test_readme_zh_has_no_line_break_inside_a_paragraph():
    text = (ROOT / "README.zh.md").read_text(encoding="utf-8")
    found = hard_breaks(text)
    assert not found, ("README.zh.md: a paragraph or list item goes on to the next line (one "
                       f"line each, Chinese does not wrap) after lines {found}")


def test_the_hard_break_check_sees_a_break_and_nothing_else():
    assert hard_breaks("第一行写到这里\n接着写第二行。") == [1]
    assert hard_breaks("a `make lab`\n会打开它。") == [1]
    assert hard_breaks("- 一项，\n  接着写。") == [1]
    for fine in ("一段。\n\n另一段。", "- 一项；\n- 二项。", "## 标题\n正文。", "| 表 |\n| 格 |",
                 "说明：\n```sh\n中文\n注释\n```", "正文\n<details>", "English text\nwraps here",
                 "一段：\n1. 第一步"):
        assert hard_breaks(fine) == [], fine


def test_readme_zh_has_every_section_of_readme():
    english, chinese = ((ROOT / name).read_text(encoding="utf-8")
                        for name in ("README.md", "README.zh.md"))
    assert not missing_sections(english, chinese), "\n".join(missing_sections(english, chinese))


def test_the_section_check_sees_a_missing_or_unmapped_section():
    english = ("# minitf\n\n## Quick start\n\ntext\n\n## Course map\n\n"
               "```sh\n## not a heading\n```\n")
    assert missing_sections(english, "## 快速开始\n\n## 课程地图\n") == []
    assert missing_sections(english, "## 快速开始\n")  # a section left out
    assert missing_sections(english, "## 课程地图\n\n## 快速开始\n")  # out of order
    assert missing_sections(english + "\n## Glossary\n", "## 快速开始\n\n## 课程地图\n")


def kept_from_readme(english, chinese):
    """What README.zh.md changed or lost of README.md's commands (in the same fenced blocks),
    inline code, dotted minitf names (tests/tools/test_doc_references.py resolves README.md's)
    and links (a notebook's in notebooks/zh/; a section's anchor that of a Chinese heading)."""
    found = []
    if code_lines(chinese) != code_lines(english):
        found.append("the fenced blocks' commands differ (only their comments may)")
    spans = re.compile(r"`[^`\n]+`")
    lost = set(spans.findall(FENCE.sub("", english))) - set(spans.findall(FENCE.sub("", chinese)))
    found += [f"inline code {span} is missing" for span in sorted(lost)]
    names = re.compile(r"(?<![\w/.])minitf(?:\.[A-Za-z_]\w*)+")
    differ = set(names.findall(chinese)) ^ set(names.findall(english))
    found += [f"minitf name {name} is in one README only" for name in sorted(differ)]
    to_zh = {"#" + slug(en): "#" + slug(zh) for en, zh in README_SECTIONS.items()}
    to_zh["README.zh.md"] = "README.md"
    links = set(LINK.findall(FENCE.sub("", chinese)))
    for target in LINK.findall(FENCE.sub("", english)):
        target = to_zh.get(target, re.sub(r"^notebooks/(?=\d\d_)", "notebooks/zh/", target))
        if target not in links:
            found.append(f"no link to {target}")
    anchors = {"#" + slug(h) for h in headings(chinese)}
    found += [f"{t} is no heading's anchor" for t in sorted(links - anchors) if t.startswith("#")]
    return found


def test_readme_zh_keeps_readmes_commands_code_and_links():
    english, chinese = ((ROOT / name).read_text(encoding="utf-8")
                        for name in ("README.md", "README.zh.md"))
    found = kept_from_readme(english, chinese)
    assert not found, "README.zh.md against README.md:\n" + "\n".join(found)


def test_the_readme_comparison_sees_a_changed_command_code_or_link():
    english = ("Run `make lab`, see [01](notebooks/01_x.ipynb) and [map](#course-map).\n\n"
               "## Course map\n\n```sh\nmake lab   # opens it\n```\n")
    chinese = ("运行 `make lab`，见 [01](notebooks/zh/01_x.ipynb) 和[课程地图](#课程地图)。\n\n"
               "## 课程地图\n\n```sh\nmake lab   # 打开它\n```\n")
    assert kept_from_readme(english, chinese) == []
    assert kept_from_readme(english, chinese.replace("lab   #", "test   #"))
    assert kept_from_readme(english, chinese.replace("`make lab`", "make lab"))
    assert kept_from_readme(english, chinese.replace("notebooks/zh/", "notebooks/"))
    assert kept_from_readme(english, chinese.replace("(#课程地图)", "(#地图)"))

"""nbconvert preprocessor for the course's decks (loaded by nbconvert_config.py).

The notebook is a text for a learner; the deck made from it is a lecture. This preprocessor
turns the one into the other at build time, without changing the notebook:

- Test markers (`# NBVAL_IGNORE_OUTPUT` and the like) are for nbval, not for an audience:
  their lines are dropped from the code shown on slides (the notebook keeps them).
- A markdown image of a local file becomes a data: URI, so a deck is one HTML file plus
  vendor/. (nbconvert's own `embed_images` does this by re-parsing the markdown, which
  empties every `<details>` block and unfolds the solutions; see issue 16.)
- The title slide keeps the title and the notebook's first paragraph (the goal); an agenda
  slide follows with each part and its minutes (tools/core_path.py's rule).
- An exercise shows a task card (where, how long, the checker to call) instead of the stub
  and its "not yet" output, which mean nothing on a projector; its solution gets a sub-slide.
- A figure gets a sub-slide of its own, without the code that draws it (a cell with the role
  `show-code` keeps its code).
- An answer to a prediction that shares the question's slide is a fragment: it comes one step
  later.
- A notebook-only cell is left out.

What a cell is (exercise, stub, checker, solution, prediction, answer, …) comes from its roles,
read through tools/course_format.py; nothing here reads the prose for it.
- No slide carries more than PROSE_WORDS words of prose or about SLIDE_LINES lines: longer
  content continues on a sub-slide, split between cells or between paragraphs.
- Every sub-slide has a heading: a continuation gets its section's, marked "(cont.)".
"""

import base64
import copy
import mimetypes
import re
import sys
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import core_path  # noqa: E402
import course_format as fmt  # noqa: E402

MARKER_LINE = re.compile(r"^[ \t]*#[ \t]*NBVAL_\w+.*(\n|$)", re.M)
IMAGE = re.compile(r"(!\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$", re.M)
NUMBERED = re.compile(r"^(\d+)\.")  # "2. Query…" would start a numbered list
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
DETAILS = re.compile(r"<details>.*?</details>", re.S)
DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)
TABLE_ROW = re.compile(r"^\s*\|.*$", re.M)

PROSE_WORDS = 120   # words of prose a slide may carry
FILL_WORDS = 105    # where a split fills a slide to: a "(cont.)" heading comes on top
CAPTION_WORDS = 50  # a markdown cell this short just before a figure is its caption
SLIDE_LINES = 22    # lines of about 19 px text, code or output that fit under a heading

WORDS = {
    "en": {"cont": "(cont.)", "agenda": "Goal and plan", "optional": "optional",
           "minutes": "min", "solution": "solution", "core": "Core path: about {m} minutes.",
           "card": "**In JupyterLab:** notebook {nb}, “{ex}” · about {m} min · write {what} in the "
                   "cell under this heading, then run `{check}`: it names the mistake, if any.",
           "setup_title": "For students: set-up", "plan": "The plan: {m} minutes",
           "note_minutes": "*({m} min)*",
           "plan_notes": "**Speaker notes.** The plan, part by part, in class minutes: say "
                         "what the class will be able to do at the end."},
    "zh": {"cont": "（续）", "agenda": "目标与安排", "optional": "选学",
           "minutes": "分钟", "solution": "参考解答", "core": "核心内容约 {m} 分钟。",
           "card": "**在 JupyterLab 里：** 笔记本 {nb}，“{ex}” · 约 {m} 分钟 · 在本标题下的代码格里"
                   "写出 {what}，然后运行 `{check}`：如有错误，它会指出是哪一种。",
           "setup_title": "给学生：准备环境", "plan": "安排：共 {m} 分钟",
           "note_minutes": "（{m} 分钟）",
           "plan_notes": "**讲者备注：** 按课堂用时逐部分介绍安排：告诉大家下课时他们将会"
                         "做到什么。"},
}
SETUP = {
    "en": "1. Get the course: `git clone` the repository (or download and unpack its zip).\n"
          "2. In its folder, run `make lab`: it installs what the course needs into `.venv` "
          "(a minute, once) and opens JupyterLab on `notebooks/`.\n"
          "3. Open `00_overview.ipynb` (the Chinese edition is in `notebooks/zh/`) and run "
          "the cells from the top, Shift+Enter.\n"
          "4. Exercises: write your code where a cell says `raise NotImplementedError`, then "
          "run the checker under it.\n\n"
          "Needs Python 3.10 or newer and `make`; no GPU, no network after the install.",
    "zh": "1. 获取课程：`git clone` 这个仓库（或下载 zip 后解压）。\n"
          "2. 在仓库目录里运行 `make lab`：它把课程需要的软件装进 `.venv`（只需一次，约一分钟），"
          "并在 `notebooks/` 打开 JupyterLab。\n"
          "3. 打开 `zh/00_overview.ipynb`（英文版在 `notebooks/` 下），"
          "从头按 Shift+Enter 逐格运行。\n"
          "4. 练习：在写着 `raise NotImplementedError` 的代码格里写你的代码，"
          "再运行它下面的检查函数。\n\n"
          "需要 Python 3.10 或更新版本和 `make`；不需要 GPU，装好之后也不需要联网。",
}


def strip_markers(source):
    """The code without its nbval marker lines."""
    return MARKER_LINE.sub("", source)


def embed_images(source, folder):
    """Markdown with each local image file `![..](file.png)` replaced by a data: URI."""

    def inline(match):
        target = match.group(2)
        path = Path(folder) / target
        if re.match(r"[a-z]+:", target) or not path.is_file():
            return match.group(0)
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        data = base64.b64encode(path.read_bytes()).decode()
        return f"{match.group(1)}data:{mime};base64,{data}{match.group(3)}"

    return IMAGE.sub(inline, source)


def slide_type(cell):
    return cell.metadata.get("slideshow", {}).get("slide_type", "-")


def set_slide_type(cell, kind):
    cell.metadata.setdefault("slideshow", {})["slide_type"] = kind


def starts_slide(cell):
    return slide_type(cell) in ("slide", "subslide")


def shown(cell):
    return slide_type(cell) not in ("skip", "notes")


def leave_out(cells):
    """The cells with notebook-only ones skipped."""
    for cell in cells:
        if fmt.has(cell, "notebook-only"):
            set_slide_type(cell, "skip")
    return cells


def markdown(source, kind="-"):
    cell = nbformat.v4.new_markdown_cell(source)
    del cell["id"]  # an nbformat 4.4 cell: a deck's extra cells need no ids
    set_slide_type(cell, kind)
    return cell


def prose(text):
    """The words of prose a viewer reads at once: headings, text and inline code; code blocks,
    formulas, tables and what a fold hides (not its summary) left out. Counted as
    tools/slides/inspect_decks.py counts them on the slide."""
    text = DETAILS.sub(lambda m: " ".join(re.findall(r"<summary>(.*?)</summary>", m.group(0),
                                                     re.S)), text)
    for pattern in (FENCE, DISPLAY_MATH, TABLE_ROW):
        text = pattern.sub(" ", text)
    text = re.sub(r"<[^>]+>|\$[^$\n]*\$", " ", text)
    return len(re.findall(r"[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*", text)) + len(
        re.findall(r"[\u3400-\u9fff]", text)) // 2  # two characters read like a word


def lines(cell):
    """About how many 19 px lines a cell takes on a slide (a heading counts two)."""
    if cell.cell_type == "markdown":
        # a fold counts open: once opened, it must still fit
        text = re.sub(r"</?details>|<summary>|</summary>", "\n\n", cell.source)
        count = 0
        for block in re.split(r"\n\s*\n", text):
            fences = FENCE.findall(block)
            count += sum(f.count("\n") + 1 for f in fences)
            rest = FENCE.sub("", block)
            if HEADING.match(rest.strip()):
                count += 2
                rest = HEADING.sub("", rest)
            if "$$" in rest:
                count += 2 * rest.count("$$") // 2
            rest = re.sub(r"\$[^$]*\$", "xxxx", rest)
            width = len(rest) + len(re.findall(r"[\u3000-\u9fff\uff00-\uffef]", rest))  # CJK: 2
            count += -(-width // 75) if rest.strip() else 0
            count += 0.5
        return count
    if cell.cell_type == "code":
        count = 0 if cell.metadata.get("transient", {}).get("remove_source") else (
            _wrapped(cell.source))
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                count += _wrapped(out.get("text", ""))
            elif "image/png" in out.get("data", {}):
                count += 20  # a figure is drawn 420–620 px tall
            elif "text/markdown" in out.get("data", {}):
                count += out["data"]["text/markdown"].strip().count("\n") + 1
            elif "text/html" in out.get("data", {}):
                count += max(1, out["data"]["text/html"].count("<tr"))
            elif "text/plain" in out.get("data", {}):
                count += _wrapped(out["data"]["text/plain"])
        return count
    return 0


def _wrapped(text, columns=100):
    """Lines of `text` in a code block about `columns` characters wide, long lines wrapped."""
    return sum(max(1, -(-len(line) // columns)) for line in text.rstrip("\n").split("\n"))


def paragraphs(source):
    """The markdown's blocks separated by blank lines, never splitting a fence, a fold or a
    display formula."""
    blocks, current, depth = [], [], 0
    for block in re.split(r"(\n\s*\n)", source):
        if not block.strip() and current and not depth:
            continue
        current.append(block)
        text = "".join(current)
        depth = (text.count("```") % 2) + (text.count("<details>") - text.count("</details>")) \
            + (text.count("$$") % 2)
        if not depth:
            blocks.append(text.strip("\n"))
            current = []
    if current:
        blocks.append("".join(current).strip("\n"))
    return [b for b in blocks if b.strip()]


def sentences(block):
    """A block longer than a slide's prose in pieces: a paragraph as its sentences, a list as
    its items; any other block (a table, a fold, code, a formula) as it is."""
    if prose(block) <= FILL_WORDS or re.search(r"<details>|```|\$\$|^\s*\|", block, re.M):
        return [block]
    if re.match(r"\s*([-*]|\d+\.)\s", block):  # a list: between its items
        return [item.strip("\n") for item in re.split(r"\n(?=(?:[-*]|\d+\.)\s)", block)
                if item.strip()]
    # English sentences end in a stop and a space; Chinese ones in 。！？ with no space
    return [s.strip() for s in re.split(
        r"(?<=[.!?])\s+(?=[A-Z\u3400-\u9fff*(])|(?<=[。！？])\s*(?=[^\s）)」”’，。；：])", block)
        if s.strip()]


class SlidesPreprocessor(Preprocessor):
    def preprocess(self, nb, resources):
        name = resources.get("metadata", {}).get("name", "")
        lang = "zh" if name.endswith(".zh") else "en"
        folder = resources.get("metadata", {}).get("path") or "."
        english = ROOT / "notebooks" / (name.removesuffix(".zh") + ".ipynb")
        words = WORDS[lang]
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.source = strip_markers(cell.source)
            elif cell.cell_type == "markdown":
                cell.source = embed_images(cell.source, folder)
        cells = leave_out(list(nb.cells))
        if fmt.is_lecture(nb):
            nb.cells = self.lecture(nb, cells, name, words)
            return nb, resources
        cells = self.exercises(cells, name, words)
        cells = self.figures(cells)
        cells = self.predictions(cells)
        cells = self.title_and_agenda(cells, english, lang, words)
        cells = self.split_long(cells)
        cells = self.headings(cells, words)
        nb.cells = cells
        return nb, resources

    # -- an authored lecture -----------------------------------------------------------
    def lecture(self, nb, cells, name, words):
        """The deck as its author laid it out (tools/course_format.py, `lecture`): the slides
        the cells' slide types make, each under its title with the section above it in small
        type, an agenda in class minutes after the title slide; exercises as task cards with
        their folded solutions, figures without their code, answers one step after their
        question. Nothing is split or moved."""
        slides = fmt.lecture(nb)
        starts = {id(nb.cells[s.start]): s for s in slides[1:]}
        cells = self.exercises(cells, name, words, solutions_apart=False)
        for cell in cells:
            if cell.cell_type == "code" and shown(cell) and not fmt.has(cell, "show-code") \
                    and any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
                cell.metadata["transient"] = {"remove_source": True}
        cells = self.predictions(cells)
        out = []
        for cell in cells:
            if id(cell) in starts:
                out.append(self._title(cell, starts[id(cell)]))
            if fmt.has(cell, "notes") and fmt.notes_minutes(cell):
                cell.source = self._with_minutes(cell.source, fmt.notes_minutes(cell), words)
            out.append(cell)
        # the agenda follows the title slide
        first = next((k for k, c in enumerate(out) if shown(c)), 0)  # the title slide's
        second = next((k for k, c in enumerate(out) if k > first and shown(c)
                       and starts_slide(c)), len(out))
        return out[:second] + self._agenda(nb, slides, words) + out[second:]

    @staticmethod
    def _with_minutes(note, minutes, words):
        """The note with the slide's class minutes after its label, for the speaker view."""
        label, _, rest = note.partition("**")[2].partition("**")
        stamp = words["note_minutes"].format(m=f"{minutes:g}")
        return f"**{label}** {stamp} {rest.lstrip()}" if label else f"{stamp} {note}"

    @staticmethod
    def _title(cell, slide):
        """The heading cell that opens `slide`: its section in small type, then its title. A
        heading that opens the cell itself gives way to it (the notebook keeps it)."""
        if cell.cell_type == "markdown" and HEADING.match(cell.source.lstrip()):
            cell.source = HEADING.sub("", cell.source.lstrip(), count=1).lstrip("\n")
        section = NUMBERED.sub(r"\1\\.", slide.section)  # "2. Query…" is no list item
        kicker = (f'<div class="minitf-kicker">\n\n{section}\n\n</div>\n\n'
                  if slide.section else "")
        title = markdown(f"{kicker}## {fmt.slide_title(cell)}", slide_type(cell))
        set_slide_type(cell, "-" if shown(cell) else slide_type(cell))
        return title

    @staticmethod
    def _agenda(nb, slides, words):
        """The plan after the title slide: each section's class minutes, from the notes."""
        parts = {}
        for slide in slides[1:]:
            parts[slide.section] = parts.get(slide.section, 0) + slide.minutes(nb)
        total = sum(s.minutes(nb) for s in slides)
        items = []
        for title, m in parts.items():
            title = NUMBERED.sub(r"\1\\.", title) if title else "—"
            items.append(f"- {title} · {round(m)} {words['minutes']}")
        agenda = markdown(f"## {words['plan'].format(m=round(total))}\n\n" + "\n".join(items),
                          "subslide")
        notes = markdown(words["plan_notes"], "notes")
        return [agenda, notes]

    # -- exercises ---------------------------------------------------------------------
    def exercises(self, cells, name, words, solutions_apart=True):
        """A task card after each exercise's heading cell, in place of its stub and checker;
        its solution on a sub-slide of its own (or, in an authored lecture, folded where it
        is)."""
        cards = {}
        for exercise in fmt.exercises({"cells": cells}):
            if exercise.checker is None or not exercise.stubs:
                continue  # course_format.validate names it
            what = ", ".join(f"`{d}`" for i in exercise.stubs
                             for d in fmt.defined_functions(cells[i])) or "your code"
            call = fmt.checker_call(cells[exercise.checker])  # before the cell is emptied
            for i in {*exercise.stubs, exercise.checker}:  # never on a slide, card or not
                if not shown(cells[i]):
                    continue
                if starts_slide(cells[i]):
                    self._hide_keeping_start(cells[i])
                else:
                    set_slide_type(cells[i], "skip")
            if not shown(cells[exercise.index]):
                continue  # an exercise left out of the deck gets no card
            if solutions_apart and exercise.solution is not None \
                    and shown(cells[exercise.solution]):
                set_slide_type(cells[exercise.solution], "subslide")
            cards[exercise.index] = markdown(words["card"].format(
                nb=name[:2], ex=exercise.title, what=what, check=call,
                m=fmt.exercise_minutes(cells[exercise.index])))
        out = []
        for i, cell in enumerate(cells):
            out += [cell, cards[i]] if i in cards else [cell]
        return out

    @staticmethod
    def _hide_keeping_start(cell):
        # the cell began a sub-slide: its code and output go, the sub-slide stays
        cell.source = ""
        cell.outputs = []
        cell.metadata["transient"] = {"remove_source": True}

    # -- figures -----------------------------------------------------------------------
    def figures(self, cells):
        for i, cell in enumerate(cells):
            if cell.cell_type != "code" or not shown(cell):
                continue
            if not any("image/png" in out.get("data", {}) for out in cell.get("outputs", [])):
                continue
            if not fmt.has(cell, "show-code"):
                cell.metadata["transient"] = {"remove_source": True}
            if slide_type(cell) in ("-", "fragment") and i > 0:
                # a short caption just before the figure goes with it
                before = next((c for c in reversed(cells[:i]) if shown(c)), None)
                if (before is not None and before.cell_type == "markdown"
                        and slide_type(before) in ("-", "slide", "subslide")
                        and prose(before.source) <= CAPTION_WORDS
                        and not HEADING.search(before.source) and "<details>" not in before.source
                        and not fmt.has(before, "prediction")):
                    if slide_type(before) == "-":
                        set_slide_type(before, "subslide")
                    set_slide_type(cell, "-")
                else:
                    set_slide_type(cell, "subslide")
        return cells

    # -- predictions -------------------------------------------------------------------
    def predictions(self, cells):
        """An answer on its question's slide comes one step later."""
        for cell in cells:
            if fmt.has(cell, "answer") and shown(cell) and slide_type(cell) == "-":
                set_slide_type(cell, "fragment")
        return cells

    # -- title, goal and agenda ----------------------------------------------------------
    def title_and_agenda(self, cells, english, lang, words):
        first = next((i for i, c in enumerate(cells) if shown(c)), None)
        if first is None or cells[first].cell_type != "markdown":
            return cells
        blocks = paragraphs(cells[first].source)
        head = [blocks[0]]
        if len(blocks) > 1 and not HEADING.match(blocks[1]):
            head.append(blocks[1])
        rest = blocks[len(head):]
        title = copy.deepcopy(cells[first])
        title.source = "\n\n".join(head)
        agenda = markdown(f"### {words['agenda']}\n\n" + self.agenda(english, lang, words),
                          "subslide")
        new = [title, agenda]
        if english.name.startswith("00_"):
            new.append(markdown(f"### {words['setup_title']}\n\n{SETUP[lang]}", "subslide"))
        if rest:
            new.append(markdown("\n\n".join(rest), "subslide"))
        return cells[:first] + new + cells[first + 1:]

    @staticmethod
    def agenda(english, lang, words):
        if not english.exists():
            return ""
        stated = fmt.stated_minutes(fmt.load(english))
        parts = core_path.sections(english)
        if lang == "zh":  # the same sections, in the Chinese notebook's words
            zh = ROOT / "notebooks" / "zh" / english.name
            if zh.exists():
                titles = core_path.section_titles(zh)
                if len(titles) == len(parts):
                    parts = [dict(p, title=t) for p, t in zip(parts, titles)]
        items = []
        for part in parts:
            tag = f" ({words['optional']})" if part["optional"] else ""
            title = re.sub(r"^(\d+)\.", r"\1\\.", part["title"])  # not a numbered list
            items.append(f"- {title}{tag} · {part['minutes']} {words['minutes']}")
        lead = words["core"].format(m=stated) + "\n\n" if stated else ""
        return lead + "\n".join(items)

    # -- length ------------------------------------------------------------------------
    def split_long(self, cells):
        out = []
        words = height = 0
        for cell in cells:
            if not shown(cell):
                out.append(cell)
                continue
            if starts_slide(cell):
                words, height = 0, self._heading_to_come(cell)
            pieces = [cell]
            if cell.cell_type == "markdown":
                pieces = self._split_markdown(cell, FILL_WORDS - words, SLIDE_LINES - height)
            elif cell.cell_type == "code":
                pieces = self._split_code(cell)
            for piece in pieces:
                w, h = prose(piece.source) if piece.cell_type == "markdown" else 0, lines(piece)
                if (words + w > FILL_WORDS or height + h > SLIDE_LINES) and (words or height) \
                        and not starts_slide(piece):
                    set_slide_type(piece, "subslide")
                    words, height = 0, self._heading_to_come(piece)
                words, height = words + w, height + h
                out.append(piece)
        return out

    @staticmethod
    def _heading_to_come(cell):
        """Lines of the heading `headings` will put above a sub-slide starting with `cell`."""
        return 0 if cell.cell_type == "markdown" and HEADING.match(cell.source.lstrip()) else 2

    @staticmethod
    def _split_code(cell):
        """A code cell too long for one slide as several: its code in runs of whole blocks
        (split at blank lines where it can), the output after the last run, or on a sub-slide
        of its own when it does not fit there either. Only the deck changes."""
        budget = SLIDE_LINES - 2  # under a heading
        if lines(cell) <= budget:
            return [cell]
        code = cell.source.splitlines()
        hidden = cell.metadata.get("transient", {}).get("remove_source")
        runs, current = [], []
        if not hidden:
            for k, line in enumerate(code):
                if len(current) >= budget or (
                        not line.strip() and len(current) >= budget // 2
                        and k + 1 < len(code) and code[k + 1][:1] not in (" ", ")", "]", "}")):
                    if current:
                        runs.append(current)
                    current = []
                    if not line.strip():
                        continue
                current.append(line)
            if current:
                runs.append(current)
        pieces = []
        for k, run in enumerate(runs):
            piece = copy.deepcopy(cell)
            piece.source = "\n".join(run).strip("\n")
            piece.outputs = []
            if k:
                set_slide_type(piece, "subslide")
            pieces.append(piece)
        outputs = copy.deepcopy(cell)
        outputs.source = ""
        outputs.metadata["transient"] = {"remove_source": True}
        if pieces and lines(pieces[-1]) + lines(outputs) <= budget:
            pieces[-1].outputs = cell.outputs
        elif cell.outputs:
            if pieces:
                set_slide_type(outputs, "subslide")
            pieces.append(outputs)
        return pieces or [cell]

    @staticmethod
    def _split_markdown(cell, words_left, lines_left):
        """The cell as one or more cells, each within a slide's budget where paragraphs (or, in
        a paragraph too long for one slide, sentences) allow."""
        blocks = [piece for block in paragraphs(cell.source) for piece in sentences(block)]
        if len(blocks) < 2:
            return [cell]
        groups, current, w, h = [], [], 0, 0
        budget_w, budget_h = max(words_left, 0), max(lines_left, 0)
        for block in blocks:
            bw, bh = prose(block), lines(markdown(block))
            if current and (w + bw > budget_w or h + bh > budget_h):
                groups.append(current)
                current, w, h = [], 0, 0
                budget_w, budget_h = FILL_WORDS, SLIDE_LINES - 2
            current.append(block)
            w, h = w + bw, h + bh
        groups.append(current)
        if len(groups) == 1:
            return [cell]
        out = []
        for k, group in enumerate(groups):
            piece = copy.deepcopy(cell)
            piece.source = "\n\n".join(group)
            if k:
                set_slide_type(piece, "subslide")
            out.append(piece)
        return out

    # -- headings ----------------------------------------------------------------------
    def headings(self, cells, words):
        out, section = [], ""
        first = True
        for cell in cells:
            if not shown(cell):
                out.append(cell)
                continue
            begins = first or starts_slide(cell)
            first = False
            own = cell.cell_type == "markdown" and HEADING.match(cell.source.lstrip())
            if begins and not own and section:
                out.append(markdown(f"### {section} {words['cont']}", slide_type(cell)))
                set_slide_type(cell, "-")
            if cell.cell_type == "markdown":
                found = HEADING.findall(cell.source)
                if found:
                    section = found[-1][1].removesuffix(words["cont"]).strip()
            out.append(cell)
        return out


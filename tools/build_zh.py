"""Build the Chinese edition: notebooks/zh/NN_topic.ipynb from the English notebook and its text.

Usage: python tools/build_zh.py            build every Chinese notebook (run by `make notebooks`)
       python tools/build_zh.py --check    change nothing; exit 1 if a build would differ
       python tools/build_zh.py --todo NN  print the entries notebook NN still needs, to paste

One source: the English notebook holds the code cells and their stored outputs, and
translations/zh/NN_topic.md holds the Chinese of every markdown cell, one entry per cell:

    <!-- cell 6f1c2a0e en:3b9d0c41aa -->
    ## 1. 查询、键和值
    …

`6f1c2a0e` is the cell's id in the English notebook and `3b9d0c41aa` a fingerprint of the English
text the entry translates. A cell that starts a slide of an authored lecture has a title
(metadata.minitf.title, tools/course_format.py); its Chinese is an entry of its own,
`<!-- title 6f1c2a0e en:… -->` followed by one line. A code cell whose comments and strings a
Chinese reader should read in Chinese has an entry `<!-- code 6f1c2a0e en:… -->` holding the
whole cell in a ```python block, the same code with its comments and string literals in
Chinese (tests/notebooks/test_zh.py checks that nothing else differs); a code cell without one
is the English cell. The built notebook is the English one with
each markdown cell's text replaced by its entry (and each slide title by its own): same cells,
same ids, the same code and outputs.
When an English markdown cell changes, its fingerprint no longer matches and the build (and
tests/notebooks/test_zh.py) names the cell until its Chinese is brought up to date and the
fingerprint rewritten; `--todo` prints the English text and the new marker of every such cell.
"""

import argparse
import hashlib
import re
import sys
from pathlib import Path

import course_format as fmt
import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
ZH_DIR = NOTEBOOK_DIR / "zh"
TEXT_DIR = ROOT / "translations" / "zh"
MARKER = re.compile(r"^<!-- (cell|title|code) (\S+) en:([0-9a-f]{10}) -->[ \t]*$",
                    re.MULTILINE)
CODE_BLOCK = re.compile(r"\A```python\n(.*?)\n```\Z", re.DOTALL)
# rise.css names the shipped font by a url relative to itself; one folder deeper, one more "../".
RISE_CSS_FONT = 'url("../minitf/'


class Problem(Exception):
    pass


def fingerprint(text):
    """A short hash of an English cell's text: its translation records the one it was made from."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def read_text(path):
    """{cell id: (fingerprint, Chinese text)} from a translation file (UTF-8; a byte-order
    mark, as Windows editors write, is dropped); a slide title's entry under "title:" + its
    cell id."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise Problem(f"{path}: not UTF-8 ({e.reason} at byte {e.start}); save it as UTF-8") \
            from None
    marks = list(MARKER.finditer(text))
    if text[: marks[0].start() if marks else len(text)].strip():
        raise Problem(f"{path}: text before the first '<!-- cell … -->' marker")
    entries = {}
    for mark, following in zip(marks, marks[1:] + [None]):
        kind, cell_id, en = mark.groups()
        cell_id = cell_id if kind == "cell" else f"{kind}:{cell_id}"
        if cell_id in entries:
            raise Problem(f"{path}: cell {cell_id} has two entries")
        body = text[mark.end(): following.start() if following else len(text)].strip("\n")
        if kind == "code":
            block = CODE_BLOCK.match(body)
            if not block:
                raise Problem(f"{path}: the entry of code cell {cell_id[5:]} is not one "
                              "```python block")
            body = block.group(1)
        entries[cell_id] = (en, body)
    return entries


def read_notebook(nb_path):
    """The notebook at nb_path, every cell with an id; a Problem naming the file otherwise."""
    try:
        nb = nbformat.read(nb_path, as_version=4)
    except (OSError, ValueError, nbformat.reader.NotJSONError) as e:  # JSON, UTF-8 errors too
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise Problem(f"{nb_path}: not a notebook nbformat can read ({first[:120]})") from None
    for index, cell in enumerate(nb.cells):
        if not cell.get("id"):
            raise Problem(f"{nb_path}: cell {index} has no id (an nbformat 4.4 notebook?); "
                          "open and save it in JupyterLab, which gives every cell one")
    return nb


def text_path(nb_path):
    return TEXT_DIR / (Path(nb_path).stem + ".md")


def problems(nb_path, entries=None):
    """What keeps the Chinese edition of one notebook from being built, one line each."""
    nb = read_notebook(nb_path)
    if entries is None:
        path = text_path(nb_path)
        if not path.exists():
            return [f"{path.relative_to(ROOT)}: missing (run --todo {Path(nb_path).stem[:2]})"]
        entries = read_text(path)
    found, where = [], Path(nb_path).name
    ids = set()
    for index, cell in enumerate(nb.cells):
        title = fmt.slide_title(cell)
        if title:
            ids.add(f"title:{cell.id}")
            if f"title:{cell.id}" not in entries:
                found.append(f"{where} cell {index} ({cell.id}): its slide title has no "
                             f"Chinese: {title!r}")
            elif entries[f"title:{cell.id}"][0] != fingerprint(title):
                found.append(f"{where} cell {index} ({cell.id}): its slide title changed in "
                             f"English since its Chinese was written: {title!r}")
        if cell.cell_type == "code" and f"code:{cell.id}" in entries:
            ids.add(f"code:{cell.id}")
            if entries[f"code:{cell.id}"][0] != fingerprint(cell.source):
                found.append(f"{where} cell {index} ({cell.id}): its code changed in English "
                             f"since its Chinese comments and strings were written")
        if cell.cell_type != "markdown":
            continue
        ids.add(cell.id)
        first = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else ""
        if cell.id not in entries:
            found.append(f"{where} cell {index} ({cell.id}) has no Chinese: {first!r}")
        elif entries[cell.id][0] != fingerprint(cell.source):
            found.append(f"{where} cell {index} ({cell.id}) changed in English since its "
                         f"Chinese was written: {first!r}")
    for cell_id in entries.keys() - ids:
        found.append(f"{where}: the Chinese of {cell_id.replace(':', ' of cell ')} has no "
                     "English (deleted? delete its entry)")
    return found


def build(nb_path):
    """The Chinese notebook for one English notebook, as nbformat text. Raises Problem.

    Its outputs are those the Chinese notebook stored when it was last executed, for every
    code cell whose code is unchanged since (`make notebooks` executes it again after the
    build); a new or changed cell has the English cell's until then."""
    entries = read_text(text_path(nb_path)) if text_path(nb_path).exists() else None
    found = problems(nb_path, entries)
    if found:
        raise Problem("\n".join(found))
    nb = read_notebook(nb_path)
    zh_path = ZH_DIR / Path(nb_path).name
    ran = {c.id: c for c in read_notebook(zh_path).cells} if zh_path.exists() else {}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = entries[cell.id][1]
        elif f"code:{cell.id}" in entries:
            cell.source = entries[f"code:{cell.id}"][1]
        if fmt.slide_title(cell):
            cell.metadata["minitf"]["title"] = entries[f"title:{cell.id}"][1].strip()
        before = ran.get(cell.id)
        if cell.cell_type == "code" and before is not None and before.source == cell.source:
            cell.outputs, cell.execution_count = before.outputs, before.execution_count
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"  # as nbformat.write stores it


def without_outputs(text):
    """A notebook's text with its code cells' outputs and execution counts left out: what
    the build decides (the outputs come from executing the Chinese notebook)."""
    nb = nbformat.reads(text, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nbformat.writes(nb)


def todo(nb_path):
    """Entries to paste into the translation file: each missing or stale cell, its English text."""
    path = text_path(nb_path)
    entries = read_text(path) if path.exists() else {}
    nb = read_notebook(nb_path)
    out = []
    for index, cell in enumerate(nb.cells):
        title = fmt.slide_title(cell)
        old = entries.get(f"title:{cell.id}")
        if title and not (old and old[0] == fingerprint(title)):
            out.append(f"<!-- title {cell.id} en:{fingerprint(title)} -->")
            was = f", its Chinese was: {old[1]}" if old else ""
            out.append(f"<!-- todo: the slide title of cell {index}{was} -->")
            out.append(title + "\n")
        old = entries.get(f"code:{cell.id}")
        if cell.cell_type == "code" and old and old[0] != fingerprint(cell.source):
            out.append(f"<!-- code {cell.id} en:{fingerprint(cell.source)} -->")
            out.append(f"<!-- todo: the code of cell {index} changed; its Chinese was:\n"
                       f"{old[1]}\n -->")
            out.append(f"```python\n{cell.source}\n```\n")
        if cell.cell_type != "markdown":
            continue
        old = entries.get(cell.id)
        if old and old[0] == fingerprint(cell.source):
            continue
        out.append(f"<!-- cell {cell.id} en:{fingerprint(cell.source)} -->")
        was = f", its Chinese was:\n{old[1]}\n" if old else ""
        out.append(f"<!-- todo: cell {index}, {'changed' if old else 'new'}{was} -->")
        out.append(cell.source + "\n")
    return "\n".join(out)


def rise_css():
    return (NOTEBOOK_DIR / "rise.css").read_text(encoding="utf-8").replace(
        RISE_CSS_FONT, 'url("../../minitf/')


def outputs():
    """{path of a built file: its text} for the whole Chinese edition, and the problems."""
    built, found = {ZH_DIR / "rise.css": rise_css()}, []
    for nb_path in sorted(NOTEBOOK_DIR.glob("*.ipynb")):
        try:
            built[ZH_DIR / nb_path.name] = build(nb_path)
        except Problem as err:
            found.append(str(err))
    english = {ZH_DIR / p.name for p in NOTEBOOK_DIR.glob("*.ipynb")}
    for orphan in sorted(set(ZH_DIR.glob("*.ipynb")) - english):
        found.append(f"{orphan.relative_to(ROOT)} has no English notebook (delete it)")
    return built, found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; report")
    parser.add_argument("--todo", metavar="NN", help="print what notebook NN still needs")
    args = parser.parse_args(argv)
    if args.todo:
        matches = sorted(NOTEBOOK_DIR.glob(f"{args.todo}*.ipynb"))
        if len(matches) != 1:
            print(f"build_zh: no single notebook starts with {args.todo!r}", file=sys.stderr)
            return 2
        try:
            print(todo(matches[0]) or f"{matches[0].name}: every markdown cell has its Chinese")
        except Problem as e:
            print(f"build_zh: {e}", file=sys.stderr)
            return 1
        return 0
    built, found = outputs()
    stale = [p for p, text in built.items()
             if not p.exists() or p.read_text(encoding="utf-8") != text]
    if not args.check:
        ZH_DIR.mkdir(exist_ok=True)
        for path in stale:
            path.write_text(built[path], encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
        stale = []
    for path in stale:
        print(f"build_zh: {path.relative_to(ROOT)} differs from what the build gives",
              file=sys.stderr)
    for line in found:
        print(f"build_zh: {line}", file=sys.stderr)
    if found:
        print("build_zh: translate those cells in translations/zh/ (`python tools/build_zh.py "
              "--todo NN` prints them; CONTRIBUTING.md says how)", file=sys.stderr)
    return 1 if found or stale else 0


if __name__ == "__main__":
    sys.exit(main())

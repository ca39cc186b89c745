"""Build minitf/figures/fonts/minitf-cjk.otf: a subset of Noto Sans CJK SC for plots and slides.

The full Noto Sans CJK font is about 16 MB; the course only needs the characters a learner is
likely to type, so we keep GB2312's common punctuation, full-width forms and its 3,755
level-1 hanzi (which include every Chinese numeral), plus every CJK character the notebooks
(cells and stored outputs) and the minitf package actually use, such as 熵 in 交叉熵.
tests/tools/test_slides.py fails when a notebook uses a character the font lacks: run this again.
The result is renamed so it can never be mistaken for the full font.

Usage: python tools/make_cjk_font.py SOURCE [FACE_INDEX]

SOURCE is NotoSansCJK-Regular.ttc (face 2 is SC) or NotoSansCJKsc-Regular.otf (face 0), e.g. from
the noto-cjk-sans-otc wheel on PyPI or Debian's fonts-noto-cjk package.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools" / "slides"))
from inspect_decks import CJK  # noqa: E402  (the characters the decks give to this font)

OUT = ROOT / "minitf" / "figures" / "fonts" / "minitf-cjk.otf"
FAMILY = "minitf CJK"
PS_NAME = "minitfCJK-Regular"

# Numerals a number-to-Chinese task may use beyond what the notebooks print today.
EXTRA = "〇两亿"


def gb2312_rows(rows):
    """Characters of the given GB2312 rows (1-based, 94 cells each)."""
    raw = bytes(b for row in rows for cell in range(1, 95) for b in (0xA0 + row, 0xA0 + cell))
    return {c for c in raw.decode("gb2312", errors="ignore") if not c.isspace()}


def _texts(value):
    """Every string inside a notebook's JSON (sources, outputs, metadata)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)


def used_chars(root=ROOT):
    """{character: first file using it} for every CJK character in notebooks/ (the Chinese
    edition in notebooks/zh/ included) and minitf/."""
    found = {}
    notebooks = (sorted((root / "notebooks").glob("*.ipynb"))
                 + sorted((root / "notebooks" / "zh").glob("*.ipynb")))
    for nb in notebooks:
        for text in _texts(json.loads(nb.read_text(encoding="utf-8"))):
            for c in CJK.findall(text):
                found.setdefault(c, nb.name)
    for py in sorted((root / "minitf").rglob("*.py")):
        for c in CJK.findall(py.read_text(encoding="utf-8")):
            found.setdefault(c, str(py.relative_to(root)))
    return found


def charset(used):
    """GB2312's punctuation, full-width forms and level-1 hanzi, EXTRA and `used`."""
    # Row 1: CJK punctuation, row 3: full-width ASCII, rows 16-55: level-1 hanzi.
    return sorted(gb2312_rows([1, 3, *range(16, 56)]) | set(EXTRA) | set(used))


def main(source, face=2):
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(source, fontNumber=face, recalcTimestamp=False)
    options = subset.Options()
    # matplotlib lays text out glyph by glyph (no GSUB/GPOS) and hints with FreeType's
    # autohinter, so layout tables, vertical metrics and font hints would only add bytes.
    options.layout_features = []
    options.drop_tables += ["BASE", "GDEF", "GPOS", "GSUB", "VORG", "vhea", "vmtx"]
    options.hinting = False
    options.name_IDs = [0, 1, 2, 3, 4, 5, 6, 13, 14]  # keep copyright and licence entries
    options.name_languages = [0x409]
    options.notdef_outline = True
    used = used_chars()
    chars = charset(used)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[ord(c) for c in chars])
    subsetter.subset(font)
    missing = [c for c in chars if ord(c) not in font.getBestCmap()]
    # GB2312 row 1 has a few symbols Noto's SC face maps elsewhere; a notebook's must be there.
    lost = sorted(set(missing) & set(used))
    if lost:
        sys.exit(f"{source} has no glyph for {''.join(lost)}, which the notebooks use")

    names = font["name"]
    for record in list(names.names):
        if record.nameID in (1, 3, 4, 6):
            names.removeNames(nameID=record.nameID)
    names.setName(FAMILY, 1, 3, 1, 0x409)
    names.setName(f"{PS_NAME};subset of Noto Sans CJK SC", 3, 3, 1, 0x409)
    names.setName(FAMILY, 4, 3, 1, 0x409)
    names.setName(PS_NAME, 6, 3, 1, 0x409)
    cff = font["CFF "].cff
    cff.fontNames = [PS_NAME]
    cff.topDictIndex[0].FullName = FAMILY
    cff.topDictIndex[0].FamilyName = FAMILY

    OUT.parent.mkdir(parents=True, exist_ok=True)
    font.save(OUT)
    print(f"wrote {OUT} ({len(font.getBestCmap())} characters mapped, "
          f"{OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))

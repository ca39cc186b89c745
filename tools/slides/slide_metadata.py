"""Set the slide metadata of a notebook: RISE's settings and cells' slide types.

Usage:
    python tools/slides/slide_metadata.py NOTEBOOK [--rise] [CELL=TYPE ...] [--list]

--rise       writes RISE_SETTINGS into the notebook's metadata.rise (live slides in JupyterLab)
CELL=TYPE    sets the slide_type of the cell with id CELL (or at index CELL) to TYPE, one of
             slide, subslide, fragment, -, skip, notes
--list       prints every cell: index, id, slide type, slide number (h.v) and first line

Only metadata changes; sources and outputs are untouched, so no re-execution is needed.
The notebook is written back in nbformat's layout (one-space indent, as Jupyter writes it).
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from course_format import SLIDE_TYPES  # noqa: E402  (the format's one list)

# The board RISE's chalkboard draws on, for a lecture offline: jupyterlab-rise asks for its
# board, chalk and sponge pictures under /static/rise/img/, which it does not serve, so its
# board was see-through and its white chalk invisible on the white slides. A white board (a
# one-pixel picture, inline), dark markers in four colours with the crosshair cursor, and an
# inline grey sponge need nothing from the server.
_WHITE = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR42mP4"
          "DwQACfsD/Wj6HMwAAAAASUVORK5CYII=")
_GREY = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAYAAADED76LAAAAE0lEQVR42mM4"
         "ceLEf3yYYWQoAAAp2tXBIzzdcAAAAABJRU5ErkJggg==")
_MARKERS = [{"color": color, "cursor": "crosshair"} for color in (
    "rgba(25,25,25,1)", "rgba(200,30,30,1)", "rgba(30,70,200,1)", "rgba(20,130,50,1)")]
CHALKBOARD = {
    "theme": "whiteboard",
    "background": ["rgba(127,127,127,.1)", _WHITE],
    "grid": {"color": "rgba(170,190,230,0.5)", "distance": 60, "width": 1},
    "boardmarkers": _MARKERS,
    "chalks": _MARKERS,
    "eraser": {"src": _GREY, "radius": 20},
}
# RISE (jupyterlab-rise) reads these from the notebook's metadata: a 1280x720 deck like the
# exported one, a slide that is too tall scrolls rather than being cut off, and nothing
# starts by itself when the notebook opens. The "white" theme uses reveal.js's own fonts;
# RISE's default theme ("simple") fetches Google fonts, an error offline.
# notebooks/rise.css sets the sizes and fonts.
RISE_SETTINGS = {
    "theme": "white",
    "autolaunch": False,
    "width": 1280,
    "height": 720,
    "scroll": True,
    "center": False,
    "transition": "none",
    "enable_chalkboard": True,  # the notes ask for a board here and there ([ or ] on a slide)
    "chalkboard": CHALKBOARD,
    "slideNumber": "c/t",
}


def slide_numbers(cells):
    """[(h, v)] for each cell, as the exported deck numbers its slides (from 0)."""
    h, v, out = -1, 0, []
    for cell in cells:
        kind = cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")
        if kind == "slide" or h < 0:
            h, v = h + 1, 0
        elif kind == "subslide":
            v += 1
        out.append((h, v))
    return out


def set_types(nb, changes):
    """Apply {cell id or index: slide type}; a ValueError names an unknown cell or type."""
    by_id = {cell.get("id"): cell for cell in nb["cells"]}
    for key, kind in changes.items():
        if kind not in SLIDE_TYPES:
            raise ValueError(f"slide type {kind!r} is not one of {', '.join(SLIDE_TYPES)}")
        cell = by_id.get(key)
        if cell is None and key.isdigit() and int(key) < len(nb["cells"]):
            cell = nb["cells"][int(key)]
        if cell is None:
            raise ValueError(f"no cell with id or index {key!r}")
        cell.setdefault("metadata", {})["slideshow"] = {"slide_type": kind}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("changes", nargs="*", metavar="CELL=TYPE")
    parser.add_argument("--rise", action="store_true")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_intermixed_args(argv)
    nb = json.loads(args.notebook.read_text(encoding="utf-8"))
    try:
        pairs = [change.split("=", 1) for change in args.changes]
        bad = [change for change, pair in zip(args.changes, pairs) if len(pair) != 2]
        if bad:
            raise ValueError(f"expected CELL=TYPE, got {bad[0]!r}")
        set_types(nb, dict(pairs))
    except ValueError as err:
        print(f"slide_metadata: {args.notebook}: {err}", file=sys.stderr)
        return 2
    if args.rise:
        nb["metadata"]["rise"] = dict(RISE_SETTINGS)
    if args.changes or args.rise:
        text = json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
        args.notebook.write_text(text, encoding="utf-8")
    if args.list:
        for i, (cell, (h, v)) in enumerate(zip(nb["cells"], slide_numbers(nb["cells"]))):
            kind = cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")
            first = "".join(cell["source"]).strip().split("\n")[0][:60]
            print(f"{i:3d} {cell.get('id', ''):>10s} {kind:9s} {h + 1}.{v + 1} "
                  f"{cell['cell_type'][:2]} {first}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

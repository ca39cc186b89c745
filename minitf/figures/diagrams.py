"""The Transformer drawn in code: boxes, arrows and labels, one function per diagram.

Every function returns a ``matplotlib.figure.Figure``; a notebook shows it as a cell's last
value, a script saves it with ``fig.savefig(...)``. The figures are closed in pyplot as soon as
they are made, so a notebook shows each once and nothing piles up in pyplot's list.

One colour per kind of block across all diagrams (``COLORS``): attention orange, feed-forward
blue, normalisation yellow, embeddings pink, positions lavender, linear maps periwinkle,
softmax green, data white. ``highlight=`` outlines the part a notebook is about in red; each
function's docstring lists its parts, and an unknown name is an error that lists them too.
Every box has a ``gid`` (the model's own names where it has them: ``decoder.cross_attn``,
``norm1``) and its label the gid plus ``.label``, so tests can find them. Coordinates inside a
figure are inches from its lower-left corner. Notebooks 00 to 11 each show one.

Besides the architecture, five board drawings for the lectures, the pictures a lecturer would
otherwise draw by hand: one query against its keys with The Illustrated Transformer's numbers
(``single_query``, notebook 01), Q's column blocks becoming the heads (``head_split``, 03),
cross-attention's rectangle beside the masked square (``cross_attention``, 06), a beam search
tree on notebook 07's toy table (``beam_tree``) and the KV cache growing a row a step
(``kv_cache``, 07). A decoder-only model for notebook 11 (``decoder_only``).
"""

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle
from matplotlib.path import Path as _Path

from .labels import label
from .viz import use_cjk_font

__all__ = [
    "COLORS", "HIGHLIGHT_COLOR", "PARTS", "attention_flow", "beam_tree", "cross_attention",
    "decoder_layer", "decoder_only", "encoder_layer", "generation_loop", "head_split", "kv_cache",
    "multi_head", "referent_model", "save_gallery", "single_query", "transformer",
]

COLORS = {
    "attention": "#F9D3A8",
    "ffn": "#C3E1F4",
    "norm": "#F6EDB0",
    "embed": "#F6C8D0",
    "position": "#DDD0EE",
    "linear": "#D0D8F2",
    "softmax": "#CBE8C5",
    "data": "#FFFFFF",
    "mask": "#E2E2E2",
    "stack": "#ECE4D8",  # a whole encoder or decoder drawn as one box
}
# Head 1..4 in multi_head(), head 0..7 in head_split(): the first four are the same.
HEAD_COLORS = ("#A8DCD1", "#F4BFCB", "#CDBDEB", "#DCDD99",
               "#F2C6A4", "#B4CDEB", "#C9E3A6", "#E3C1E0")
HIGHLIGHT_COLOR = "#D62728"
EDGE_COLOR = "#505050"
INK = "#262626"  # text and arrows
NOTE_COLOR = "#5A5A5A"  # shapes and side notes
FONT = 10.5
SMALL = 10

# What ``highlight=`` accepts, per diagram.
PARTS = {
    "transformer": ("encoder", "decoder", "embedding", "positional", "attention",
                    "masked_attention", "cross_attention", "ffn", "norm", "memory", "generator"),
    "attention_flow": ("projections", "qkv", "scores", "mask", "softmax", "weighted_sum"),
    "multi_head": ("projections", "split", "heads", "concat", "output"),
    "encoder_layer": ("attention", "ffn", "norm", "residual"),
    "decoder_layer": ("masked_attention", "cross_attention", "ffn", "norm", "memory", "mask"),
    "generation_loop": ("encoder", "decoder", "feedback", "stop"),
    "referent_model": ("embedding", "positional", "encoder", "pointer"),
    "single_query": ("query", "keys", "scores", "scale", "softmax", "weighted_sum"),
    "head_split": ("columns", "split", "heads", "attention", "merge", "output"),
    "cross_attention": ("queries", "memory", "weights", "masked_self_attention"),
    "beam_tree": ("kept", "pruned", "finished", "ranking"),
    "kv_cache": ("cache", "new_rows", "query", "weights"),
    "decoder_only": ("embedding", "positional", "masked_attention", "ffn", "norm", "generator",
                     "answer"),
}


# --- drawing helpers: positions and sizes are in inches ---------------------------------

@dataclass(frozen=True)
class _Box:
    """Where a drawn box (or circle) sits: centre ``(x, y)``, width ``w``, height ``h``."""

    x: float
    y: float
    w: float
    h: float

    def left(self, dy=0.0):
        return (self.x - self.w / 2, self.y + dy)

    def right(self, dy=0.0):
        return (self.x + self.w / 2, self.y + dy)

    def top(self, dx=0.0):
        return (self.x + dx, self.y + self.h / 2)

    def bottom(self, dx=0.0):
        return (self.x + dx, self.y - self.h / 2)


def _lighter(highlight, parts):
    """Check ``highlight`` against ``parts``; return ``on(*names)``: is any of them lit?"""
    if isinstance(highlight, str):
        highlight = (highlight,)
    if highlight is not None and not isinstance(highlight, (list, tuple, set, frozenset)):
        raise TypeError(f"highlight must be a part's name or a list of them, got "
                        f"{type(highlight).__name__} {highlight!r:.60}; this diagram's parts "
                        f"are {list(parts)}")
    wrong = [h for h in highlight or () if not isinstance(h, str)]
    if wrong:
        raise TypeError(f"highlight must hold parts' names (str), got {wrong[0]!r:.60}; this "
                        f"diagram's parts are {list(parts)}")
    lit = set(highlight or ())
    unknown = sorted(lit - set(parts))
    if unknown:
        raise ValueError(f"cannot highlight {unknown}: this diagram's parts are {list(parts)}")
    return lambda *names: bool(lit.intersection(names))


def _canvas(width, height):
    """Axes filling a blank ``width`` × ``height`` inch figure, one data unit per inch."""
    use_cjk_font()
    fig = plt.figure(figsize=(width, height))
    plt.close(fig)  # the caller shows or saves it; pyplot must not show it a second time
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    return ax


def _text(ax, x, y, s, *, size=FONT, color=INK, ha="center", va="center", gid=None, **kw):
    return ax.text(x, y, s, fontsize=size, color=color, ha=ha, va=va, gid=gid,
                   linespacing=1.3, **kw)


def _box(ax, x, y, w, h, label, kind, *, gid, lit=False, size=FONT, dashed=False,
         facecolor=None, **text_kw):
    """A rounded box filled with the colour of its ``kind``, its label centred inside."""
    ax.add_patch(FancyBboxPatch(
        (x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0,rounding_size=0.06",
        facecolor=facecolor or COLORS[kind], edgecolor=HIGHLIGHT_COLOR if lit else EDGE_COLOR,
        linewidth=2.8 if lit else 1.1, linestyle="--" if dashed else "-", gid=gid, zorder=2))
    if label:
        _text(ax, x, y, label, size=size, gid=f"{gid}.label", zorder=3, **text_kw)
    return _Box(x, y, w, h)


def _add(ax, x, y, *, gid, lit=False, r=0.13):
    """The residual sum: a circle with a plus."""
    ax.add_patch(Circle((x, y), r, facecolor="white", gid=gid, zorder=2,
                        edgecolor=HIGHLIGHT_COLOR if lit else EDGE_COLOR,
                        linewidth=2.4 if lit else 1.1))
    ax.plot([x - 0.55 * r, x + 0.55 * r], [y, y], color=INK, lw=1.2, zorder=3)
    ax.plot([x, x], [y - 0.55 * r, y + 0.55 * r], color=INK, lw=1.2, zorder=3)
    return _Box(x, y, 2 * r, 2 * r)


def _arrow(ax, *points, lit=False, head=True, gid=None, color=INK, lw=1.3, dashed=False):
    """A line through ``points`` (turning at right angles), with an arrowhead at the last."""
    color, lw = (HIGHLIGHT_COLOR, 2.4) if lit else (color, lw)
    style = "-|>,head_length=0.5,head_width=0.22" if head else "-"
    ax.add_patch(FancyArrowPatch(
        path=_Path(points), arrowstyle=style, mutation_scale=16, color=color, linewidth=lw,
        joinstyle="miter", capstyle="butt", gid=gid, zorder=1.5,
        linestyle=(0, (4, 3)) if dashed else "-"))


def _dot(ax, point, *, lit=False):
    """A junction where a line splits in two."""
    ax.add_patch(Circle(point, 0.035, color=HIGHLIGHT_COLOR if lit else INK, zorder=3))


def _frame(ax, x0, y0, x1, y1, *, gid, lit=False, label="N×", side="left", name=None):
    """A dashed frame around a repeated block, "N×" (and a name) outside it on ``side``."""
    ax.add_patch(FancyBboxPatch(
        (x0, y0), x1 - x0, y1 - y0, boxstyle="round,pad=0,rounding_size=0.12",
        facecolor="#F6F6F6", edgecolor=HIGHLIGHT_COLOR if lit else "#8C8C8C",
        linewidth=2.8 if lit else 1.2, linestyle=(0, (5, 3)), gid=gid, zorder=0.5))
    # Bold from the Latin font alone: the CJK font has no bold face to fall back on.
    bold = dict(size=15, weight="bold", family="sans-serif", gid=f"{gid}.n")
    if side == "top":
        _text(ax, x1, y1 + 0.06, label, ha="right", va="bottom", **bold)
        return
    x, ha = (x0 - 0.12, "right") if side == "left" else (x1 + 0.12, "left")
    y = (y0 + y1) / 2
    _text(ax, x, y + (0.2 if name else 0), label, ha=ha, **bold)
    if name:
        _text(ax, x, y - 0.28, name, ha=ha, va="top", gid=f"{gid}.name",
              color=HIGHLIGHT_COLOR if lit else INK)


def _note(ax, box, s, *, gap=0.06, gid):
    """A grey note under ``box``: its shape, or what it does."""
    return _text(ax, box.x, box.y - box.h / 2 - gap, s, size=SMALL, color=NOTE_COLOR, va="top",
                 gid=gid)


def _causal_icon(ax, x, y, n=4, cell=0.075):
    """A tiny n × n causal mask centred at (x, y): dark where a query may attend."""
    for i in range(n):  # row i is query i, drawn from the top
        for j in range(n):
            ax.add_patch(Rectangle((x + (j - n / 2) * cell, y + (n / 2 - 1 - i) * cell), cell, cell,
                                   facecolor=INK if j <= i else "white", edgecolor=NOTE_COLOR,
                                   linewidth=0.5, zorder=3))


def _cell(ax, x0, y0, w, h, facecolor, *, gid=None, lit=False, label=None, size=FONT,
          color=INK):
    """A square-cornered cell from its lower-left corner: one entry or one row of a matrix."""
    ax.add_patch(Rectangle((x0, y0), w, h, facecolor=facecolor, gid=gid, zorder=2,
                           edgecolor=HIGHLIGHT_COLOR if lit else EDGE_COLOR,
                           linewidth=2.4 if lit else 0.9))
    if label:
        _text(ax, x0 + w / 2, y0 + h / 2, label, size=size, color=color, gid=f"{gid}.label",
              zorder=3)
    return _Box(x0 + w / 2, y0 + h / 2, w, h)


def _grid(ax, x0, y0, rows, cols, cw, ch, color, *, gid, lit=False):
    """A ``rows`` × ``cols`` matrix from its lower-left corner, row 0 on top; ``color(r, c)``
    fills entry (r, c), whose gid is ``gid.r.c``. The frame carries ``gid`` and the highlight."""
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((x0 + c * cw, y0 + (rows - 1 - r) * ch), cw, ch,
                                   facecolor=color(r, c), edgecolor=NOTE_COLOR, linewidth=0.6,
                                   gid=f"{gid}.{r}.{c}", zorder=2))
    ax.add_patch(Rectangle((x0, y0), cols * cw, rows * ch, facecolor="none", gid=gid, zorder=3,
                           edgecolor=HIGHLIGHT_COLOR if lit else EDGE_COLOR,
                           linewidth=2.8 if lit else 1.2))
    return _Box(x0 + cols * cw / 2, y0 + rows * ch / 2, cols * cw, rows * ch)


def _behind(color):
    """A text's background in ``color``: a label drawn on a grid hides the lines under it."""
    return dict(boxstyle="square,pad=0.08", facecolor=color, edgecolor="none")


def _num(value, digits=2):
    """A number as a slide prints it: a true minus sign, no "-0.00"."""
    return f"{value + 0.0:.{digits}f}".replace("-", "−")


def _tokens(ax, x, y, tokens, *, w=0.5, h=0.36, gap=0.06, gid, fed_back=()):
    """A row of token boxes from ``x``; those at ``fed_back`` in the prediction's colour."""
    return [_box(ax, x + w / 2 + i * (w + gap), y, w, h, token,
                 "softmax" if i in fed_back else "data", gid=f"{gid}{i}", size=SMALL)
            for i, token in enumerate(tokens)]


def _sine(ax, x, y, r=0.15, *, gid, lit=False):
    """The positional encoding: a circle holding one period of a sine wave."""
    ax.add_patch(Circle((x, y), r, facecolor=COLORS["position"], gid=gid, zorder=2,
                        edgecolor=HIGHLIGHT_COLOR if lit else EDGE_COLOR,
                        linewidth=2.4 if lit else 1.1))
    t = [i / 20 for i in range(21)]
    ax.plot([x - 0.7 * r + 1.4 * r * s for s in t],
            [y + 0.45 * r * math.sin(2 * math.pi * s) for s in t],
            color=INK, lw=1.1, zorder=3)
    return _Box(x, y, 2 * r, 2 * r)


# --- the diagrams -------------------------------------------------------------------------

def _stack(ax, x, bottom, sublayers, *, prefix, side, on, w):
    """Sub-layers from ``bottom`` upwards, each followed by Add & Norm (post-LN, as the paper).

    ``sublayers`` holds ``(text, kind, name, parts)``; the residual path of each runs on
    ``side`` of the column. Returns the boxes by name (``self_attn``, ``norm1``, ...).
    """
    sub_h, norm_h, gap, pitch = 0.46, 0.26, 0.10, 1.0
    sign = -1 if side == "left" else 1
    boxes, below = {}, None
    for i, (text, kind, name, parts) in enumerate(sublayers, start=1):
        y0 = bottom + (i - 1) * pitch
        sub = _box(ax, x, y0 + sub_h / 2, w, sub_h, text, kind, gid=f"{prefix}.{name}",
                   lit=on(*parts))
        norm = _box(ax, x, y0 + sub_h + gap + norm_h / 2, w, norm_h, label("add & norm"), "norm",
                    gid=f"{prefix}.norm{i}", lit=on("norm"))
        _arrow(ax, sub.top(), norm.bottom(), head=False)
        if below is not None:
            _arrow(ax, below.top(), sub.bottom())
        split = (x, y0 - 0.09)  # the residual path leaves the main line below the sub-layer
        _dot(ax, split, lit=on("norm"))
        edge_x = x + sign * (w / 2 + 0.2)
        _arrow(ax, split, (edge_x, split[1]), (edge_x, norm.y),
               norm.left() if side == "left" else norm.right(), lit=on("norm"))
        boxes[name], boxes[f"norm{i}"], below = sub, norm, norm
    return boxes


def transformer(highlight=None):
    """The whole encoder-decoder Transformer, drawn bottom to top as in the paper.

    Inputs are embedded (× √d_model) and added to the positional encoding; N encoder layers
    (self-attention, feed-forward, each with Add & Norm) turn them into the memory, which every
    decoder layer's cross-attention reads as keys and values. The decoder reads the outputs
    shifted right (masked self-attention, cross-attention, feed-forward), and the generator
    (Linear → softmax) turns its last vectors into next-token probabilities.

    ``highlight``: one or more of ``"encoder"``, ``"decoder"``, ``"embedding"``,
    ``"positional"``, ``"attention"``, ``"masked_attention"``, ``"cross_attention"``, ``"ffn"``,
    ``"norm"`` (Add & Norm and the residual paths), ``"memory"``, ``"generator"``. Shown in
    notebooks 00 and 04.
    """
    on = _lighter(highlight, PARTS["transformer"])
    ax = _canvas(10, 5.6)
    enc_x, dec_x, w, bottom = 2.65, 6.55, 2.5, 1.68

    # Embeddings and positions, one column each.
    for x, side, name, tokens in (
        (enc_x, -1, "src", label("transformer.inputs")),
        (dec_x, 1, "tgt", label("transformer.outputs")),
    ):
        _text(ax, x, 0.2, tokens, gid=f"{name}_tokens")
        embed = _box(ax, x, 0.7, w, 0.46, label("transformer.embedding"), "embed",
                     gid=f"{name}_embed", lit=on("embedding"))
        _arrow(ax, (x, 0.32), embed.bottom())
        plus = _add(ax, x, 1.24, gid=f"{name}_add", lit=on("positional"))
        _arrow(ax, embed.top(), plus.bottom())
        pe = _sine(ax, x + side * 0.6, 1.24, gid=f"{name}_pe", lit=on("positional"))
        _arrow(ax, pe.left() if side > 0 else pe.right(), plus.right() if side > 0 else plus.left())
        _text(ax, pe.x + side * 0.25, pe.y, label("transformer.positional"),
              ha="left" if side > 0 else "right", gid=f"{name}_pe_label")
        _arrow(ax, plus.top(), (x, bottom))

    enc = _stack(ax, enc_x, bottom, [
        (label("multi-head attention"), "attention", "self_attn", ("attention",)),
        (label("feed forward"), "ffn", "ffn", ("ffn",)),
    ], prefix="encoder", side="left", on=on, w=w)
    dec = _stack(ax, dec_x, bottom, [
        (label("transformer.masked attention"), "attention", "self_attn",
         ("attention", "masked_attention")),
        (label("transformer.cross attention"), "attention", "cross_attn",
         ("attention", "cross_attention")),
        (label("feed forward"), "ffn", "ffn", ("ffn",)),
    ], prefix="decoder", side="right", on=on, w=w)
    enc_top, dec_top = enc["norm2"].top()[1], dec["norm3"].top()[1]
    _frame(ax, enc_x - w / 2 - 0.4, bottom - 0.2, enc_x + w / 2 + 0.15, enc_top + 0.14,
           gid="encoder", lit=on("encoder"), side="left", name=label("transformer.encoder"))
    _frame(ax, dec_x - w / 2 - 0.15, bottom - 0.2, dec_x + w / 2 + 0.4, dec_top + 0.14,
           gid="decoder", lit=on("decoder"), side="right", name=label("transformer.decoder"))

    # The memory: the encoder's output, keys and values for every decoder cross-attention.
    cross = dec["cross_attn"]
    turn_x, high_y = (enc_x + w / 2 + dec_x - w / 2) / 2, enc_top + 0.45
    _arrow(ax, (enc_x, enc_top), (enc_x, high_y), (turn_x, high_y), (turn_x, cross.y),
           cross.left(), lit=on("memory"))
    _text(ax, (enc_x + turn_x) / 2, high_y + 0.05, label("transformer.memory"),
          va="bottom", gid="memory_label")
    _text(ax, (turn_x + cross.left()[0]) / 2, cross.y + 0.05, "K, V", va="bottom",
          gid="kv_label", size=SMALL)

    # The generator: Linear → softmax, one distribution per output position.
    linear = _box(ax, dec_x, dec_top + 0.36, w, 0.26, label("transformer.linear"), "linear",
                  gid="generator.linear", lit=on("generator"))
    softmax = _box(ax, dec_x, linear.y + 0.38, w, 0.26, label("transformer.softmax"), "softmax",
                   gid="generator.softmax", lit=on("generator"))
    _arrow(ax, (dec_x, dec_top), linear.bottom())
    _arrow(ax, linear.top(), softmax.bottom())
    _arrow(ax, softmax.right(), (softmax.right()[0] + 0.35, softmax.y))
    _text(ax, softmax.right()[0] + 0.45, softmax.y, label("transformer.probabilities"),
          ha="left", gid="outputs")
    return ax.figure


def attention_flow(highlight=None):
    """Self-attention in matrix form: X → Q, K, V → scores → (mask) → softmax → weights × V → Z.

    Every box carries the shape of what it holds (L tokens, model width d_model, key width
    d_k, value width d_v). ``highlight``: one or more of ``"projections"``, ``"qkv"``,
    ``"scores"``, ``"mask"``, ``"softmax"``, ``"weighted_sum"``. Shown in notebooks 01 and 02.
    """
    on = _lighter(highlight, PARTS["attention_flow"])
    ax = _canvas(10, 4.3)
    _text(ax, 0.25, 3.95, label("attention_flow.title"), size=12, ha="left",
          gid="title")
    _text(ax, 9.75, 3.95, r"$Z = \mathrm{softmax}\left(\dfrac{QK^\top}{\sqrt{d_k}}\right)V$",
          size=12, ha="right", gid="formula")
    rows = {"Q": 3.0, "K": 1.95, "V": 0.9}
    x_box = _box(ax, 0.6, rows["K"], 0.6, 1.5, "X", "data", gid="X", size=14)
    _note(ax, x_box, r"$L \times d_{\mathrm{model}}$", gid="X.shape")

    # X times W^Q, W^K, W^V: one branch per matrix.
    split_x = 1.2
    _dot(ax, (split_x, rows["K"]))
    ax.plot([x_box.right()[0], split_x], [rows["K"]] * 2, color=INK, lw=1.3)
    qkv = {}
    for name, y in rows.items():
        width = "d_v" if name == "V" else "d_k"
        weight = _box(ax, 1.9, y, 0.75, 0.5, f"$W^{name}$", "linear", gid=f"W_{name}", size=13,
                      lit=on("projections"))
        _note(ax, weight, rf"$d_{{\mathrm{{model}}}} \times {width}$", gid=f"W_{name}.shape")
        _arrow(ax, (split_x, rows["K"]), (split_x, y), weight.left())
        qkv[name] = _box(ax, 3.0, y, 0.6, 0.5, name, "data", gid=name, size=14, lit=on("qkv"))
        _note(ax, qkv[name], rf"$L \times {width}$", gid=f"{name}.shape")
        _arrow(ax, weight.right(), qkv[name].left())

    # Scores, mask, softmax, then the weighted sum of the values.
    y = (rows["Q"] + rows["K"]) / 2
    scores = _box(ax, 4.55, y, 1.2, 0.66,
                  label("attention_flow.scores") + "\n" + r"$QK^\top/\sqrt{d_k}$", "data",
                  gid="scores", lit=on("scores"))
    _note(ax, scores, r"$L \times L$", gid="scores.shape")
    elbow = 3.7
    _arrow(ax, qkv["Q"].right(), (elbow, rows["Q"]), (elbow, y + 0.15), scores.left(0.15))
    _arrow(ax, qkv["K"].right(), (elbow, rows["K"]), (elbow, y - 0.15), scores.left(-0.15))
    mask = _box(ax, 5.95, y, 0.95, 0.66, label("attention_flow.mask"), "mask", gid="mask",
                dashed=True, lit=on("mask"))
    _note(ax, mask, label("attention_flow.mask note"), gid="mask.note")
    softmax = _box(ax, 7.2, y, 0.95, 0.66, label("attention_flow.softmax"), "softmax",
                   gid="softmax", lit=on("softmax"))
    _note(ax, softmax, label("attention_flow.weights") + "\n" + r"$L \times L$",
          gid="softmax.note")
    times_v = _box(ax, 8.35, y, 0.7, 0.66, r"$\times\ V$", "data", gid="times_v", size=13,
                   lit=on("weighted_sum"))
    z = _box(ax, 9.4, y, 0.55, 0.66, "Z", "data", gid="Z", size=14)
    _note(ax, z, r"$L \times d_v$", gid="Z.shape")
    for a, b in ((scores, mask), (mask, softmax), (softmax, times_v), (times_v, z)):
        _arrow(ax, a.right(), b.left())
    _arrow(ax, qkv["V"].right(), (times_v.x, rows["V"]), times_v.bottom(), lit=on("weighted_sum"))
    return ax.figure


def multi_head(highlight=None):
    """Multi-head attention with h = 4 heads: project, split, attend per head, concat, W^O.

    Head i takes the contiguous column block i of Q, K and V (columns i·d_k to (i+1)·d_k);
    the heads' outputs are put side by side again and mixed by W^O. ``highlight``: one or more
    of ``"projections"``, ``"split"``, ``"heads"``, ``"concat"``, ``"output"``. Shown in
    notebook 03.
    """
    on = _lighter(highlight, PARTS["multi_head"])
    ax = _canvas(10, 5.6)
    _text(ax, 0.25, 5.3, label("multi_head.title"), size=12, ha="left", gid="title")
    _text(ax, 9.75, 5.3, r"$\mathrm{MultiHead}(X) = \mathrm{Concat}(\mathrm{head}_1, \ldots,"
          r" \mathrm{head}_h)\,W^O$", size=12, ha="right", gid="formula")
    rows = {"Q": 4.35, "K": 3.75, "V": 3.15}
    x_box = _box(ax, 0.55, rows["K"], 0.6, 1.7, "X", "data", gid="X", size=14)
    _note(ax, x_box, r"$L \times d_{\mathrm{model}}$", gid="X.shape")
    split_x, block_w, x0 = 1.05, 1.15, 2.75
    _dot(ax, (split_x, rows["K"]))
    ax.plot([x_box.right()[0], split_x], [rows["K"]] * 2, color=INK, lw=1.3)
    for name, y in rows.items():
        weight = _box(ax, 1.7, y, 0.7, 0.5, f"$W^{name}$", "linear", gid=f"W_{name}", size=13,
                      lit=on("projections"))
        _arrow(ax, (split_x, rows["K"]), (split_x, y), weight.left())
        _arrow(ax, weight.right(), (x0, y))
        for i in range(4):
            _box(ax, x0 + (i + 0.5) * block_w, y, block_w, 0.5, f"${name}_{i + 1}$", "data",
                 gid=f"{name}{i + 1}", facecolor=HEAD_COLORS[i], lit=on("split"), size=12)
    _note(ax, weight, label("multi_head.each"), gid="W.shape")
    _text(ax, x0 + 4 * block_w + 0.15, rows["K"], r"$L \times d_{\mathrm{model}}$" + "\n"
          + label("multi_head.blocks") + "\n" + r"$d_k = d_{\mathrm{model}}/h$", size=SMALL,
          color=NOTE_COLOR, ha="left", gid="qkv.shape")

    head_y, concat_y = 1.95, 0.85
    _text(ax, x0 - 0.15, 2.3, label("multi_head.split"), ha="right", gid="split_label")
    for i in range(4):
        cx = x0 + (i + 0.5) * block_w
        _text(ax, cx, rows["Q"] + 0.4, label("head", i=i + 1), color=INK, gid=f"head{i + 1}.title")
        head = _box(ax, cx, head_y, 0.95, 0.6, label("multi_head.attention"), "attention",
                    gid=f"head{i + 1}", lit=on("heads"))
        _arrow(ax, (cx, rows["V"] - 0.25), head.top())
        out = _box(ax, cx, concat_y, block_w, 0.5, f"$Z_{i + 1}$", "data", gid=f"Z{i + 1}",
                   facecolor=HEAD_COLORS[i], lit=on("concat"), size=12)
        _arrow(ax, head.bottom(), out.top())
    _text(ax, x0 + 4 * block_w + 0.15, head_y,
          r"$\mathrm{head}_i = \mathrm{softmax}\left(\dfrac{Q_i K_i^\top}{\sqrt{d_k}}\right) V_i$",
          size=SMALL, ha="left", gid="head_formula")
    _text(ax, x0 - 0.15, concat_y, label("concat"), ha="right", gid="concat_label")
    w_o = _box(ax, 8.05, concat_y, 0.7, 0.5, "$W^O$", "linear", gid="W_O", size=13,
               lit=on("output"))
    _note(ax, w_o, r"$d_{\mathrm{model}} \times d_{\mathrm{model}}$", gid="W_O.shape")
    _arrow(ax, (x0 + 4 * block_w, concat_y), w_o.left())
    output = _box(ax, 9.3, concat_y, 0.75, 0.5, label("output"), "data", gid="output")
    _note(ax, output, r"$L \times d_{\mathrm{model}}$", gid="output.shape")
    _arrow(ax, w_o.right(), output.left())
    return ax.figure


def _centres(x, widths, gap):
    """Centres of boxes of ``widths`` set left to right from ``x``, ``gap`` apart."""
    centres = []
    for w in widths:
        centres.append(x + w / 2)
        x += w + gap
    return centres


def _chain(ax, boxes):
    """Arrows from each box to the next, left to right."""
    for a, b in zip(boxes, boxes[1:]):
        _arrow(ax, a.right(), b.left())


def _bypass(ax, split, high, target, *, lit=False):
    """A residual path from the junction ``split``: up to ``high``, across, down into ``target``."""
    _dot(ax, split, lit=lit)
    _arrow(ax, split, (split[0], high), (target.x, high), target.top(), lit=lit)


def encoder_layer(norm_first=False, highlight=None):
    """One encoder layer, left to right: post-LN (the paper) or pre-LN (``norm_first=True``).

    Post-LN normalises after each residual sum: ``x = LayerNorm(x + Sublayer(x))``. Pre-LN
    normalises the sub-layer's input and leaves the residual path untouched:
    ``x = x + Sublayer(LayerNorm(x))``, with one final LayerNorm after the stack. The residual
    paths (残差连接) are the arrows that bypass each sub-layer. ``highlight``: one or more of
    ``"attention"``, ``"ffn"``, ``"norm"``, ``"residual"``. Shown in notebook 05.
    """
    on = _lighter(highlight, PARTS["encoder_layer"])
    if not isinstance(norm_first, bool):
        raise TypeError(f"norm_first must be True or False, got {norm_first!r:.60}")
    # The row sits as low as its lowest label allows: the frame, or pre-LN's note under the
    # final norm; everything above is placed from it, so no empty band is left at the bottom.
    main = 0.95 if norm_first else 0.75
    ax = _canvas(10, main + 2.15)
    high, h, top = main + 0.95, 0.7, main + 1.85
    kind = label("encoder_layer.pre-LN" if norm_first else "encoder_layer.post-LN")
    formula = (r"$x \leftarrow x + \mathrm{Sublayer}(\mathrm{LayerNorm}(x))$" if norm_first
               else r"$x \leftarrow \mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))$")
    _text(ax, 0.25, top, label("encoder_layer.title", kind=kind), size=12, ha="left", gid="title")
    _text(ax, 9.75, top, formula, size=12, ha="right", gid="formula")
    _text(ax, 0.3, main, "$x$", size=13, gid="input")

    x, last = 0.75, (0.45, main)
    order = ("norm", "sub", "add") if norm_first else ("sub", "add", "norm")
    for i, (name, text, block, width) in enumerate(
        (("self_attn", label("multi-head attention"), "attention", 1.75),
         ("ffn", label("feed forward"), "ffn", 1.2)), start=1):
        widths = {"sub": width, "add": 0.26, "norm": 0.95}
        at = dict(zip(order, _centres(x + 0.2, [widths[k] for k in order], gap=0.25)))
        drawn = {
            "sub": _box(ax, at["sub"], main, width, h, text, block, gid=name, lit=on(block)),
            "add": _add(ax, at["add"], main, gid=f"add{i}", lit=on("residual")),
            "norm": _box(ax, at["norm"], main, 0.95, h, label("layer norm"), "norm",
                         gid=f"norm{i}", lit=on("norm")),
        }
        boxes = [drawn[k] for k in order]
        _arrow(ax, last, (x, main), boxes[0].left())
        _chain(ax, boxes)
        _bypass(ax, (x, main), high, drawn["add"], lit=on("residual"))
        if i == 1:
            _text(ax, (x + drawn["add"].x) / 2, high + 0.06, label("encoder_layer.residual"),
                  va="bottom", size=SMALL, gid="residual_label")
        last = boxes[-1].right()
        x = last[0] + 0.2

    _frame(ax, 0.58, main - 0.55, x, high + 0.4, gid="layer", side="top")
    if norm_first:
        final = _box(ax, x + 0.7, main, 1.0, h, label("layer norm"), "norm",
                     gid="final_norm", lit=on("norm"))
        _note(ax, final, label("encoder_layer.final norm"), gid="final_norm.note")
        _arrow(ax, last, final.left())
        last = final.right()
    _arrow(ax, last, (last[0] + 0.4, main))
    return ax.figure


def decoder_layer(highlight=None):
    """One decoder layer, left to right (post-LN): masked self-attention, cross-attention, FFN.

    The masked self-attention (掩码自注意力) lets each position see only itself and earlier
    ones; the cross-attention (交叉注意力) takes its queries from the decoder and its keys and
    values from the encoder's memory; each sub-layer has a residual path and Add & Norm.
    ``highlight``: one or more of ``"masked_attention"``, ``"cross_attention"``, ``"ffn"``,
    ``"norm"``, ``"memory"``, ``"mask"``. Shown in notebook 06.
    """
    on = _lighter(highlight, PARTS["decoder_layer"])
    ax = _canvas(10, 3.9)
    main, high, h = 2.0, 2.8, 0.72
    _text(ax, 0.25, 3.6, label("decoder_layer.title"), size=12, ha="left", gid="title")
    _text(ax, 0.3, main, "$y$", size=13, gid="input")

    x, last, subs = 0.75, (0.45, main), {}
    for i, (name, text, block, width, part) in enumerate(
        (("self_attn", label("decoder_layer.masked attention"), "attention", 1.75,
          "masked_attention"),
         ("cross_attn", label("decoder_layer.cross attention"), "attention", 1.35,
          "cross_attention"),
         ("ffn", label("feed forward"), "ffn", 1.2, "ffn")), start=1):
        sub_x, norm_x = _centres(x + 0.18, (width, 0.75), gap=0.22)
        sub = _box(ax, sub_x, main, width, h, text, block, gid=name, lit=on(part))
        norm = _box(ax, norm_x, main, 0.75, h, label("add & norm, two lines"), "norm",
                    gid=f"norm{i}", lit=on("norm"))
        _arrow(ax, last, (x, main), sub.left())
        _chain(ax, (sub, norm))
        _bypass(ax, (x, main), high, norm, lit=on("norm"))
        subs[name], last = sub, norm.right()
        x = last[0] + 0.18
    _arrow(ax, last, (last[0] + 0.4, main))
    _frame(ax, 0.58, main - 0.55, x, high + 0.3, gid="layer", side="top")

    masked, cross = subs["self_attn"], subs["cross_attn"]
    mask = _box(ax, masked.x, 0.6, 1.75, 0.56, None, "mask", gid="mask", lit=on("mask"))
    _causal_icon(ax, mask.x - 0.6, mask.y)
    _text(ax, mask.x + 0.2, mask.y, label("decoder_layer.causal mask"), size=SMALL,
          gid="mask.label")
    _arrow(ax, mask.top(), masked.bottom(), lit=on("mask"))
    memory = _box(ax, cross.x, 0.6, 1.7, 0.56, label("decoder_layer.memory"), "data",
                  gid="memory", lit=on("memory"), size=SMALL)
    _arrow(ax, memory.top(), cross.bottom(), lit=on("memory"))
    _text(ax, cross.x + 0.08, (memory.top()[1] + cross.bottom()[1]) / 2, "K, V", ha="left",
          size=SMALL, gid="kv_label")
    _text(ax, cross.left()[0] - 0.04, main + 0.06, "Q", ha="right", va="bottom", size=SMALL,
          gid="q_label")
    return ax.figure


def generation_loop(highlight=None):
    """Greedy generation: the decoder is fed its own output, from ``<bos>`` until ``<eos>``.

    The encoder reads ``one thousand five <eos>`` once; at each step the decoder (with the
    generator) reads the memory and every token so far and its most likely next token is
    appended to the input, until it says ``<eos>``: 一 千 零 五. ``highlight``: one or more of
    ``"encoder"``, ``"decoder"``, ``"feedback"``, ``"stop"``. Shown in notebook 07.
    """
    on = _lighter(highlight, PARTS["generation_loop"])
    ax = _canvas(10, 5.6)
    outputs = ["一", "千", "零", "五", "<eos>"]
    dec_x, out_x, tokens_end, pitch, top = 5.55, 7.4, 4.1, 0.84, 3.85
    token_w, token_gap = 0.6, 0.05

    encoder = _box(ax, dec_x, 4.95, 2.1, 0.52, label("generation_loop.encoder"), "stack",
                   gid="encoder", lit=on("encoder"), size=SMALL)
    _text(ax, encoder.left()[0] - 0.45, encoder.y, "one thousand five <eos>", ha="right",
          gid="source")
    _arrow(ax, (encoder.left()[0] - 0.35, encoder.y), encoder.left())
    frame_top = top + 0.38
    _arrow(ax, encoder.bottom(), (dec_x, frame_top))
    _text(ax, dec_x + 0.1, (encoder.bottom()[1] + frame_top) / 2, label("generation_loop.memory"),
          ha="left", size=SMALL, gid="memory_label")
    _text(ax, tokens_end, frame_top - 0.05, label("generation_loop.so far"), ha="right",
          va="bottom", size=SMALL, color=NOTE_COLOR, gid="inputs_header")
    _text(ax, out_x, frame_top - 0.05, label("generation_loop.next"), va="bottom", size=SMALL,
          color=NOTE_COLOR, gid="outputs_header")

    inputs = ["<bos>"]
    for t, token in enumerate(outputs):
        y = top - t * pitch
        _text(ax, 0.25, y, label("generation_loop.step", n=t + 1), ha="left", size=SMALL,
              color=NOTE_COLOR, gid=f"step{t + 1}")
        start = tokens_end - len(inputs) * (token_w + token_gap) + token_gap
        row = _tokens(ax, start, y, inputs, gid=f"in{t + 1}.", w=token_w, gap=token_gap,
                      fed_back={len(inputs) - 1} if t else set())
        decoder = _box(ax, dec_x, y, 2.1, 0.52, label("generation_loop.decoder"), "stack",
                       gid=f"decoder{t + 1}", lit=on("decoder"), size=SMALL)
        _arrow(ax, row[-1].right(), decoder.left())
        out = _box(ax, out_x, y, token_w, 0.36, token, "softmax", gid=f"out{t + 1}",
                   size=SMALL, lit=on("stop") and token == "<eos>")
        _arrow(ax, decoder.right(), out.left())
        if token == "<eos>":
            _text(ax, out.right()[0] + 0.25, y, label("generation_loop.stop"), ha="left",
                  gid="result", color=HIGHLIGHT_COLOR if on("stop") else INK)
        else:
            # The prediction becomes the newest input of the next step.
            new_x, gap_y = tokens_end - token_w / 2, y - pitch / 2
            _arrow(ax, out.bottom(), (out_x, gap_y), (new_x, gap_y),
                   (new_x, y - pitch + 0.18), lit=on("feedback"), color=NOTE_COLOR)
        inputs.append(token)
    _frame(ax, dec_x - 1.2, top - 4 * pitch - 0.38, dec_x + 1.2, frame_top, gid="decoder",
           side="right", label="")
    return ax.figure


def referent_model(highlight=None):
    """Notebook 09's model on the notes' sentence, bottom to top: words → p over the words.

    Each word is embedded (× √d_model) and added to the positional encoding; the encoder of
    notebook 05 (N post-LN layers) turns the words into vectors h_1 … h_L; the pointer head
    (指针) asks one more attention question from "it": the query q = h_it W^Q, a key
    k_j = h_j W^K from every word, and the softmax of q · k_j / √d_k over the positions is the
    answer p. The bars on top are the trained model's p for "… because it was too tired":
    all of it on "animal". There is no decoder and no generator. ``highlight``: one or more of
    ``"embedding"``, ``"positional"``, ``"encoder"``, ``"pointer"`` (the head and the query's
    path from "it"). Shown in notebook 09.
    """
    on = _lighter(highlight, PARTS["referent_model"])
    ax = _canvas(10, 5.6)
    words = "the animal didn't cross the street because it was too tired".split()
    it, referent = words.index("it"), words.index("animal")
    w, gap, x0 = 0.7, 0.06, 1.45
    xs = [x0 + w / 2 + j * (w + gap) for j in range(len(words))]
    left, right = x0, xs[-1] + w / 2
    mid, width = (left + right) / 2, right - left
    label_x = left - 0.15  # row names, right-aligned in the margin

    def columns(below, above, *, query=False):
        """One arrow per word from box ``below`` up to ``above``; with ``query``, the arrow
        from "it" is drawn bold: it brings the query as well as a key."""
        for j, x in enumerate(xs):
            bold = query and j == it
            _arrow(ax, (x, below.top()[1]), (x, above.bottom()[1]), lit=bold and on("pointer"),
                   color=INK if bold else NOTE_COLOR, lw=2.2 if bold else 1.0)

    def spaced_label(box, gid, s):
        """A label with wider lines (a root's bar would touch the line above). A line with
        $…$ is set by mathtext, which has no Chinese: Chinese goes on a line of its own."""
        ax.text(box.x, box.y, s, fontsize=FONT, color=INK, ha="center", va="center",
                linespacing=1.55, gid=f"{gid}.label", zorder=3)

    # The words of the notes' sentence, "it" in the colour of attention.
    tokens = [_box(ax, x, 0.28, w, 0.36, word, "attention" if j == it else "data",
                   gid=f"word{j}", size=SMALL) for j, (x, word) in enumerate(zip(xs, words))]
    _text(ax, label_x, tokens[0].y, label("referent_model.words"), ha="right", gid="words_label")
    _text(ax, 0.25, 5.38, label("referent_model.title"), size=12, ha="left", gid="title")

    embed = _box(ax, mid, 0.93, width, 0.56, None, "embed", gid="embed", lit=on("embedding"))
    spaced_label(embed, "embed", label("referent_model.embedding"))
    columns(tokens[0], embed)
    positions = _box(ax, mid, 1.55, width, 0.34, label("+ positional encoding"),
                     "position", gid="positions", lit=on("positional"))
    columns(embed, positions)
    sine = _sine(ax, left - 0.45, positions.y, gid="pe", lit=on("positional"))
    _arrow(ax, sine.right(), positions.left(), lit=on("positional"))

    encoder = _box(ax, mid, 2.22, width, 0.56, label("referent_model.encoder"), "stack",
                   gid="encoder", lit=on("encoder"))
    columns(positions, encoder)
    _text(ax, label_x, encoder.y, "N×", ha="right", size=15, weight="bold",
          family="sans-serif", gid="encoder.n")

    hs = [_box(ax, x, 2.89, w, 0.34, "$h_{\\mathrm{it}}$" if j == it else f"$h_{{{j + 1}}}$",
               "data", gid=f"h{j}", size=SMALL) for j, x in enumerate(xs)]
    columns(encoder, hs[0])
    _text(ax, label_x, hs[0].y, label("referent_model.vectors"), ha="right", gid="h_label")

    pointer = _box(ax, mid, 3.76, width, 0.92, None, "attention", gid="pointer",
                   lit=on("pointer"))
    spaced_label(pointer, "pointer", label("referent_model.pointer"))
    columns(hs[0], pointer, query=True)
    _text(ax, xs[it] + 0.1, (hs[it].top()[1] + pointer.bottom()[1]) / 2, "q", ha="left",
          size=SMALL, gid="q_label")

    # p over the words: the trained model's answer, all of it on "animal".
    base, tall = pointer.top()[1] + 0.2, 0.75
    ax.plot([left, right], [base, base], color=NOTE_COLOR, lw=1.0)
    for j, x in enumerate(xs):
        ax.add_patch(Rectangle((x - 0.2, base), 0.4, tall if j == referent else 0.02,
                               gid=f"p{j}", zorder=2, linewidth=1.1,
                               facecolor=COLORS["softmax"] if j == referent else NOTE_COLOR,
                               edgecolor=EDGE_COLOR if j == referent else "none"))
    _text(ax, xs[referent] + 0.27, base + tall - 0.12, "1.00", ha="left", size=SMALL,
          gid="p_value")
    _text(ax, label_x, base + 0.25, "$p$", ha="right", size=13, gid="p_label")
    _text(ax, right, base + tall / 2, label("referent_model.p"), ha="right", size=SMALL,
          color=NOTE_COLOR, gid="p_note")
    return ax.figure


def single_query(highlight=None):
    """One query against its keys, The Illustrated Transformer's worked example as a lecturer
    draws it on the board.

    The query q₁ of "Thinking" meets the key k₁ of "Thinking" and the key k₂ of "Machines": the
    dot products 112 and 96 (on the arrows), divided by √d_k = √64 = 8 to 14 and 12, a softmax
    over both to the weights 0.88 and 0.12 (bars), and the weighted sum of the values
    z₁ = 0.88 v₁ + 0.12 v₂. The numbers are Jay Alammar's (The Illustrated Transformer), which the
    notebook executes; the figure computes them from the two scores and d_k. ``highlight``: one
    or more of ``"query"``, ``"keys"``, ``"scores"`` (the arrows), ``"scale"`` (÷ √d_k),
    ``"softmax"``, ``"weighted_sum"`` (the values, the sum and z₁).
    Shown in notebook 01 §3 (The Illustrated Transformer's worked example), above its code.
    """
    on = _lighter(highlight, PARTS["single_query"])
    words, scores, d_k = ("Thinking", "Machines"), (112, 96), 64
    scaled = [s / math.sqrt(d_k) for s in scores]
    exps = [math.exp(s - max(scaled)) for s in scaled]
    weights = [e / sum(exps) for e in exps]

    ax = _canvas(10, 4.4)
    _text(ax, 0.25, 4.1, label("single_query.title"), size=12, ha="left", gid="title")
    _text(ax, 9.75, 4.1, r"$z_1 = \sum_i\, \mathrm{softmax}_i\left(\dfrac{q_1 \cdot k_i}"
          r"{\sqrt{d_k}}\right) v_i$", size=12, ha="right", gid="formula")
    rows, mid = (2.85, 1.35), 2.1
    headers = ((2.05, label("single_query.scores")), (4.0, label("single_query.divide")),
               (6.45, label("single_query.weights")), (8.75, label("single_query.sum")))
    for i, (x, s) in enumerate(headers, start=1):
        _text(ax, x, 3.5, s, size=SMALL, color=NOTE_COLOR, gid=f"step{i}")

    query = _box(ax, 0.7, mid, 0.62, 0.5, "$q_1$", "data", gid="query", size=14, lit=on("query"))
    _text(ax, query.x, query.y + 0.33, "“Thinking”", va="bottom", size=SMALL, gid="query.word")
    _text(ax, query.x, query.y - 0.33, label("single_query.query"), va="top", size=SMALL,
          color=NOTE_COLOR, gid="query.note")
    fork = (1.3, mid)
    ax.plot([query.right()[0], fork[0]], [mid, mid], color=HIGHLIGHT_COLOR if on("scores")
            else INK, lw=2.4 if on("scores") else 1.3, zorder=1.5)
    _dot(ax, fork, lit=on("scores"))
    softmax = _box(ax, 5.6, mid, 0.95, rows[0] - rows[1] + 0.62, "softmax", "softmax",
                   gid="softmax", lit=on("softmax"))
    total = _add(ax, 9.1, mid, gid="sum", lit=on("weighted_sum"))
    for i, (y, word, score, s, w) in enumerate(zip(rows, words, scores, scaled, weights),
                                               start=1):
        key = _box(ax, 3.05, y, 0.62, 0.5, f"$k_{i}$", "data", gid=f"key{i}", size=14,
                   lit=on("keys"))
        _text(ax, key.x, key.y - 0.3, label("single_query.key of", word=word), va="top", size=SMALL,
              color=NOTE_COLOR, gid=f"key{i}.word")
        _arrow(ax, fork, (fork[0], y), key.left(), gid=f"score{i}", lit=on("scores"))
        _text(ax, (fork[0] + key.left()[0]) / 2 + 0.05, y + 0.06,
              rf"$q_1 \cdot k_{i} = {score}$", va="bottom", gid=f"score{i}.value")
        small = _box(ax, 4.5, y, 0.62, 0.5, f"{s:g}", "data", gid=f"scaled{i}", size=14,
                     lit=on("scale"))
        _arrow(ax, key.right(), small.left())
        _text(ax, (key.right()[0] + small.left()[0]) / 2, y + 0.06, "÷ 8", va="bottom",
              gid=f"scale{i}")
        _arrow(ax, small.right(), (softmax.left()[0], y))
        # The weight as a bar, as long as it is large (a weight of 1 would be 1 inch).
        bar_x = softmax.right()[0] + 0.15
        ax.add_patch(Rectangle((bar_x, y - 0.17), w, 0.34, facecolor=COLORS["softmax"],
                               edgecolor=EDGE_COLOR, linewidth=1.1, gid=f"weight{i}", zorder=2))
        _text(ax, bar_x + w + 0.08, y, f"{w:.2f}", ha="left", size=13, gid=f"weight{i}.value")
        value = _box(ax, 8.3, y, 0.7, 0.5, rf"$\times\ v_{i}$", "data", gid=f"value{i}",
                     size=14, lit=on("weighted_sum"))
        _arrow(ax, (bar_x + w + 0.6, y), value.left())
        _arrow(ax, value.right(), (total.x, y), total.top() if y > mid else total.bottom(),
               lit=on("weighted_sum"))
    z = _box(ax, 9.6, mid, 0.5, 0.5, "$z_1$", "data", gid="z", size=14, lit=on("weighted_sum"))
    _arrow(ax, total.right(), z.left(), lit=on("weighted_sum"))

    _text(ax, 0.25, 0.35, rf"$d_k = {d_k}$" + label("single_query.so") + r"$\sqrt{d_k} = 8$:   "
          rf"${scores[0]} / 8 = {scaled[0]:g}$,  ${scores[1]} / 8 = {scaled[1]:g}$;   "
          r"$\alpha_1 = \dfrac{e^{14}}{e^{14} + e^{12}} = \dfrac{1}{1 + e^{-2}}"
          rf" = {weights[0]:.2f}$", ha="left", size=SMALL, gid="arithmetic")
    _text(ax, 9.75, 0.35, rf"$z_1 = {weights[0]:.2f}\,v_1 + {weights[1]:.2f}\,v_2$", ha="right",
          size=14, gid="result")
    return ax.figure



def head_split(num_heads=4, highlight=None):
    """``split_heads`` and ``merge_heads`` as pictures: Q's column blocks become the heads.

    Q = XW^Q, (B, L, d_model), is cut into ``num_heads`` contiguous blocks of d_k = d_model / h
    columns: head i takes columns i·d_k : (i+1)·d_k (heads counted from 0, as in the code;
    ``multi_head()`` counts them from 1, as the paper). ``split_heads`` (reshape to
    (B, L, h, d_k), transpose to (B, h, L, d_k)) makes each block one head's L × d_k matrix;
    every head attends on its own; ``merge_heads`` puts the heads' outputs side by side again
    (the concatenation, (B, L, d_model)) and W^O mixes them. K and V are split the same way.
    ``num_heads``: 1 to 8. ``highlight``: one or more of ``"columns"`` (Q and its blocks),
    ``"split"``, ``"heads"``, ``"attention"``, ``"merge"``, ``"output"`` (W^O and the output).
    Shown in notebook 03 §3 ("One big projection, split into heads"), above split_heads' code.
    """
    if isinstance(num_heads, bool) or not isinstance(num_heads, int):
        raise TypeError(f"num_heads must be an int from 1 to 8, got {num_heads!r:.60}")
    if not 1 <= num_heads <= len(HEAD_COLORS):
        raise ValueError(f"num_heads must be from 1 to {len(HEAD_COLORS)} (one colour per head),"
                         f" got {num_heads}")
    on = _lighter(highlight, PARTS["head_split"])
    h, L, d_k = num_heads, 5, 2  # drawn sizes: L rows (notebook 03's five words), d_k columns
    ax = _canvas(10, 5.6)
    _text(ax, 0.25, 5.3, label("head_split.title"), size=12, ha="left", gid="title")
    _text(ax, 9.75, 5.3, r"$(B, L, d_{\mathrm{model}}) \to (B, L, h, d_k) \to (B, h, L, d_k)$",
          size=12, ha="right", gid="formula")
    ch = 0.17
    q_w, q_x0, q_y0 = 2.4, 0.5, 3.7
    cw = q_w / (h * d_k)
    color = lambda r, c: HEAD_COLORS[c // d_k]  # noqa: E731 - column c belongs to head c // d_k
    q = _grid(ax, q_x0, q_y0, L, h * d_k, cw, ch, color, gid="Q", lit=on("columns"))
    _text(ax, q.x, q.top()[1] + 0.12, "$Q = XW^Q$", va="bottom", gid="Q.name")
    for i in range(h):  # each block's head number, in the block
        _text(ax, q_x0 + (i + 0.5) * d_k * cw, q.y, f"{i}", gid=f"Q.block{i}", zorder=4,
              bbox=_behind(HEAD_COLORS[i]))
    _text(ax, q.x, q.bottom()[1] - 0.08, r"$(B, L, d_{\mathrm{model}})$" + "\n"
          + label("head_split.columns"), va="top", size=SMALL, color=NOTE_COLOR,
          gid="Q.shape")

    # The heads: one L × d_k matrix each, a new axis in front of the positions.
    left, right, gap = 5.0, 9.6, 0.3 if h > 4 else 0.45
    head_w = min(0.8, (right - left - (h - 1) * gap) / h)
    span = h * head_w + (h - 1) * gap  # centred in the room from left to right
    xs = [(left + right - span) / 2 + i * (head_w + gap) for i in range(h)]
    heads = label("head_split.heads", h=h) if h > 1 else label("head_split.one head")
    _text(ax, (left + right) / 2, 5.0, heads, size=SMALL, color=NOTE_COLOR, gid="heads.shape")
    _arrow(ax, q.right(), (xs[0] - 0.15, q.y), lit=on("split"), gid="split")
    mid = (q.right()[0] + xs[0] - 0.15) / 2
    _text(ax, mid, q.y + 0.08, "split_heads", va="bottom", family="monospace", gid="split.name",
          color=HIGHLIGHT_COLOR if on("split") else INK)
    _text(ax, mid, q.y - 0.08, label("head_split.reshape") + "\n" r"$(B, h, L, d_k)$", va="top",
          size=SMALL, color=NOTE_COLOR, gid="split.note")
    band = _box(ax, (left + right) / 2, 3.1, max(span + 0.2, 4.0), 0.5,
                label("head_split.attention"), "attention",
                gid="attention", lit=on("attention"))
    z_y0 = 1.7
    for i, x in enumerate(xs):
        head = _grid(ax, x, q_y0, L, d_k, head_w / d_k, ch, lambda r, c, i=i: HEAD_COLORS[i],
                     gid=f"head{i}", lit=on("heads"))
        if h <= 5:  # more would crowd: then the matrices' names say which head
            _text(ax, head.x, head.top()[1] + 0.08, label("head", i=i), va="bottom", size=SMALL,
                  gid=f"head{i}.title")
        _text(ax, head.x, head.y, f"$Q_{i}$", gid=f"head{i}.label", zorder=4,
              bbox=_behind(HEAD_COLORS[i]))
        _arrow(ax, head.bottom(), (head.x, band.top()[1]))
        out = _grid(ax, x, z_y0, L, d_k, head_w / d_k, ch, lambda r, c, i=i: HEAD_COLORS[i],
                    gid=f"Z{i}", lit=on("heads"))
        _text(ax, out.x, out.y, f"$Z_{i}$", gid=f"Z{i}.label", zorder=4,
              bbox=_behind(HEAD_COLORS[i]))
        _arrow(ax, (out.x, band.bottom()[1]), out.top())

    # The way back: merge_heads (the concatenation), then W^O.
    merged = _grid(ax, q_x0, z_y0, L, h * d_k, cw, ch, color, gid="merged", lit=on("merge"))
    _arrow(ax, (xs[0] - 0.15, merged.y), merged.right(), lit=on("merge"), gid="merge")
    back = (merged.right()[0] + xs[0] - 0.15) / 2
    _text(ax, back, merged.y + 0.08, "merge_heads", va="bottom", family="monospace",
          gid="merge.name", color=HIGHLIGHT_COLOR if on("merge") else INK)
    _text(ax, back, merged.y - 0.08, "= " + label("concat"), va="top", size=SMALL, color=NOTE_COLOR,
          gid="merge.note")
    _text(ax, merged.x, merged.top()[1] + 0.08, r"$(B, L, d_{\mathrm{model}})$", va="bottom",
          size=SMALL, color=NOTE_COLOR, gid="merged.shape")
    w_o = _box(ax, merged.x, 0.75, 0.7, 0.5, "$W^O$", "linear", gid="W_O", size=13,
               lit=on("output"))
    _arrow(ax, merged.bottom(), w_o.top())
    output = _box(ax, 3.9, 0.75, 0.9, 0.5, label("output"), "data", gid="output", lit=on("output"))
    _arrow(ax, w_o.right(), output.left())
    _text(ax, output.right()[0] + 0.12, output.y, label("head_split.as it came in"),
          ha="left", size=SMALL, color=NOTE_COLOR, gid="output.shape")
    _text(ax, 9.75, 0.75, label("head_split.kv"), ha="right", size=SMALL,
          color=NOTE_COLOR, gid="kv_note")
    return ax.figure



def cross_attention(highlight=None):
    """Cross-attention's weights: a rectangle, L_t × L_s, beside the masked self-attention's square.

    The decoder's L_t = 5 positions (``<bos> 一 千 零 五``, the target shifted right) ask the
    queries Q, one row each; the encoder's memory of the L_s = 4 source tokens
    (``one thousand five <eos>``) gives the keys K and values V, one column each. So the weights
    are L_t × L_s, not square, and nothing is masked: every target position may read the whole
    source (only padding would be). For contrast, the decoder's masked self-attention is
    L_t × L_t, a lower triangle (grey: masked). ``highlight``: one or more of ``"queries"``,
    ``"memory"`` (the keys and values), ``"weights"`` (the rectangle),
    ``"masked_self_attention"`` (the square).
    Shown in notebook 06 §4 (cross-attention), on the lecture's slides: a lecture-only cell.
    """
    on = _lighter(highlight, PARTS["cross_attention"])
    target = ["<bos>", "一", "千", "零", "五"]
    source = ["one", "thousand", "five", "<eos>"]
    ax = _canvas(10, 5.6)
    _text(ax, 0.25, 5.3, label("cross_attention.title"), size=12, ha="left", gid="title")

    # The rectangle: one row per target position (its query), one column per source token.
    cw, ch, x0, y0 = 0.9, 0.48, 1.8, 1.75
    rows, cols = len(target), len(source)
    weights = _grid(ax, x0, y0, rows, cols, cw, ch, lambda r, c: COLORS["softmax"],
                    gid="weights", lit=on("weights"))
    top = weights.top()[1]
    for c, token in enumerate(source):
        _box(ax, x0 + (c + 0.5) * cw, top + 0.3, cw - 0.08, 0.36, token, "data", gid=f"src{c}",
             size=SMALL, lit=on("memory"))
    _text(ax, weights.x, top + 0.6, label("cross_attention.memory"),
          va="bottom", gid="memory_label")
    for r, token in enumerate(target):
        _box(ax, x0 - 0.4, y0 + (rows - 0.5 - r) * ch, 0.64, ch - 0.1, token, "data",
             gid=f"tgt{r}", size=SMALL, lit=on("queries"))
    _text(ax, x0 - 1.25, weights.y, label("cross_attention.queries"), rotation=90,
          gid="queries_label")
    _text(ax, weights.x, y0 - 0.1, rf"$L_t \times L_s = {rows} \times {cols}$: "
          r"$\mathrm{softmax}(QK^\top/\sqrt{d_k})$", va="top", gid="weights.shape")
    _text(ax, weights.x, y0 - 0.5, label("cross_attention.inputs"), va="top", size=SMALL,
          color=NOTE_COLOR, gid="weights.inputs")
    _text(ax, weights.x, y0 - 0.85, label("cross_attention.note"), va="top", size=SMALL,
          color=NOTE_COLOR, gid="weights.note")

    # For contrast: the masked self-attention, a square with its upper triangle masked.
    sw = 0.46
    sx0, sy0 = 9.7 - rows * sw, top - rows * sw
    square = _grid(ax, sx0, sy0, rows, rows, sw, sw,
                   lambda r, c: COLORS["softmax"] if c <= r else COLORS["mask"],
                   gid="self_weights", lit=on("masked_self_attention"))
    for i, token in enumerate(target):
        _text(ax, sx0 - 0.1, sy0 + (rows - 0.5 - i) * sw, token, ha="right", size=SMALL,
              gid=f"self_row{i}")
        _text(ax, sx0 + (i + 0.5) * sw, top + 0.08, token, va="bottom", size=SMALL,
              gid=f"self_col{i}")
    _text(ax, square.x, top + 0.6, label("cross_attention.contrast"),
          va="bottom", gid="self_label")
    _text(ax, square.x, sy0 - 0.1, rf"$L_t \times L_t = {rows} \times {rows}$", va="top",
          gid="self_weights.shape")
    _text(ax, square.x, sy0 - 0.45, label("cross_attention.square"), va="top", size=SMALL,
          color=NOTE_COLOR, gid="self_weights.note")
    return ax.figure



# Notebook 07 §2's made-up model for "twelve": p(next token | the answer so far); after any
# other answer so far, <eos> with p = 1. tests/figures checks it against the notebook's TOY.
_BEAM_TOY = {
    "": {"一": 0.50, "十": 0.45, "<eos>": 0.05},
    "一": {"十": 0.50, "二": 0.40, "<eos>": 0.10},
    "一十": {"二": 0.90, "<eos>": 0.10},
    "十": {"二": 0.95, "<eos>": 0.05},
}


@dataclass
class _Hypothesis:
    """A node of the beam tree: the tokens so far, their total log p and this token's."""

    tokens: tuple
    logp: float
    step_logp: float
    status: str = "pruned"  # or "kept" (in the beam), "finished" (kept, ends in <eos>)
    children: list = None


def _toy_beam(beam_size, max_len=5, length_penalty=0.6):
    """Beam search on ``_BEAM_TOY`` as notebook 07's exercise does it: returns the root, the
    number of places in the beam at each step, and the finished answers with their scores
    log p / lp(n), best first."""
    root = _Hypothesis((), 0.0, 0.0, "kept")
    beam, finished, places = [root], [], []
    for _ in range(max_len):
        candidates = []
        for hyp in beam:
            hyp.children = [
                _Hypothesis(hyp.tokens + (token,), hyp.logp + math.log(p), math.log(p))
                for token, p in _BEAM_TOY.get("".join(hyp.tokens), {"<eos>": 1.0}).items()]
            candidates += hyp.children
        candidates.sort(key=lambda c: -c.logp)  # best total log p first (stable)
        places.append(beam_size - len(finished))
        beam = []
        for hyp in candidates[:places[-1]]:
            hyp.status = "finished" if hyp.tokens[-1] == "<eos>" else "kept"
            (finished if hyp.status == "finished" else beam).append(hyp)
        if not beam:
            break
    scored = [(h, h.logp / ((5 + len(h.tokens)) / 6) ** length_penalty) for h in finished + beam]
    return root, places, sorted(scored, key=lambda s: -s[1])


def beam_tree(beam_size=2, highlight=None):
    """Beam search as a tree, on notebook 07's toy model for "twelve": what is kept, what is cut.

    From ``<bos>``, every live hypothesis is extended by every token the toy table allows; the
    arrows carry that token's log p, the boxes the token and the hypothesis' total log p (the
    sum along its path). At each step the best candidates stay in the beam (white), as many as
    ``beam_size`` minus the answers already finished; the rest are pruned (grey, dashed). A
    kept candidate that ends in ``<eos>`` is finished (green) and leaves the beam, which
    narrows. The finished answers are ranked by log p / lp(n), lp(n) = ((5 + n)/6)^0.6, as in
    the notebook: with K = 2, 十二 (−0.72) before 一十二 (−1.17), the answer of greedy decoding
    (K = 1). ``beam_size``: 1 to 3. ``highlight``: one or more of ``"kept"``, ``"pruned"``,
    ``"finished"``, ``"ranking"``.
    Shown in notebook 07 §2 (beam search), on the lecture's slides: the prediction's answer.
    """
    if isinstance(beam_size, bool) or not isinstance(beam_size, int):
        raise TypeError(f"beam_size must be an int from 1 to 3, got {beam_size!r:.60}")
    if not 1 <= beam_size <= 3:
        raise ValueError(f"beam_size must be from 1 to 3 (the toy table has three tokens), "
                         f"got {beam_size}")
    on = _lighter(highlight, PARTS["beam_tree"])
    root, places, ranked = _toy_beam(beam_size)
    ax = _canvas(10, 5.6)
    _text(ax, 0.25, 5.3, label("beam_tree.title", k=beam_size), size=12, ha="left",
          gid="title")

    # Rows: each leaf its own, a parent on its first child's row, so the best path runs straight.
    rows, leaves, pitch, first_y, x0, step_x = {}, [], 0.6, 4.25, 0.55, 1.6

    def place(hyp):
        for child in hyp.children or ():
            place(child)
        if not hyp.children:
            leaves.append(hyp.tokens)
        rows[hyp.tokens] = rows[hyp.children[0].tokens] if hyp.children else len(leaves) - 1

    place(root)
    w, h = 0.62, 0.5
    _text(ax, x0, 4.62, label("beam_tree.start"), va="bottom", size=SMALL, color=NOTE_COLOR,
          gid="step0")
    for step, room in enumerate(places, start=1):
        _text(ax, x0 + step * step_x, 4.62, label("beam_tree.step", step=step, room=room),
              va="bottom", size=SMALL, color=NOTE_COLOR, gid=f"step{step}")

    def draw(hyp, parent_box):
        x, y = x0 + len(hyp.tokens) * step_x, first_y - rows[hyp.tokens] * pitch
        token = hyp.tokens[-1] if hyp.tokens else "<bos>"
        name = "".join(hyp.tokens) or "root"
        pruned = hyp.status == "pruned"
        style = dict(kept=("data", INK), finished=("softmax", INK), pruned=(None, NOTE_COLOR))
        kind, color = style[hyp.status]
        box = _box(ax, x, y, w, h, f"{token}\n{_num(hyp.logp)}", kind or "mask",
                   gid=f"node:{name}", size=SMALL, color=color, dashed=pruned,
                   facecolor="#F2F2F2" if pruned else None,
                   lit=bool(hyp.tokens) and on(hyp.status))
        if parent_box is not None:
            elbow = parent_box.right()[0] + 0.2
            points = [parent_box.right(), box.left()] if y == parent_box.y else [
                (elbow, parent_box.y), (elbow, y), box.left()]
            if y != parent_box.y:
                ax.plot([parent_box.right()[0], elbow], [parent_box.y] * 2, lw=1.3, zorder=1.5,
                        color=NOTE_COLOR if pruned else INK)
            _arrow(ax, *points, color=NOTE_COLOR if pruned else INK, dashed=pruned)
            _text(ax, (max(elbow, parent_box.right()[0]) + box.left()[0]) / 2 + 0.04, y + 0.05,
                  _num(hyp.step_logp), va="bottom", size=SMALL,
                  color=NOTE_COLOR if pruned else INK, gid=f"edge:{name}")
        for child in hyp.children or ():
            draw(child, box)
    draw(root, None)

    # The legend, right of the tree's upper branches, and the ranking under it.
    lx, ly = 6.35, first_y - 1.55 * pitch
    for i, (fill, dashed, s) in enumerate((
            (COLORS["data"], False, label("beam_tree.kept")),
            (COLORS["softmax"], False, label("beam_tree.finished")),
            ("#F2F2F2", True, label("beam_tree.pruned")))):
        ax.add_patch(FancyBboxPatch((lx, ly - i * 0.38 - 0.12), 0.36, 0.24,
                                    boxstyle="round,pad=0,rounding_size=0.04", facecolor=fill,
                                    edgecolor=EDGE_COLOR, linestyle="--" if dashed else "-",
                                    linewidth=1.1, zorder=2))
        _text(ax, lx + 0.5, ly - i * 0.38, s, ha="left", size=SMALL, gid=f"legend{i}")
    _text(ax, lx, ly - 3 * 0.38, label("beam_tree.legend"),
          ha="left", va="center", size=SMALL, color=NOTE_COLOR, gid="legend_arrows")

    lines = [label("beam_tree.ranked")]
    for rank, (hyp, score) in enumerate(ranked, start=1):
        answer = "".join(hyp.tokens[:-1]) or label("beam_tree.empty")
        n = len(hyp.tokens)
        lp = ((5 + n) / 6) ** 0.6
        lines.append(label("beam_tree.answer", rank=rank, answer=answer, n=n,
                           logp=_num(hyp.logp), lp=f"{lp:.2f}", score=_num(score)))
    lines.append(label("beam_tree.greedy" if beam_size == 1 else "beam_tree.greedy keeps"))
    box_h = 0.235 * len(lines) + 0.2
    _box(ax, 7.75, 0.3 + box_h / 2, 3.9, box_h, "\n".join(lines), "data", gid="ranking",
         size=SMALL, lit=on("ranking"), multialignment="left")
    return ax.figure



def kv_cache(highlight=None):
    """The KV cache growing: at step t the cached K and V gain one row each, and one query reads
    all t rows.

    Steps t = 1 … 4 feed ``<bos> 一 千 零`` (notebook 07 §5's answer, one token a step). Each
    step computes one new row, the new token's q_t, k_t, v_t (periwinkle: just made by W^Q,
    W^K, W^V), appends k_t and v_t to the cache (K, V: t × d_k and t × d_v), and attends with
    the one query over all t rows: t weights α (green), one output row z_t. The rows cached
    before are reused as they are: a step costs one new row, where recomputing would cost t.
    ``highlight``: one or more of ``"cache"`` (the rows kept from earlier steps),
    ``"new_rows"`` (k_t and v_t), ``"query"`` (q_t), ``"weights"`` (α).
    Shown in notebook 07 §5 (the KV cache).
    """
    on = _lighter(highlight, PARTS["kv_cache"])
    tokens = ["<bos>", "一", "千", "零"]
    ax = _canvas(10, 5.6)
    _text(ax, 0.25, 5.3, label("kv_cache.title"), size=12, ha="left", gid="title")
    _text(ax, 9.75, 5.3, r"$z_t = \mathrm{softmax}(q_t K^\top / \sqrt{d_k})\, V$", size=12,
          ha="right", gid="formula")
    margin, pitch, kw, aw, gap, row_h = 1.6, 2.05, 0.62, 0.26, 0.1, 0.3
    new_y, top = 4.15, 3.55  # the new query's row; the cache's first row starts at top
    row_y = [top - (r + 0.5) * row_h for r in range(len(tokens))]
    for r, token in enumerate(tokens):
        _text(ax, margin - 0.15, row_y[r], token, ha="right", size=SMALL, gid=f"token{r}")
    _text(ax, margin - 0.15, new_y, label("kv_cache.new token"), ha="right", size=SMALL,
          color=NOTE_COLOR, gid="new_label")
    work_y = (1.45, 1.05)
    _text(ax, 0.25, 1.8, label("kv_cache.rows per step"), ha="left", size=SMALL,
          gid="work_title")
    _text(ax, margin - 0.15, work_y[0], label("kv_cache.with cache"), ha="right", size=SMALL,
          gid="work_cached")
    _text(ax, margin - 0.15, work_y[1], label("kv_cache.without"), ha="right", size=SMALL,
          gid="work_full")

    new = COLORS["linear"]
    for t in range(1, len(tokens) + 1):
        x = margin + (t - 1) * pitch
        kx, ax_, vx = x, x + kw + gap, x + kw + gap + aw + gap
        _text(ax, vx - gap - aw / 2, 4.75, label("kv_cache.step", t=t, token=tokens[t - 1]),
              size=FONT, gid=f"step{t}")
        q = _cell(ax, kx, new_y - row_h / 2, kw, row_h, new, gid=f"step{t}.q", lit=on("query"),
                  label=f"$q_{t}$")
        z = _cell(ax, vx, new_y - row_h / 2, kw, row_h, COLORS["data"], gid=f"step{t}.z",
                  label=f"$z_{t}$")
        for r in range(t):
            latest = r == t - 1
            part = "new_rows" if latest else "cache"
            y0 = row_y[r] - row_h / 2
            _cell(ax, kx, y0, kw, row_h, new if latest else COLORS["data"], gid=f"step{t}.k{r + 1}",
                  lit=on(part), label=f"$k_{r + 1}$")
            _cell(ax, ax_, y0, aw, row_h, COLORS["softmax"], gid=f"step{t}.a{r + 1}",
                  lit=on("weights"))
            _cell(ax, vx, y0, kw, row_h, new if latest else COLORS["data"], gid=f"step{t}.v{r + 1}",
                  lit=on(part), label=f"$v_{r + 1}$")
        _arrow(ax, q.bottom(), (q.x, top))
        _arrow(ax, (z.x, top), z.bottom())
        _text(ax, ax_ + aw / 2, (new_y + top) / 2, r"$\alpha$", size=SMALL, gid=f"step{t}.alpha")
        bottom = top - len(tokens) * row_h - 0.1
        _text(ax, q.x, bottom, rf"$K$: ${t} \times d_k$", va="top", size=SMALL,
              gid=f"step{t}.K_shape")
        _text(ax, z.x, bottom, rf"$V$: ${t} \times d_v$", va="top", size=SMALL,
              gid=f"step{t}.V_shape")
        # The work of the step, in rows: one new row with the cache, t rows without.
        for which, y, n in (("cached", work_y[0], 1), ("full", work_y[1], t)):
            for i in range(n):
                ax.add_patch(Rectangle((kx + i * 0.24, y - 0.1), 0.2, 0.2, facecolor=new,
                                       edgecolor=EDGE_COLOR, linewidth=0.9, zorder=2,
                                       gid=f"step{t}.{which}{i}"))
            _text(ax, kx + n * 0.24 + 0.06, y,
                  label("kv_cache.one row") if n == 1 else label("kv_cache.rows", n=n), ha="left",
                  size=SMALL, gid=f"step{t}.{which}")
    for i, (fill, s) in enumerate(((new, label("kv_cache.computed")),
                                   (COLORS["data"], label("kv_cache.cached")),
                                   (COLORS["softmax"], label("kv_cache.weights")))):
        x = 0.25 + i * 3.2
        ax.add_patch(Rectangle((x, 0.5), 0.3, 0.2, facecolor=fill, edgecolor=EDGE_COLOR,
                               linewidth=0.9, zorder=2))
        _text(ax, x + 0.4, 0.6, s, ha="left", size=SMALL, gid=f"legend{i}")
    _text(ax, 0.25, 0.2, label("kv_cache.note"), ha="left", size=SMALL,
          color=NOTE_COLOR, gid="note")
    return ax.figure


def decoder_only(highlight=None):
    """Notebook 11's model, bottom to top: one sequence in, the next token at every position out.

    The prompt ``<bos> one thousand five <sep>`` and the answer ``一 千 零 五`` are one
    sequence over one vocabulary; each token is embedded (× √d_model) and added to the
    positional encoding; N blocks, each masked self-attention (掩码自注意力, the causal mask:
    a position reads itself and the ones before it) and a feed-forward network, each with
    Add & Norm: notebook 05's encoder layer under notebook 06's mask. There is no encoder, so
    no cross-attention. The generator (Linear → softmax) gives the next token at every
    position; the loss scores only the answer's, from ``<sep>`` on. ``highlight``: one or more
    of ``"embedding"``, ``"positional"``, ``"masked_attention"``, ``"ffn"``, ``"norm"``,
    ``"generator"``, ``"answer"`` (the scored next tokens). Shown in notebook 11.
    """
    on = _lighter(highlight, PARTS["decoder_only"])
    ax = _canvas(10, 5.6)
    tokens = ["<bos>", "one", "thousand", "five", "<sep>", "一", "千", "零", "五"]
    after = tokens[1:] + ["<eos>"]
    sep = tokens.index("<sep>")
    w, gap, x0 = 0.74, 0.05, 1.65
    xs = [x0 + w / 2 + j * (w + gap) for j in range(len(tokens))]
    left, right = x0, xs[-1] + w / 2
    mid, width = (left + right) / 2, right - left
    label_x = left - 0.15  # row names, right-aligned in the margin

    def columns(below, above):
        for x in xs:
            _arrow(ax, (x, below.top()[1]), (x, above.bottom()[1]), color=NOTE_COLOR, lw=1.0)

    _text(ax, 0.25, 5.38, label("decoder_only.title"), size=12, ha="left", gid="title")
    row = [_box(ax, x, 0.3, w, 0.36, token, "data", gid=f"token{j}", size=SMALL)
           for j, (x, token) in enumerate(zip(xs, tokens))]
    _text(ax, label_x, row[0].y, label("decoder_only.sequence"), ha="right", gid="tokens_label")

    embed = _box(ax, mid, 0.92, width, 0.4, label("decoder_only.embedding"), "embed",
                 gid="embed", lit=on("embedding"))
    columns(row[0], embed)
    positions = _box(ax, mid, 1.45, width, 0.32, label("+ positional encoding"), "position",
                     gid="positions", lit=on("positional"))
    columns(embed, positions)
    sine = _sine(ax, left - 0.45, positions.y, gid="pe", lit=on("positional"))
    _arrow(ax, sine.right(), positions.left(), lit=on("positional"))

    attn = _box(ax, mid, 2.16, width, 0.44, label("decoder_only.masked attention"),
                "attention", gid="self_attn", lit=on("masked_attention"))
    columns(positions, attn)
    norm1 = _box(ax, mid, 2.64, width, 0.26, label("add & norm"), "norm", gid="norm1",
                 lit=on("norm"))
    ffn = _box(ax, mid, 3.12, width, 0.44, label("feed forward, one line"), "ffn", gid="ffn",
               lit=on("ffn"))
    norm2 = _box(ax, mid, 3.6, width, 0.26, label("add & norm"), "norm", gid="norm2",
                 lit=on("norm"))
    for below, above in ((attn, norm1), (norm1, ffn), (ffn, norm2)):
        columns(below, above)
    _frame(ax, left - 0.12, attn.bottom()[1] - 0.12, right + 0.12, norm2.top()[1] + 0.1,
           gid="blocks", side="left", name="")
    _causal_icon(ax, right + 0.55, attn.y)
    _text(ax, right + 0.25, attn.y - 0.2, label("decoder_only.causal mask"), ha="left", va="top",
          size=SMALL, color=NOTE_COLOR, gid="mask_note")
    _text(ax, right + 0.25, norm2.y, label("decoder_only.no cross"), ha="left",
          size=SMALL, color=NOTE_COLOR, gid="no_cross")

    generator = _box(ax, mid, 4.22, width, 0.36, label("decoder_only.generator"),
                     "linear", gid="generator", lit=on("generator"))
    columns(norm2, generator)
    outs = [_box(ax, x, 4.77, w, 0.36, token, "softmax" if j >= sep else "data",
                 gid=f"next{j}", size=SMALL, lit=on("answer") and j >= sep,
                 dashed=j < sep, color=INK if j >= sep else NOTE_COLOR)
            for j, (x, token) in enumerate(zip(xs, after))]
    columns(generator, outs[0])
    _text(ax, label_x, outs[0].y, label("decoder_only.next"), ha="right", gid="next_label")
    _text(ax, (xs[0] + xs[sep - 1]) / 2, 4.99, label("decoder_only.prompt"), size=SMALL,
          color=NOTE_COLOR, va="bottom", gid="prompt_note")
    _text(ax, (xs[sep] + xs[-1]) / 2, 4.99, label("decoder_only.answer"), size=SMALL,
          color=HIGHLIGHT_COLOR if on("answer") else INK, va="bottom", gid="answer_note")
    return ax.figure


def save_gallery(directory, dpi=100):
    """Save every diagram (both encoder layers) as ``directory/<name>.png``; returns the paths.

    ``python -m minitf.figures.diagrams DIRECTORY`` does the same, to look at them all at once
    (the figures the notebooks show, and the five board drawings with their defaults).
    No notebook calls it: it is for looking at them all.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    figures = {
        "transformer": transformer(), "attention_flow": attention_flow(),
        "multi_head": multi_head(), "encoder_layer_post_ln": encoder_layer(norm_first=False),
        "encoder_layer_pre_ln": encoder_layer(norm_first=True), "decoder_layer": decoder_layer(),
        "generation_loop": generation_loop(), "referent_model": referent_model(),
        "decoder_only": decoder_only(),
    }
    figures.update({
        "single_query": single_query(), "head_split": head_split(),
        "cross_attention": cross_attention(), "beam_tree": beam_tree(), "kv_cache": kv_cache(),
    })
    paths = []
    for name, fig in figures.items():
        paths.append(directory / f"{name}.png")
        fig.savefig(paths[-1], dpi=dpi)
    return paths


if __name__ == "__main__":
    import sys

    for path in save_gallery(sys.argv[1] if len(sys.argv) > 1 else "."):
        print(path)

"""Pictures for the course: attention heatmaps and labelled matrices.

This is the only module of minitf that imports matplotlib; everything else is plain numpy.
Chinese labels are drawn with a small font shipped in ``minitf/figures/fonts`` (see its README), so
plots look the same on every machine, with or without a system CJK font. The labels a helper
draws by default (axis names, legends, panel titles) follow `use_language` (their words are in
``labels.py``); a label the caller passes is drawn as given.
Used by the notebooks' figures, from notebook 00 on.
"""

from pathlib import Path

import matplotlib.pyplot as plt
import matplotlib.text
import numpy as np
from matplotlib import font_manager

from .labels import label

CJK_FONT_PATH = Path(__file__).resolve().parent / "fonts" / "minitf-cjk.otf"
CJK_FAMILY = "minitf CJK"

__all__ = ["CJK_FAMILY", "CJK_FONT_PATH", "attention_heatmap", "plot_matrix", "use_cjk_font"]


def use_cjk_font():
    """Make matplotlib draw Chinese characters with the bundled font. Safe to call repeatedly.

    The font is appended to ``rcParams["font.family"]``, so Latin text keeps the default font
    and matplotlib falls back to ours glyph by glyph (matplotlib >= 3.6). Returns the family name.
    Notebook 00 (the first Chinese labels).
    """
    if not any(f.name == CJK_FAMILY for f in font_manager.fontManager.ttflist):
        font_manager.fontManager.addfont(str(CJK_FONT_PATH))
    families = plt.rcParams["font.family"]
    if isinstance(families, str):
        families = [families]
    if CJK_FAMILY not in families:
        plt.rcParams["font.family"] = [*families, CJK_FAMILY]
    return CJK_FAMILY


def plot_matrix(
    matrix,
    *,
    x_labels=None,
    y_labels=None,
    ax=None,
    title=None,
    xlabel=None,
    ylabel=None,
    colorbar=True,
    annotate=False,
    fmt=".2f",
    **imshow_kwargs,
):
    """Draw a 2-D array as an image, one cell per entry, with optional labels on both axes.

    ``annotate=True`` writes each value in its cell (for small matrices). Extra keyword
    arguments go to ``imshow`` (``cmap``, ``vmin``, ``vmax``...). Returns the Axes.
    Notebook 00 §3.
    """
    m = np.asarray(matrix)
    if m.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {m.shape}")
    if m.dtype == bool:
        m = m.astype(float)
    if m.dtype.kind not in "iuf":
        raise ValueError(f"matrix must hold real numbers, got dtype {m.dtype}")
    n_rows, n_cols = m.shape
    x_labels = _labels(x_labels, n_cols, "x_labels")
    y_labels = _labels(y_labels, n_rows, "y_labels")

    use_cjk_font()
    if ax is None:
        size = (min(12, max(3.5, 0.45 * n_cols + 2)), min(10, max(3, 0.45 * n_rows + 1)))
        _, ax = plt.subplots(figsize=size, layout="constrained")
    image = ax.imshow(m, aspect="auto", interpolation="nearest", **imshow_kwargs)

    if x_labels is not None:
        _x_tick_labels(ax, x_labels)
    if y_labels is not None:
        ax.set_yticks(range(n_rows), y_labels)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax)
    # An Axes made before the first use_cjk_font() (plt.subplots in a fresh kernel) holds
    # text that does not know the font yet: give its titles, labels and ticks the fallback.
    for text in ax.findobj(matplotlib.text.Text):
        if CJK_FAMILY not in text.get_fontfamily():
            text.set_fontfamily([*text.get_fontfamily(), CJK_FAMILY])
    if annotate:
        # Dark text on light cells and light text on dark ones.
        mid = (image.norm.vmin + image.norm.vmax) / 2
        for (i, j), value in np.ndenumerate(m):
            ax.text(j, i, format(value, fmt), ha="center", va="center", fontsize=8,
                    color="black" if value > mid else "white")
    return ax


_SHORT_LABEL = 2  # characters: a label this short (一, 千, 12) is never turned


def _x_tick_labels(ax, labels, *, angle=45, fontsize=None, short_fontsize=None):
    """Label the x ticks 0, 1, ... of ``ax`` with ``labels``, each label turned on its own:
    one of one or two characters (a Chinese numeral such as 一, which turned reads as "/")
    stands upright; a longer one (``<bos>``, ``thousand``) is turned by ``angle`` degrees.
    ``fontsize`` is for the long labels, ``short_fontsize`` for the short ones (default: the
    tick size). Used by every helper here that writes x tick labels.
    """
    labels = [str(t) for t in labels]
    ax.set_xticks(range(len(labels)), labels)
    for text in ax.get_xticklabels():
        if len(text.get_text()) <= _SHORT_LABEL:
            text.set(rotation=0, ha="center", rotation_mode="default")
            if short_fontsize is not None:
                text.set_fontsize(short_fontsize)
            continue
        if angle == 90:  # centred under its tick, read from the bottom up
            text.set(rotation=90, ha="center", rotation_mode="default")
        else:  # its end at the tick
            text.set(rotation=angle, ha="right", rotation_mode="anchor")
        if fontsize is not None:
            text.set_fontsize(fontsize)
    return ax


def _labels(labels, n, name):
    """`labels` as a list of n strings (any iterable of n items), or None."""
    if labels is None:
        return None
    try:  # a str labels one position per character
        labels = [str(t) for t in labels]
    except TypeError:
        raise TypeError(f"{name} must be a list of labels, got "
                        f"{type(labels).__name__}") from None
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} entries for {n} {name[0]} positions")
    return labels


def attention_heatmap(weights, x_labels=None, y_labels=None, ax=None, title=None, **kwargs):
    """Heatmap of attention weights ``(L_q, L_k)``: one row per query, one column per key.

    Colours run from 0 to 1 so maps of different heads or layers can be compared; pass
    ``vmax=None`` to stretch the colours to the largest weight instead. Other keyword arguments
    go to :func:`plot_matrix` (``annotate=True``, ``cmap=...``); the axes are named "key" and
    "query" unless ``xlabel=``/``ylabel=`` say otherwise (labels follow `use_language`).
    Returns the Axes. Notebook 02 §4.
    """
    w = np.asarray(weights)
    if w.ndim != 2:
        raise ValueError(
            f"expected weights of shape (L_q, L_k), got {w.shape}; "
            "pick one batch item and head first, e.g. weights[0, h]"
        )
    kwargs.setdefault("vmin", 0.0)
    kwargs.setdefault("vmax", 1.0)
    kwargs.setdefault("cmap", "viridis")
    kwargs.setdefault("xlabel", label("key"))
    kwargs.setdefault("ylabel", label("query"))
    return plot_matrix(w, x_labels=x_labels, y_labels=y_labels, ax=ax, title=title, **kwargs)


# ---- notebook 07: distributions over the next token, and time per generated token

__all__ += ["step_times", "token_bars"]

def _closed_subplots(ncols, figsize, **kwargs):
    """A figure that pyplot will not show by itself: the caller shows or returns it once."""
    use_cjk_font()
    fig, axes = plt.subplots(1, ncols, figsize=figsize, layout="constrained", squeeze=False,
                             **kwargs)
    plt.close(fig)
    return fig, axes[0]


def token_bars(distributions, labels, titles, *, before=None, figsize=None):
    """Bar charts of distributions over the same tokens, side by side: one panel per
    distribution ``(V,)``, one bar per token, tokens labelled by ``labels`` (``V`` strings).
    ``before`` (optional, ``(V,)``) is drawn in grey behind every panel, e.g. the
    distribution before a filter. Labels follow `use_language`. Returns the Figure (the last
    line of a cell shows it). Notebook 07 §3–4.
    """
    dists = [np.asarray(d, dtype=float) for d in distributions]
    if len(titles) != len(dists):
        raise ValueError(f"{len(titles)} titles for {len(dists)} distributions")
    for d in dists + ([np.asarray(before)] if before is not None else []):
        if d.shape != (len(labels),):
            raise ValueError(f"a distribution has shape {d.shape}; expected ({len(labels)},), "
                             "one probability per label")
    # Wide enough for the upright one-character labels to stand apart at 10 pt.
    panel = max(2.8, 0.19 * len(labels) + 0.45)
    fig, axes = _closed_subplots(len(dists), figsize or (panel * len(dists), 2.6), sharey=True)
    x = np.arange(len(labels))
    for ax, dist, title in zip(axes, dists, titles):
        if before is not None:
            ax.bar(x, before, color="lightgray", label=label("before"))
        ax.bar(x, dist, color="tab:orange" if before is not None else "tab:blue",
               alpha=0.85 if before is not None else 1.0,
               label=label("after") if before is not None else None)
        _x_tick_labels(ax, labels, angle=90, fontsize=8, short_fontsize=10)
        ax.set_title(title)
    axes[0].set_ylabel(label("probability"))
    if before is not None:
        axes[0].legend(fontsize=8)
    return fig


def _running_median(values, width):
    padded = np.pad(values, width // 2, mode="edge")
    return np.array([np.median(padded[i:i + width]) for i in range(len(values))])


def step_times(seconds, labels, *, title=None, width=15):
    """Milliseconds per generated token against its position: one series ``(n,)`` of
    seconds per label, drawn as faint dots with a running median (``width`` steps) on top.
    Axis labels follow `use_language`. Returns the Figure. Notebook 07 (optional part: the KV
    cache measured).
    """
    colours = ("tab:red", "tab:blue", "tab:green", "tab:purple")
    if len(seconds) != len(labels) or len(labels) > len(colours):
        raise ValueError(f"{len(seconds)} series of times for {len(labels)} labels; "
                         f"give one label per series, at most {len(colours)}")
    fig, (ax,) = _closed_subplots(1, (7, 3))
    for series, name, colour in zip(seconds, labels, colours):
        ms = 1e3 * np.asarray(series, dtype=float)
        position = np.arange(1, len(ms) + 1)
        ax.plot(position, ms, ".", color=colour, alpha=0.25, markersize=3)
        ax.plot(position, _running_median(ms, width), color=colour, label=name)
    ax.set_xlabel(label("generated position"))
    ax.set_ylabel(label("ms per token"))
    if title:
        ax.set_title(title)
    ax.legend()
    return fig


# ---- notebook 02: the measured cost of attention

__all__ += ["plot_cost"]


def plot_cost(lengths, seconds, peak_bytes, title="scaled_dot_product_attention"):
    """Measured time (s) and peak memory (bytes) against the sequence length n, on log-log
    axes, each with a dashed n² line (slope 2) through its last point; ``title`` names what was
    measured. Labels follow `use_language`. Returns the Figure, closed in pyplot so that a
    notebook shows it once, as the cell's value. Notebook 02 §5.
    """
    n = np.asarray(lengths, dtype=float)
    series = {"seconds": np.asarray(seconds, dtype=float),
              "peak_bytes": np.asarray(peak_bytes, dtype=float)}
    if n.ndim != 1 or n.size < 2:
        raise ValueError(f"lengths must be at least 2 sequence lengths, got shape {n.shape}")
    for name, values in series.items():
        if values.shape != n.shape:
            raise ValueError(f"{name} has shape {values.shape} but lengths has {n.shape}: "
                             "one measurement per length")
    for name, values in (("lengths", n), *series.items()):
        if not np.all(np.isfinite(values) & (values > 0)):
            raise ValueError(f"{name} must be positive numbers (log-log axes), got {values}")
    use_cjk_font()
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), layout="constrained")
    for ax, y, name in ((axes[0], series["seconds"] * 1e3, "time (ms)"),
                        (axes[1], series["peak_bytes"] / 2**20, "peak memory (MiB)")):
        ax.loglog(n, y, "o-", label=label("measured"))
        ax.loglog(n, y[-1] * (n / n[-1]) ** 2, "k--", label="∝ n²")
        ax.set_xlabel(label("sequence length n"))
        ax.set_ylabel(label(name))
        ax.legend()
    axes[0].set_title(label("cost.time", title=title))
    axes[1].set_title(label("cost.memory"))
    plt.close(fig)
    return fig


# ---- notebook 05: one number per layer; notebook 06: one heatmap per head

__all__ += ["head_heatmaps", "plot_per_layer"]


def plot_per_layer(panels, *, xlabel=None):
    """Line plots side by side, one number per layer (layers numbered from 1): ``panels``
    maps each panel's title to ``(y-axis label, {curve name: values per layer})``; the x axis
    is "layer" unless ``xlabel`` says otherwise (it follows `use_language`). Returns the
    Figure, closed in pyplot so that a notebook shows it once, as the cell's value.
    Notebook 05 (optional part: post-LN and pre-LN in deep stacks).
    """
    if not panels:
        raise ValueError("panels is empty: give at least one {title: (ylabel, curves)}")
    xlabel = label("layer") if xlabel is None else xlabel
    use_cjk_font()
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.2),
                             layout="constrained", squeeze=False)
    for ax, (title, (ylabel, curves)) in zip(axes[0], panels.items()):
        for name, values in curves.items():
            values = np.asarray(values, dtype=float)
            if values.ndim != 1:
                raise ValueError(f"{title!r}, curve {name!r}: expected one value per layer, "
                                 f"got shape {values.shape}")
            ax.plot(np.arange(1, len(values) + 1), values, marker="o", label=name)
        ax.set(xlabel=xlabel, ylabel=ylabel, title=title, ylim=(0, None))
    axes[0, 0].legend()
    plt.close(fig)
    return fig


def head_heatmaps(weights, x_labels=None, y_labels=None, *, title=None):
    """One attention heatmap per head of ``weights`` ``(h, L_q, L_k)``, in a row, on one
    colour scale from 0 to 1 with a single colour bar. Returns the Figure, closed in pyplot
    so that a notebook shows it once, as the cell's value. Panel titles ("head 0") and axis
    names follow `use_language`. Notebook 06 §4.
    """
    w = np.asarray(weights)
    if w.ndim != 3:
        raise ValueError(f"expected weights of shape (h, L_q, L_k), got {w.shape}; "
                         "pick one batch item first, e.g. weights[0]")
    h, L_q, L_k = w.shape
    size = (min(12, h * (0.4 * L_k + 1.2) + 1), min(6, 0.4 * L_q + 1.6))
    return _heatmap_grid(w[None], x_labels, y_labels, title, size,
                         lambda layer, head: label("head", i=head))


def _heatmap_grid(w, x_labels, y_labels, title, figsize, panel_title):
    """Heatmaps of ``w`` ``(rows, h, L_q, L_k)`` in a grid, key labels under the last row and
    query labels beside the first column, one colour bar; the Figure, closed in pyplot.
    ``panel_title(layer, head)`` gives each panel's title."""
    use_cjk_font()
    rows, h = w.shape[:2]
    fig, axes = plt.subplots(rows, h, figsize=figsize, layout="constrained", squeeze=False)
    for layer, head in np.ndindex(rows, h):
        ax = axes[layer, head]
        attention_heatmap(w[layer, head], x_labels=x_labels if layer == rows - 1 else None,
                          y_labels=y_labels if head == 0 else None, ax=ax, colorbar=False,
                          title=panel_title(layer, head), xlabel="",
                          ylabel=label("query") if head == 0 else "")
        if head:
            ax.set_yticks([])
        if layer < rows - 1:
            ax.set_xticks([])
    fig.colorbar(axes[0, 0].images[0], ax=axes, shrink=0.8)
    fig.supxlabel(label("key"), fontsize=10)
    if title:
        fig.suptitle(title)
    plt.close(fig)
    return fig


# ---- notebook 08: every layer and every head of one kind of attention

__all__ += ["layer_head_heatmaps"]


def layer_head_heatmaps(weights, x_labels=None, y_labels=None, *, title=None):
    """A grid of attention heatmaps, one row per layer and one column per head, for
    ``weights`` ``(layers, h, L_q, L_k)`` (or a list of ``(h, L_q, L_k)`` arrays), on one
    colour scale from 0 to 1 with a single colour bar. Returns the Figure, closed in pyplot so
    that a notebook shows it once, as the cell's value. Panel titles ("layer 0 head 1") and
    axis names follow `use_language`. Notebook 08 §7.
    """
    w = np.asarray(weights)
    if w.ndim != 4:
        raise ValueError(f"expected weights of shape (layers, h, L_q, L_k), got {w.shape}; "
                         "stack one (h, L_q, L_k) array per layer")
    layers, h, L_q, L_k = w.shape
    size = (min(10.0, h * (0.25 * L_k + 0.6) + 1.0), min(5.0, layers * (0.25 * L_q + 0.6) + 0.6))
    return _heatmap_grid(w, x_labels, y_labels, title, size,
                         lambda layer, head: label("layer head", layer=layer, head=head))

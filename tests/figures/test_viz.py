"""Plots: Chinese labels render with a real font and without warnings."""

import subprocess
import sys
import warnings

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib import font_manager
from matplotlib.ft2font import FT2Font

from minitf.figures import viz

SOURCE = ["one", "thousand", "five", "<eos>"]
TARGET = ["<bos>", "一", "千", "零", "五"]


@pytest.fixture(autouse=True)
def clean_matplotlib():
    plt.switch_backend("Agg")
    with matplotlib.rc_context():
        yield
    plt.close("all")


def weights(rows, cols, seed=0):
    w = np.random.default_rng(seed).random((rows, cols))
    return w / w.sum(axis=1, keepdims=True)


def test_heatmap_with_chinese_labels_emits_no_warnings(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ax = viz.attention_heatmap(weights(5, 4), x_labels=SOURCE, y_labels=TARGET,
                                   title="一千零五", annotate=True)
        ax.figure.savefig(tmp_path / "heatmap.png")
    assert [str(w.message) for w in caught] == []


def test_chinese_on_axes_made_before_the_font_was_known_emits_no_warnings(tmp_path):
    # A fresh kernel: plt.subplots before any minitf plot (the Chinese notebook 04's 维度).
    plt.rcParams["font.family"] = ["sans-serif"]
    _, ax = plt.subplots()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        viz.plot_matrix(weights(5, 4), ax=ax, x_labels=["一", "千", "零", "五"],
                        y_labels=TARGET, xlabel="维度", ylabel="位置", title="正弦位置编码")
        ax.figure.savefig(tmp_path / "matrix.png")
    assert [str(w.message) for w in caught] == []


def test_chinese_glyph_comes_from_a_font_that_has_it():
    viz.use_cjk_font()
    # matplotlib tries the families in order and takes the first font holding the glyph.
    for family in plt.rcParams["font.family"]:
        path = font_manager.findfont(font_manager.FontProperties(family=[family]),
                                     fallback_to_default=False)
        if ord("千") in FT2Font(path).get_charmap():
            break
    else:
        pytest.fail("no font in rcParams['font.family'] has 千")
    assert family == viz.CJK_FAMILY
    assert path == str(viz.CJK_FONT_PATH)
    # Latin text keeps the default font.
    assert plt.rcParams["font.family"][0] != viz.CJK_FAMILY


def test_bundled_font_covers_the_task_vocabulary():
    charmap = FT2Font(str(viz.CJK_FONT_PATH)).get_charmap()
    assert all(ord(c) in charmap for c in "零〇一二两三四五六七八九十百千万亿，。")


def test_use_cjk_font_is_idempotent():
    viz.use_cjk_font()
    viz.use_cjk_font()
    assert list(plt.rcParams["font.family"]).count(viz.CJK_FAMILY) == 1
    registered = [f for f in font_manager.fontManager.ttflist if f.name == viz.CJK_FAMILY]
    assert len(registered) == 1


def test_heatmap_labels_colourbar_and_axes():
    fig, ax = plt.subplots()
    assert viz.attention_heatmap(weights(5, 4), SOURCE, TARGET, ax=ax, title="t") is ax
    assert [t.get_text() for t in ax.get_xticklabels()] == SOURCE
    assert [t.get_text() for t in ax.get_yticklabels()] == TARGET
    assert len(fig.axes) == 2  # the heatmap and its colourbar
    assert ax.images[0].get_array().shape == (5, 4)
    assert ax.images[0].norm.vmin == 0.0 and ax.images[0].norm.vmax == 1.0


def test_heatmap_rejects_bad_shapes():
    with pytest.raises(ValueError, match="weights\\[0, h\\]"):
        viz.attention_heatmap(np.zeros((1, 2, 3, 3)))
    with pytest.raises(ValueError, match="x_labels"):
        viz.attention_heatmap(weights(2, 3), x_labels=["a", "b"])


def test_plot_matrix_draws_boolean_masks():
    mask = np.tril(np.ones((3, 3), dtype=bool))
    ax = viz.plot_matrix(mask, colorbar=False, annotate=True, fmt=".0f")
    assert ax.images[0].get_array().dtype.kind == "f"
    assert [t.get_text() for t in ax.texts] == ["1", "0", "0", "1", "1", "0", "1", "1", "1"]


def rotations(ax):
    """{tick label: its rotation in degrees} of the x axis, once the figure is drawn."""
    ax.figure.canvas.draw()
    return {t.get_text(): t.get_rotation() for t in ax.get_xticklabels()}


def test_short_tick_labels_stay_upright_and_long_ones_turn_each_on_its_own():
    # One <bos> used to turn every label, and 一 turned 45° reads as "/".
    labels = ["<bos>", "一", "千"]
    ax = viz.plot_matrix(weights(3, 3), x_labels=labels, y_labels=labels)
    assert rotations(ax) == {"<bos>": 45, "一": 0, "千": 0}
    ax = viz.attention_heatmap(weights(3, 5), x_labels=["<bos>", "一", "千", "12", "<eos>"])
    assert rotations(ax) == {"<bos>": 45, "一": 0, "千": 0, "12": 0, "<eos>": 45}
    assert all(t.get_rotation() == 0 for t in ax.get_yticklabels())
    w = np.stack([weights(3, 3, seed) for seed in range(2)])  # (h, L_q, L_k)
    for fig in (viz.head_heatmaps(w, x_labels=labels), viz.layer_head_heatmaps(w[None], labels)):
        bottom = [ax for ax in fig.axes if ax.get_xticklabels()]
        assert bottom and all(rotations(ax) == {"<bos>": 45, "一": 0, "千": 0} for ax in bottom)


def test_token_bars_keeps_one_character_labels_upright_and_readable():
    labels = ["<eos>", "一", "十", "二"]
    fig = viz.token_bars([np.full(4, 0.25)], labels, ["T = 1"])
    assert rotations(fig.axes[0]) == {"<eos>": 90, "一": 0, "十": 0, "二": 0}
    sizes = {t.get_text(): t.get_fontsize() for t in fig.axes[0].get_xticklabels()}
    assert all(sizes[c] >= 10 for c in "一十二")


def test_matplotlib_is_imported_only_by_viz():
    code = "import sys, minitf; assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- notebook 07: token_bars and step_times

def test_token_bars_one_panel_per_distribution_with_the_tokens_labelled():
    labels = ["<eos>", "一", "十", "二"]
    before = np.array([0.1, 0.5, 0.3, 0.1])
    after = np.array([0.0, 0.625, 0.375, 0.0])
    fig = viz.token_bars([after, before], labels, ["filtered", "T = 1"], before=before)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["filtered", "T = 1"]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == labels
    heights = [p.get_height() for p in axes[0].patches]
    np.testing.assert_allclose(heights, np.concatenate([before, after]))  # grey, then orange
    assert plt.get_fignums() == []  # returned, not left for pyplot to show a second time


def test_token_bars_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="2 titles for 1 distributions"):
        viz.token_bars([np.ones(3) / 3], ["a", "b", "c"], ["x", "y"])
    with pytest.raises(ValueError, match=r"shape \(4,\); expected \(3,\)"):
        viz.token_bars([np.ones(4) / 4], ["a", "b", "c"], ["x"])


def test_step_times_draws_dots_and_a_running_median_per_series():
    slow = np.linspace(0.001, 0.01, 40)
    flat = np.full(40, 0.002)
    fig = viz.step_times([slow, flat], ["no cache", "cache"], title="t", width=5)
    (ax,) = fig.axes
    lines = ax.get_lines()
    assert len(lines) == 4  # dots and median, twice
    np.testing.assert_allclose(lines[0].get_ydata(), 1e3 * slow)
    np.testing.assert_allclose(lines[1].get_ydata()[2:-2], 1e3 * slow[2:-2])  # a line is its median
    np.testing.assert_allclose(lines[3].get_ydata(), 2.0)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["no cache", "cache"]
    with pytest.raises(ValueError, match="one label per series"):
        viz.step_times([slow], ["a", "b"])


# ---- notebook 02: plot_cost

def test_plot_cost_draws_measurements_and_the_n_squared_line():
    lengths = [64, 128, 256]
    fig = viz.plot_cost(lengths, [1e-4, 3e-4, 1.2e-3], [1e5, 4e5, 1.6e6])
    time_ax, memory_ax = fig.axes
    assert time_ax.get_xscale() == time_ax.get_yscale() == "log"
    measured, guide = time_ax.lines
    np.testing.assert_allclose(measured.get_ydata(), [0.1, 0.3, 1.2])  # in ms
    np.testing.assert_allclose(guide.get_ydata(), [1.2 / 16, 1.2 / 4, 1.2])  # n², through the last
    np.testing.assert_allclose(memory_ax.lines[0].get_ydata(), np.array([1e5, 4e5, 1.6e6]) / 2**20)
    assert fig not in [plt.figure(n) for n in plt.get_fignums()]  # closed: shown once


@pytest.mark.parametrize("lengths, seconds, peaks, message", [
    ([64, 128], [1e-4], [1e5, 2e5], "seconds has shape"),
    ([64, 128], [1e-4, 2e-4], [0, 2e5], "peak_bytes must be positive"),
    ([64], [1e-4], [1e5], "at least 2"),
])
def test_plot_cost_refuses_bad_measurements(lengths, seconds, peaks, message):
    with pytest.raises(ValueError, match=message):
        viz.plot_cost(lengths, seconds, peaks)


# ---- notebook 05: plot_per_layer; notebook 06: head_heatmaps

def test_plot_per_layer_draws_one_panel_per_title_and_one_line_per_curve():
    fig = viz.plot_per_layer({"stream": ("size", {"post-LN": [8, 8, 8], "pre-LN": [9, 11, 13]}),
                              "gradient": ("norm", {"post-LN": [3, 2, 1], "pre-LN": [1, 1, 1]})})
    assert [ax.get_title() for ax in fig.axes] == ["stream", "gradient"]
    assert [len(ax.lines) for ax in fig.axes] == [2, 2]
    assert list(fig.axes[0].lines[1].get_xdata()) == [1, 2, 3]  # layers counted from 1
    assert fig.axes[0].get_ylim()[0] == 0
    assert fig.number not in plt.get_fignums()  # closed: a notebook shows it once


def test_plot_per_layer_rejects_bad_input():
    with pytest.raises(ValueError, match="panels is empty"):
        viz.plot_per_layer({})
    with pytest.raises(ValueError, match="one value per layer"):
        viz.plot_per_layer({"stream": ("size", {"post-LN": np.ones((2, 3))})})


def test_head_heatmaps_draws_each_head_on_one_scale():
    w = np.stack([weights(5, 4, seed) for seed in range(3)])  # (h, L_q, L_k)
    fig = viz.head_heatmaps(w, x_labels=SOURCE, y_labels=TARGET, title="一千零五")
    heads = [ax for ax in fig.axes if ax.get_title().startswith("head")]
    assert [ax.get_title() for ax in heads] == ["head 0", "head 1", "head 2"]
    assert all(ax.images[0].get_clim() == (0.0, 1.0) for ax in heads)
    assert len(fig.axes) == 4  # three heads and one colour bar
    assert [t.get_text() for t in heads[0].get_yticklabels()] == TARGET
    assert fig.number not in plt.get_fignums()


def test_head_heatmaps_rejects_weights_without_a_head_axis():
    with pytest.raises(ValueError, match=r"\(h, L_q, L_k\)"):
        viz.head_heatmaps(weights(5, 4))


def test_layer_head_heatmaps_draws_a_grid_of_layers_by_heads_on_one_scale():
    w = np.stack([[weights(5, 4, 3 * layer + head) for head in range(3)]
                  for layer in range(2)])  # (layers, h, L_q, L_k)
    fig = viz.layer_head_heatmaps(w, x_labels=SOURCE, y_labels=TARGET, title="一千零五")
    maps = [ax for ax in fig.axes if ax.get_title().startswith("layer")]
    assert [ax.get_title() for ax in maps] == [f"layer {i} head {j}"
                                               for i in range(2) for j in range(3)]
    assert len(fig.axes) == 7  # six heatmaps and one colour bar
    assert all(ax.images[0].get_clim() == (0.0, 1.0) for ax in maps)
    np.testing.assert_allclose(maps[4].images[0].get_array(), w[1, 1])
    assert [t.get_text() for t in maps[3].get_yticklabels()] == TARGET  # first column only
    assert [t.get_text() for t in maps[3].get_xticklabels()] == SOURCE  # bottom row only
    assert maps[0].get_xticklabels() == [] and maps[1].get_yticklabels() == []
    assert fig._suptitle.get_text() == "一千零五"
    assert fig.number not in plt.get_fignums()


def test_layer_head_heatmaps_takes_a_list_per_layer_and_rejects_other_shapes():
    per_layer = [np.stack([weights(3, 3, seed)] * 2) for seed in range(2)]  # 2 × (h, L, L)
    fig = viz.layer_head_heatmaps(per_layer)
    assert sum(ax.get_title().startswith("layer") for ax in fig.axes) == 4
    with pytest.raises(ValueError, match=r"\(layers, h, L_q, L_k\)"):
        viz.layer_head_heatmaps(np.stack([weights(5, 4)] * 2))

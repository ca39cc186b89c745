"""minitf.figures.diagrams: each figure builds quietly, carries its labels, and nothing collides,
in English and in Chinese (the figures follow use_language; test_labels.py checks the words)."""

import itertools
import json
import re
import warnings
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import same_color
from matplotlib.figure import Figure
from matplotlib.ft2font import FT2Font
from matplotlib.patches import Patch
from matplotlib.text import Text

from minitf.figures import diagrams, viz
from minitf.language import LANGUAGES, use_language

# Every diagram as a notebook calls it: (function name, keyword arguments).
DIAGRAMS = [
    ("transformer", {}),
    ("attention_flow", {}),
    ("multi_head", {}),
    ("encoder_layer", {"norm_first": False}),
    ("encoder_layer", {"norm_first": True}),
    ("decoder_layer", {}),
    ("generation_loop", {}),
    ("referent_model", {}),
    ("single_query", {}),
    ("head_split", {}),
    ("head_split", {"num_heads": 2}),
    ("head_split", {"num_heads": 8}),
    ("cross_attention", {}),
    ("beam_tree", {}),
    ("beam_tree", {"beam_size": 1}),
    ("beam_tree", {"beam_size": 3}),
    ("kv_cache", {}),
    ("decoder_only", {}),
]


def ident(name, kwargs):
    """The diagram's key in REQUIRED: encoder_layer_pre_ln, head_split_2, beam_tree_1, ..."""
    if kwargs.get("norm_first"):
        return name + "_pre_ln"
    return "_".join([name, *(str(v) for k, v in kwargs.items() if k != "norm_first")])


IDS = [ident(name, kw) for name, kw in DIAGRAMS]

# Labels each must show, and how many times (whole text of one label, as drawn).
REQUIRED = {
    "transformer": {
        "N×": 2, "Encoder\n编码器": 1, "Decoder\n解码器": 1, "Add & Norm": 5,
        "Multi-Head Attention\n多头注意力": 1, "Masked Multi-Head Attention\n掩码自注意力": 1,
        "Multi-Head Cross-Attention\n交叉注意力": 1, "Feed Forward\n前馈网络": 2,
        "Positional\nencoding 位置编码": 2,
        "Embedding $\\times\\sqrt{d_{\\mathrm{model}}}$\n嵌入": 2,
        "Linear": 1, "Softmax": 1, "K, V": 1, "Inputs: one thousand five <eos>": 1,
        "Outputs, shifted right: <bos> 一 千 零 五": 1,
    },
    "attention_flow": {
        "X": 1, "Q": 1, "K": 1, "V": 1, "Z": 1, "$W^Q$": 1, "$W^K$": 1, "$W^V$": 1,
        "$L \\times d_k$": 2, "$L \\times d_v$": 2, "$L \\times L$": 1,
        "scores\n$QK^\\top/\\sqrt{d_k}$": 1, "mask\n(optional)": 1, "softmax\nper row": 1,
        "$\\times\\ V$": 1,
    },
    "multi_head": {
        **{f"${m}_{i}$": 1 for m in "QKVZ" for i in range(1, 5)},
        **{f"head {i}": 1 for i in range(1, 5)},
        "attention": 4, "$W^Q$": 1, "$W^K$": 1, "$W^V$": 1, "$W^O$": 1, "concat 拼接": 1,
        "split into\nh = 4 heads": 1, "Multi-head attention 多头注意力": 1,
    },
    "encoder_layer": {
        "N×": 1, "Multi-Head Attention\n多头注意力": 1, "Feed Forward\n前馈网络": 1,
        "LayerNorm\n层归一化": 2, "residual connection 残差连接": 1,
    },
    "encoder_layer_pre_ln": {
        "N×": 1, "Multi-Head Attention\n多头注意力": 1, "Feed Forward\n前馈网络": 1,
        "LayerNorm\n层归一化": 3, "residual connection 残差连接": 1,
        "once, after\nthe N layers": 1,
    },
    "decoder_layer": {
        "N×": 1, "Masked Self-Attention\n掩码自注意力": 1, "Cross-Attention\n交叉注意力": 1,
        "Feed Forward\n前馈网络": 1, "Add &\nNorm": 3, "causal mask\n因果掩码": 1,
        "encoder memory\n编码器输出": 1, "K, V": 1, "Q": 1,
    },
    "generation_loop": {
        "one thousand five <eos>": 1, "<bos>": 5, "一": 5, "千": 4, "零": 3, "五": 2,
        "<eos>": 1, "stop: 一千零五": 1, "memory": 1, "Encoder 编码器\n(runs once)": 1,
        "Decoder 解码器\n→ Linear → softmax": 5,
    },
    "referent_model": {
        **{word: 1 for word in ("animal", "didn't", "cross", "street", "because", "it", "was",
                                "too", "tired")},
        "the": 2, "words 词": 1, "N×": 1, "$h_{\\mathrm{it}}$": 1,
        **{f"$h_{{{j}}}$": 1 for j in (1, 2, 3, 4, 5, 6, 7, 9, 10, 11)},
        "Embedding 嵌入\n$\\times\\sqrt{d_{\\mathrm{model}}}$": 1,
        "+ positional encoding 位置编码": 1, "q": 1, "1.00": 1,
    },
    "single_query": {
        "$q_1$": 1, "$k_1$": 1, "$k_2$": 1, "“Thinking”": 1, "key of “Thinking”": 1,
        "key of “Machines”": 1, "query 查询": 1, "$q_1 \\cdot k_1 = 112$": 1,
        "$q_1 \\cdot k_2 = 96$": 1, "÷ 8": 2, "14": 1, "12": 1, "softmax": 1, "0.88": 1,
        "0.12": 1, "$\\times\\ v_1$": 1, "$\\times\\ v_2$": 1, "$z_1$": 1,
        "$z_1 = 0.88\\,v_1 + 0.12\\,v_2$": 1,
    },
    "head_split": {
        **{f"$Q_{i}$": 1 for i in range(4)}, **{f"$Z_{i}$": 1 for i in range(4)},
        **{f"head {i}": 1 for i in range(4)}, **{str(i): 1 for i in range(4)},
        "$Q = XW^Q$": 1, "split_heads": 1, "merge_heads": 1, "= concat 拼接": 1, "$W^O$": 1,
        "output": 1, "attention, every head on its own 每个头独立计算": 1,
        "Splitting into heads 拆分多头": 1, "K and V are split the same way": 1,
    },
    "head_split_2": {
        "$Q_0$": 1, "$Q_1$": 1, "$Z_0$": 1, "$Z_1$": 1, "head 0": 1, "head 1": 1, "head 2": 0,
        "$Q_2$": 0, "split_heads": 1, "merge_heads": 1,
    },
    "head_split_8": {
        **{f"$Q_{i}$": 1 for i in range(8)}, **{f"$Z_{i}$": 1 for i in range(8)},
        "head 0": 0, "split_heads": 1, "merge_heads": 1,
    },
    "cross_attention": {
        "Cross-attention 交叉注意力: a rectangle, not a square": 1,
        "one": 1, "thousand": 1, "five": 1, "<eos>": 1,
        "<bos>": 3, "一": 3, "千": 3, "零": 3, "五": 3,  # rows; the square's rows and columns
        "keys K, values V 键、值: the encoder memory 编码器输出": 1,
        "queries Q 查询:\nthe decoder 解码器": 1,
        "for contrast: masked self-attention\n掩码自注意力": 1,
        "$L_t \\times L_t = 5 \\times 5$": 1,
    },
    "beam_tree": {
        "<bos>\n0.00": 1, "一\n−0.69": 1, "十\n−0.80": 1, "<eos>\n−3.00": 2, "十\n−1.39": 1,
        "二\n−1.61": 1, "二\n−0.85": 1, "<eos>\n−3.79": 1, "二\n−1.49": 1,
        "<eos>\n−3.69": 1, "<eos>\n−1.49": 1, "<eos>\n−0.85": 1,
        **{f"step {t}\nkeep 2": 1 for t in (1, 2, 3)}, "step 4\nkeep 1": 1,
        "in the beam 保留": 1, "finished: ends in <eos> 完成": 1, "pruned 剪枝": 1,
    },
    "beam_tree_1": {
        "<bos>\n0.00": 1, "一\n−0.69": 1, "十\n−0.80": 1, "十\n−1.39": 1, "二\n−1.49": 1,
        "<eos>\n−1.49": 1, "二\n−0.85": 0, **{f"step {t}\nkeep 1": 1 for t in (1, 2, 3, 4)},
    },
    "beam_tree_3": {
        "<bos>\n0.00": 1, "<eos>\n−3.00": 2, "<eos>\n−0.85": 1, "<eos>\n−1.49": 1,
        "step 1\nkeep 3": 1, "step 2\nkeep 2": 1, "step 4\nkeep 1": 1,
    },
    "kv_cache": {
        "KV cache 键值缓存: each step appends one row to K and V": 1,
        **{f"$q_{t}$": 1 for t in range(1, 5)}, **{f"$z_{t}$": 1 for t in range(1, 5)},
        **{f"$k_{r}$": 5 - r for r in range(1, 5)}, **{f"$v_{r}$": 5 - r for r in range(1, 5)},
        **{f"$K$: ${t} \\times d_k$": 1 for t in range(1, 5)},
        **{f"$V$: ${t} \\times d_v$": 1 for t in range(1, 5)},
        "step 1: feed <bos>": 1, "step 2: feed 一": 1, "step 3: feed 千": 1,
        "step 4: feed 零": 1, "1 row": 5, "2 rows": 1, "3 rows": 1, "4 rows": 1,
    },
    "decoder_only": {
        "<bos>": 1, "<eos>": 1,  # the input and, one position on, the next token
        **{token: 2 for token in ("one", "thousand", "five", "<sep>", "一", "千", "零", "五")},
        "Embedding 嵌入  × √d_model": 1, "+ positional encoding 位置编码": 1,
        "Masked Self-Attention 掩码自注意力": 1, "Feed Forward 前馈网络": 1, "Add & Norm": 2,
        "N×": 1, "Linear → softmax: the next token": 1, "prompt: not scored": 1,
        "answer: scored by the loss": 1,
    },
}


@pytest.fixture(autouse=True)
def clean_matplotlib():
    with matplotlib.rc_context():
        yield
    use_language("en")


# The geometry tests run once per language: the Chinese labels must fit the same boxes.
IN_BOTH = [pytest.param(*d, language, id=f"{i}-{language}")
           for d, i in zip(DIAGRAMS, IDS) for language in LANGUAGES]


def make(name, language="en", **kwargs):
    """The figure in `language`, with every warning an error."""
    use_language(language)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return getattr(diagrams, name)(**kwargs)


def build(name, language="en", **kwargs):
    """The figure in `language` drawn once by Agg, with every warning (e.g. a missing glyph)
    an error."""
    fig = make(name, language, **kwargs)
    canvas = FigureCanvasAgg(fig)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        canvas.draw()
    return fig, canvas.get_renderer()


def texts(fig):
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]


def by_gid(fig, gid):
    found = [a for a in fig.findobj(lambda a: a.get_gid() == gid)]
    assert len(found) == 1, f"{len(found)} artists with gid {gid!r}"
    return found[0]


def lit_gids(fig):
    """gids of every patch outlined in the highlight colour."""
    return {p.get_gid() for p in fig.findobj(Patch)
            if p.get_linewidth() > 0 and same_color(p.get_edgecolor(), diagrams.HIGHLIGHT_COLOR)}


@pytest.mark.parametrize(("name", "kwargs", "key"), [(*d, i) for d, i in zip(DIAGRAMS, IDS)],
                         ids=IDS)
def test_builds_a_slide_sized_figure_with_its_labels(name, kwargs, key):
    fig, _ = build(name, **kwargs)
    assert isinstance(fig, Figure)
    width, height = fig.get_size_inches()
    assert width <= 10 and height <= 5.6
    drawn = [t.get_text() for t in texts(fig)]
    missing = {label: (drawn.count(label), n) for label, n in REQUIRED[key].items()
               if drawn.count(label) != n}
    assert missing == {}, "label: (drawn, expected)"
    assert min(t.get_fontsize() for t in texts(fig)) >= 10


@pytest.mark.parametrize(("name", "kwargs", "language"), IN_BOTH)
def test_no_two_labels_overlap_and_all_lie_inside_the_figure(name, kwargs, language):
    fig, renderer = build(name, language, **kwargs)
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts(fig)]
    page = fig.bbox
    outside = [s for s, b in boxes
               if b.x0 < page.x0 or b.y0 < page.y0 or b.x1 > page.x1 or b.y1 > page.y1]
    assert outside == []
    overlapping = [(s, t) for (s, a), (t, b) in itertools.combinations(boxes, 2)
                   if min(a.x1, b.x1) - max(a.x0, b.x0) > 0.5
                   and min(a.y1, b.y1) - max(a.y0, b.y0) > 0.5]
    assert overlapping == []


@pytest.mark.parametrize(("name", "kwargs", "language"), IN_BOTH)
def test_every_box_label_fits_inside_its_box(name, kwargs, language):
    fig, renderer = build(name, language, **kwargs)
    labels = [t for t in texts(fig) if (t.get_gid() or "").endswith(".label")]
    assert labels
    for text in labels:
        box = by_gid(fig, text.get_gid().removesuffix(".label")).get_window_extent(renderer)
        inner = text.get_window_extent(renderer)
        margin = 3  # pixels at 100 dpi
        assert (inner.x0 - box.x0 >= margin and box.x1 - inner.x1 >= margin
                and inner.y0 - box.y0 >= margin and box.y1 - inner.y1 >= margin), text.get_text()


@pytest.mark.parametrize(("name", "kwargs", "language"), IN_BOTH)
def test_chinese_labels_are_drawn_with_the_shipped_font(name, kwargs, language):
    matplotlib.rcdefaults()  # the diagram must register the font itself
    fig, _ = build(name, language, **kwargs)
    chinese = [t for t in texts(fig) if any("\u4e00" <= c <= "\u9fff" for c in t.get_text())]
    assert chinese
    for text in chinese:
        # matplotlib takes each glyph from the first family in the list that has it.
        for c in {c for c in text.get_text() if "\u4e00" <= c <= "\u9fff"}:
            for family in text.get_fontfamily():
                path = font_manager.findfont(font_manager.FontProperties(family=[family]))
                if ord(c) in FT2Font(path).get_charmap():
                    break
            assert path == str(viz.CJK_FONT_PATH), (c, path)


def test_pre_ln_puts_the_norm_before_each_sublayer_and_adds_a_final_norm():
    def left_to_right(fig):
        parts = ("norm1", "self_attn", "add1", "norm2", "ffn", "add2")
        return sorted(parts, key=lambda gid: by_gid(fig, gid).get_extents().x0)

    post, pre = make("encoder_layer", norm_first=False), make("encoder_layer", norm_first=True)
    assert left_to_right(post) == ["self_attn", "add1", "norm1", "ffn", "add2", "norm2"]
    assert left_to_right(pre) == ["norm1", "self_attn", "add1", "norm2", "ffn", "add2"]
    assert not post.findobj(lambda a: a.get_gid() == "final_norm")
    final = by_gid(pre, "final_norm")
    # The final norm sits after the N× frame, outside the repeated layer.
    assert final.get_extents().x0 > by_gid(pre, "layer").get_extents().x1
    # The formulas say the same: LayerNorm(x + Sublayer(x)) against x + Sublayer(LayerNorm(x)).
    post_formula, pre_formula = (by_gid(f, "formula").get_text() for f in (post, pre))
    assert post_formula.index("LayerNorm") < post_formula.index("Sublayer")
    assert pre_formula.index("Sublayer") < pre_formula.index("LayerNorm")


@pytest.mark.parametrize(("name", "part", "expected"), [
    ("transformer", "decoder", {"decoder"}),
    ("transformer", "cross_attention", {"decoder.cross_attn"}),
    ("transformer", "generator", {"generator.linear", "generator.softmax"}),
    ("transformer", "positional", {"src_pe", "tgt_pe", "src_add", "tgt_add"}),
    ("attention_flow", "softmax", {"softmax"}),
    ("attention_flow", "mask", {"mask"}),
    ("multi_head", "output", {"W_O"}),
    ("multi_head", "heads", {"head1", "head2", "head3", "head4"}),
    ("encoder_layer", "norm", {"norm1", "norm2"}),
    ("decoder_layer", "cross_attention", {"cross_attn"}),
    ("generation_loop", "encoder", {"encoder"}),
    ("referent_model", "pointer", {"pointer"}),
    ("referent_model", "positional", {"positions", "pe"}),
    ("single_query", "keys", {"key1", "key2"}),
    ("single_query", "scores", {"score1", "score2"}),
    ("head_split", "heads", {*(f"head{i}" for i in range(4)), *(f"Z{i}" for i in range(4))}),
    ("head_split", "merge", {"merged", "merge"}),
    ("cross_attention", "memory", {"src0", "src1", "src2", "src3"}),
    ("cross_attention", "masked_self_attention", {"self_weights"}),
    ("beam_tree", "finished", {"node:十二<eos>", "node:一十二<eos>"}),
    ("beam_tree", "ranking", {"ranking"}),
    ("kv_cache", "query", {f"step{t}.q" for t in range(1, 5)}),
    ("kv_cache", "new_rows", {f"step{t}.{m}{t}" for t in range(1, 5) for m in "kv"}),
    ("decoder_only", "masked_attention", {"self_attn"}),
    ("decoder_only", "answer", {"next4", "next5", "next6", "next7", "next8"}),
])
def test_highlight_outlines_the_named_boxes(name, part, expected):
    fig = make(name, highlight=part)
    assert expected <= lit_gids(fig)
    # Only that part: no other named box is lit.
    assert {g for g in lit_gids(fig) if g} == expected


@pytest.mark.parametrize("name", sorted(diagrams.PARTS))
def test_every_part_can_be_highlighted_and_nothing_is_lit_by_default(name):
    assert lit_gids(make(name)) == set()
    lit = {}
    for part in diagrams.PARTS[name]:
        lit[part] = lit_gids(make(name, highlight=part))
        assert lit[part], f"{name}(highlight={part!r}) outlines nothing"
    a, b = diagrams.PARTS[name][:2]
    assert lit_gids(make(name, highlight=(a, b))) == lit[a] | lit[b]


def test_unknown_highlight_is_an_error_naming_the_parts():
    with pytest.raises(ValueError, match=r"cannot highlight \['encoder'\].*'softmax'"):
        diagrams.attention_flow(highlight="encoder")


def test_gallery_writes_every_diagram(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paths = diagrams.save_gallery(tmp_path, dpi=50)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)
    names = {name for name, _ in DIAGRAMS} - {"encoder_layer"}
    assert {p.stem for p in paths} == names | {"encoder_layer_post_ln", "encoder_layer_pre_ln"}
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)


def test_referent_model_points_from_it_and_has_no_decoder():
    fig = make("referent_model")
    drawn = [t.get_text() for t in texts(fig)]
    # The notes' sentence, word by word, left to right, "it" in attention's colour.
    words = [by_gid(fig, f"word{j}.label") for j in range(11)]
    assert " ".join(t.get_text() for t in words) == (
        "the animal didn't cross the street because it was too tired")
    assert same_color(by_gid(fig, "word7").get_facecolor(), diagrams.COLORS["attention"])
    # The pointer asks from "it": its label names the query, the keys and the softmax.
    pointer = by_gid(fig, "pointer.label").get_text()
    assert "h_{\\mathrm{it}}" in pointer and "W^Q" in pointer and "W^K" in pointer
    assert "softmax" in pointer
    # p: one bar per word, the tallest over "animal".
    bars = [by_gid(fig, f"p{j}") for j in range(11)]
    assert max(range(11), key=lambda j: bars[j].get_height()) == 1
    assert not any("Decoder" in s or "Linear" in s for s in drawn)



def notebook_source(number):
    """Every cell's source of notebook ``number``, read-only: the figures draw its numbers."""
    (path,) = (Path(__file__).resolve().parents[2] / "notebooks").glob(f"{number}_*.ipynb")
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_single_query_draws_the_notes_numbers_as_notebook_01_executes_them():
    fig = make("single_query")
    # 112 and 96 on the arrows, ÷ √64 = 8, and the softmax of what is left.
    scaled = np.array([112, 96]) / np.sqrt(64)
    weights = np.exp(scaled - scaled.max()) / np.exp(scaled - scaled.max()).sum()
    assert by_gid(fig, "score1.value").get_text().endswith("= 112$")
    assert by_gid(fig, "score2.value").get_text().endswith("= 96$")
    assert [by_gid(fig, f"scaled{i}.label").get_text() for i in (1, 2)] == ["14", "12"]
    assert [by_gid(fig, f"weight{i}.value").get_text() for i in (1, 2)] == [
        f"{w:.2f}" for w in weights] == ["0.88", "0.12"]
    # The bars are as long as the weights, and z₁ is their sum of the values.
    bars = [by_gid(fig, f"weight{i}").get_width() for i in (1, 2)]
    np.testing.assert_allclose(bars, weights)
    assert "0.88\\,v_1 + 0.12\\,v_2" in by_gid(fig, "result").get_text()
    # The same numbers as notebook 01 §3 prints when it runs the example.
    outputs = "".join("".join(o.get("text", "")) for c in notebook_source("01")
                      for o in c.get("outputs", ()))
    assert "[112.  96.]" in outputs and "[14. 12.]" in outputs and "0.8808 0.1192" in outputs


@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
def test_head_split_gives_head_i_the_columns_of_block_i(num_heads):
    fig = make("head_split", num_heads=num_heads)
    d_k = 2  # columns drawn per head

    def color(gid):
        return by_gid(fig, gid).get_facecolor()

    for i in range(num_heads):
        head = color(f"head{i}.0.0")
        assert same_color(color(f"Z{i}.0.0"), head)
        for c in range(num_heads * d_k):  # Q's and the merged columns: block c // d_k is head i
            assert same_color(color(f"Q.0.{c}"), head) == (c // d_k == i)
            assert same_color(color(f"merged.0.{c}"), head) == (c // d_k == i)
    assert not fig.findobj(lambda a: a.get_gid() == f"head{num_heads}")
    assert "(B, h, L, d_k)" in by_gid(fig, "formula").get_text()


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"num_heads": 0}, ValueError, "num_heads must be from 1 to 8"),
    ({"num_heads": 9}, ValueError, "num_heads must be from 1 to 8"),
    ({"num_heads": "4"}, TypeError, "num_heads must be an int"),
    ({"num_heads": True}, TypeError, "num_heads must be an int"),
])
def test_head_split_names_a_wrong_number_of_heads(kwargs, error, match):
    with pytest.raises(error, match=match):
        diagrams.head_split(**kwargs)


def test_cross_attention_is_a_rectangle_and_self_attention_a_lower_triangle():
    fig = make("cross_attention")
    target, source = ["<bos>", "一", "千", "零", "五"], ["one", "thousand", "five", "<eos>"]
    assert [by_gid(fig, f"tgt{r}.label").get_text() for r in range(5)] == target
    assert [by_gid(fig, f"src{c}.label").get_text() for c in range(4)] == source

    def cells(gid):
        return {a.get_gid() for a in fig.findobj(Patch)
                if (a.get_gid() or "").startswith(gid + ".")}

    # L_t × L_s = 5 × 4 weights, none masked; the square 5 × 5, masked above the diagonal.
    assert cells("weights") == {f"weights.{r}.{c}" for r in range(5) for c in range(4)}
    assert not any(same_color(by_gid(fig, g).get_facecolor(), diagrams.COLORS["mask"])
                   for g in cells("weights"))
    assert cells("self_weights") == {f"self_weights.{r}.{c}" for r in range(5) for c in range(5)}
    for r in range(5):
        for c in range(5):
            masked = same_color(by_gid(fig, f"self_weights.{r}.{c}").get_facecolor(),
                                diagrams.COLORS["mask"])
            assert masked == (c > r), (r, c)
    frame = by_gid(fig, "weights")
    assert frame.get_width() != frame.get_height()


def toy_table_of_notebook_07():
    import ast

    for cell in notebook_source("07"):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and "TOY = {" in source:
            for node in ast.parse(source).body:
                if isinstance(node, ast.Assign) and node.targets[0].id == "TOY":
                    return ast.literal_eval(node.value)
    raise AssertionError("notebook 07 has no TOY table")


def test_beam_tree_draws_notebook_07s_toy_and_its_answer():
    assert diagrams._BEAM_TOY == toy_table_of_notebook_07()
    fig = make("beam_tree")
    nodes = {a.get_gid()[5:]: a for a in fig.findobj(Patch)
             if (a.get_gid() or "").startswith("node:")}

    def status(name):
        box = nodes[name]
        if box.get_linestyle() != "-":
            return "pruned"
        return "finished" if same_color(box.get_facecolor(), diagrams.COLORS["softmax"]) else "kept"

    # Notebook 07's answer to "run beam search by hand with K = 2", step by step.
    kept = {n for n in nodes if n != "root" and status(n) != "pruned"}
    assert kept == {"一", "十", "十二", "一十", "十二<eos>", "一十二", "一十二<eos>"}
    assert {n for n in nodes if status(n) == "finished"} == {"十二<eos>", "一十二<eos>"}
    assert len(nodes) == 1 + 3 + 5 + 3 + 1  # <bos>, then every candidate of steps 1-4
    # Each box's total is its parent's plus the log p on the arrow into it, to rounding.
    total = {n: float(by_gid(fig, f"node:{n}.label").get_text().split("\n")[1]
                      .replace("−", "-")) for n in nodes}
    for name in nodes:
        if name == "root":
            continue
        parent = name.removesuffix("<eos>") if name.endswith("<eos>") else name[:-1]
        step = float(by_gid(fig, f"edge:{name}").get_text().replace("−", "-"))
        assert abs(total[name] - (total[parent or "root"] + step)) <= 0.011, name
    # The ranking: 十二 first, log p / lp(n) with n counting <eos>.
    ranking = by_gid(fig, "ranking.label").get_text().split("\n")
    scores = [np.log(0.45 * 0.95) / (8 / 6) ** 0.6, np.log(0.5 * 0.5 * 0.9) / (9 / 6) ** 0.6]
    assert ranking[1].startswith("1. 十二 (n = 3)") and ranking[1].endswith(
        f"= {scores[0]:.2f}".replace("-", "−"))
    assert ranking[2].startswith("2. 一十二 (n = 4)") and ranking[2].endswith(
        f"= {scores[1]:.2f}".replace("-", "−"))


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"beam_size": 0}, ValueError, "beam_size must be from 1 to 3"),
    ({"beam_size": 4}, ValueError, "beam_size must be from 1 to 3"),
    ({"beam_size": 2.0}, TypeError, "beam_size must be an int"),
])
def test_beam_tree_names_a_wrong_beam_size(kwargs, error, match):
    with pytest.raises(error, match=match):
        diagrams.beam_tree(**kwargs)


def test_kv_cache_grows_one_row_a_step_and_the_query_reads_them_all():
    fig = make("kv_cache")
    new = diagrams.COLORS["linear"]
    for t in range(1, 5):
        for m in "kav":  # keys, weights, values: t rows at step t
            rows = [a for a in fig.findobj(Patch)
                    if re.fullmatch(rf"step{t}\.{m}\d", a.get_gid() or "")]
            assert len(rows) == t, (t, m)
        for m in "kv":  # only the last row is new; the others come from the cache
            fresh = [r for r in range(1, t + 1)
                     if same_color(by_gid(fig, f"step{t}.{m}{r}").get_facecolor(), new)]
            assert fresh == [t], (t, m)
        assert same_color(by_gid(fig, f"step{t}.q").get_facecolor(), new)
        # The work: one row with the cache, t rows without it.
        assert by_gid(fig, f"step{t}.cached").get_text() == "1 row"
        assert by_gid(fig, f"step{t}.full").get_text() == ("1 row" if t == 1 else f"{t} rows")
        assert by_gid(fig, f"step{t}.K_shape").get_text() == f"$K$: ${t} \\times d_k$"


def test_decoder_only_is_one_stack_over_one_sequence_scored_from_sep():
    fig = make("decoder_only")
    drawn = [t.get_text() for t in texts(fig)]
    tokens = [by_gid(fig, f"token{j}.label").get_text() for j in range(9)]
    assert " ".join(tokens) == "<bos> one thousand five <sep> 一 千 零 五"
    # every position predicts the token after it; the answer's, from <sep> on, are scored
    after = [by_gid(fig, f"next{j}.label").get_text() for j in range(9)]
    assert after == tokens[1:] + ["<eos>"]
    scored = [same_color(by_gid(fig, f"next{j}").get_facecolor(), diagrams.COLORS["softmax"])
              for j in range(9)]
    assert scored == [j >= tokens.index("<sep>") for j in range(9)]
    # one stack: no encoder, no cross-attention box, no memory
    assert not any("Cross" in s or "Encoder" in s or "memory" in s for s in drawn)
    assert by_gid(fig, "no_cross").get_text() == "no cross-\nattention:\nno encoder"

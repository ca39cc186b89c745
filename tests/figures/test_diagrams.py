"""minitf.diagrams: each figure builds quietly, carries its labels, and nothing collides."""

import itertools
import warnings

import matplotlib
import pytest
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import same_color
from matplotlib.figure import Figure
from matplotlib.ft2font import FT2Font
from matplotlib.patches import Patch
from matplotlib.text import Text

from minitf.figures import diagrams, viz

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
    ("decoder_only", {}),
]
IDS = [name + ("_pre_ln" if kw.get("norm_first") else "") for name, kw in DIAGRAMS]

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


def make(name, **kwargs):
    """The figure, with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return getattr(diagrams, name)(**kwargs)


def build(name, **kwargs):
    """The figure drawn once by Agg, with every warning (e.g. a missing glyph) an error."""
    fig = make(name, **kwargs)
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


@pytest.mark.parametrize(("name", "kwargs"), DIAGRAMS, ids=IDS)
def test_no_two_labels_overlap_and_all_lie_inside_the_figure(name, kwargs):
    fig, renderer = build(name, **kwargs)
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts(fig)]
    page = fig.bbox
    outside = [s for s, b in boxes
               if b.x0 < page.x0 or b.y0 < page.y0 or b.x1 > page.x1 or b.y1 > page.y1]
    assert outside == []
    overlapping = [(s, t) for (s, a), (t, b) in itertools.combinations(boxes, 2)
                   if min(a.x1, b.x1) - max(a.x0, b.x0) > 0.5
                   and min(a.y1, b.y1) - max(a.y0, b.y0) > 0.5]
    assert overlapping == []


@pytest.mark.parametrize(("name", "kwargs"), DIAGRAMS, ids=IDS)
def test_every_box_label_fits_inside_its_box(name, kwargs):
    fig, renderer = build(name, **kwargs)
    labels = [t for t in texts(fig) if (t.get_gid() or "").endswith(".label")]
    assert labels
    for text in labels:
        box = by_gid(fig, text.get_gid().removesuffix(".label")).get_window_extent(renderer)
        inner = text.get_window_extent(renderer)
        margin = 3  # pixels at 100 dpi
        assert (inner.x0 - box.x0 >= margin and box.x1 - inner.x1 >= margin
                and inner.y0 - box.y0 >= margin and box.y1 - inner.y1 >= margin), text.get_text()


@pytest.mark.parametrize(("name", "kwargs"), DIAGRAMS, ids=IDS)
def test_chinese_labels_are_drawn_with_the_shipped_font(name, kwargs):
    matplotlib.rcdefaults()  # the diagram must register the font itself
    fig, _ = build(name, **kwargs)
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
    assert len(paths) == len(DIAGRAMS)
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

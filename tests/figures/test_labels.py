"""The figures speak the course's language (issue 35): every word a figure of minitf.figures
draws by itself follows use_language. In Chinese no English word is left; in English the
labels are the English notebooks' own; a label the caller passes is drawn as given; and the
catalog (minitf/figures/labels.py) is complete in both languages and writes Chinese as the
course does. test_diagrams.py checks that the Chinese labels fit their boxes too.
"""

import inspect
import re

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from minitf.figures import diagrams, labels, viz
from minitf.language import current_language, use_language
from minitf.tasks import NUMBER_WORDS

TARGET = ["<bos>", "一", "千", "零", "五"]
RNG = np.random.default_rng(0)
WEIGHTS = RNG.random((2, 2, 5, 5))

# Every drawing of minitf.figures, as the notebooks call it. The plot helpers get what a
# Chinese notebook passes them (Chinese titles, tokens), so that what is left is their own.
DRAWINGS = {
    **{f"{name}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})":
       (lambda name=name, kwargs=kwargs: getattr(diagrams, name)(**kwargs))
       for name, kwargs in [
           ("transformer", {}), ("attention_flow", {}), ("multi_head", {}),
           ("encoder_layer", {}), ("encoder_layer", {"norm_first": True}),
           ("decoder_layer", {}), ("generation_loop", {}), ("referent_model", {}),
           ("single_query", {}), ("head_split", {}), ("head_split", {"num_heads": 1}),
           ("head_split", {"num_heads": 8}), ("cross_attention", {}), ("beam_tree", {}),
           ("beam_tree", {"beam_size": 1}), ("beam_tree", {"beam_size": 3}), ("kv_cache", {}),
           ("decoder_only", {})]},
    "attention_heatmap": lambda: viz.attention_heatmap(WEIGHTS[0, 0], TARGET, TARGET).figure,
    "plot_matrix": lambda: viz.plot_matrix(WEIGHTS[0, 0], x_labels=TARGET).figure,
    "token_bars": lambda: viz.token_bars(WEIGHTS[0, 0, :2], TARGET, ["温度 1", "温度 2"],
                                         before=WEIGHTS[0, 0, 2]),
    "step_times": lambda: viz.step_times([RNG.random(20) * 1e-3], ["KV 缓存"]),
    "plot_cost": lambda: viz.plot_cost([16, 32, 64], [1e-4, 4e-4, 1.6e-3], [1e4, 4e4, 1.6e5]),
    "plot_per_layer": lambda: viz.plot_per_layer({"残差流": ("大小", {"前置": [1.0, 2.0]})}),
    "head_heatmaps": lambda: viz.head_heatmaps(WEIGHTS[0], TARGET, TARGET),
    "layer_head_heatmaps": lambda: viz.layer_head_heatmaps(WEIGHTS, TARGET, TARGET),
}

# What may stay in Latin letters on a Chinese figure, and why:
ALLOWED = {
    # the data the figures show as the model reads it: the number task's English words and
    # special tokens, the notes' sentence (notebooks 01, 09) and The Illustrated
    # Transformer's two words
    *NUMBER_WORDS, "<bos>", "<eos>", "<sep>",
    *"the animal didn't cross the street because it was too tired".split(),
    "Thinking", "Machines",
    # code: the names of functions, a class and a variable the notebooks use
    "split_heads", "merge_heads", "scaled_dot_product_attention", "ReferentModel", "d_model",
    # terms the Chinese edition keeps in Latin letters (translations/zh/README.md, the
    # glossary: softmax, Transformer, GPT, post-LN / pre-LN, KV 缓存), the maths of the beam
    # (log p, lp(n)) and a unit; Add & Norm, which the Chinese text calls by its English name
    "Add", "Norm", "softmax", "Softmax", "Transformer", "GPT", "post-LN", "pre-LN", "KV", "log",
    "lp", "MiB",
}
FORMULA = re.compile(r"\$[^$]*\$")  # mathtext: symbols and \mathrm{softmax}, read as maths
WORD = re.compile(r"<?[A-Za-z][A-Za-z0-9_'-]*>?")


def english_words(texts):
    """The English words left in `texts`: outside formulas, every word of two or more Latin
    letters in a row (so "so" and "of" count; a token such as <bos> or d_model is one word)
    that ALLOWED does not list."""
    words = (w.strip("'-") for t in texts for w in WORD.findall(FORMULA.sub(" ", t)))
    return sorted({w for w in words if re.search("[A-Za-z]{2}", w) and w not in ALLOWED})


def drawn_texts(fig):
    """Every text the figure draws: labels, titles, ticks, legends, colour bars."""
    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]


@pytest.fixture(autouse=True)
def english_afterwards():
    with matplotlib.rc_context():
        yield
    use_language("en")
    plt.close("all")


def draw(name, language):
    use_language(language)
    fig = DRAWINGS[name]()
    assert isinstance(fig, Figure)
    return fig


def test_every_drawing_of_the_figures_is_checked():
    """A new diagram or plot helper is checked here too: DRAWINGS calls every public one."""
    called = {name.split("(")[0] for name in DRAWINGS}
    for module, not_drawings in ((diagrams, {"save_gallery"}), (viz, {"use_cjk_font"})):
        public = {n for n in module.__all__ if inspect.isfunction(getattr(module, n))}
        assert public - not_drawings <= called, public - not_drawings - called


@pytest.mark.parametrize("name", DRAWINGS)
def test_no_english_word_is_left_in_chinese(name):
    fig = draw(name, "zh")
    assert english_words(drawn_texts(fig)) == []
    assert current_language() == "zh"


def test_the_check_finds_a_leftover_english_label():
    fig = Figure()
    for s in ("头 0", "step 1", "第 1 步：输入 <bos>", "$\\mathrm{softmax}(QK^\\top)$",
              "嵌入  × √d_model", "后置层归一化（post-LN）", " ⇒ so ", "“it” = the animal"):
        fig.text(0.5, 0.5, s)
    assert english_words(drawn_texts(fig)) == ["so", "step"]
    fig.text(0.5, 0.5, "finished answers")
    assert english_words(drawn_texts(fig)) == ["answers", "finished", "so", "step"]


# The English notebooks' words, as the figures drew them before they learned Chinese (the
# labels test_diagrams.py's REQUIRED does not already pin): English stays as it was.
ENGLISH = {
    "transformer()": ["memory, read by\nevery decoder layer",
                      "Output probabilities\n→ 一 千 零 五 <eos>"],
    "attention_flow()": ["Self-attention 自注意力, matrix form", "weights\n$L \\times L$",
                         "−∞ where\nnot allowed", "scores\n$QK^\\top/\\sqrt{d_k}$"],
    "multi_head()": ["each $d_{\\mathrm{model}} \\times d_{\\mathrm{model}}$", "output",
                     "$L \\times d_{\\mathrm{model}}$\n4 blocks of\n$d_k = d_{\\mathrm{model}}/h$"],
    "encoder_layer()": ["Encoder layer 编码器层 · post-LN, as in the paper"],
    "encoder_layer(norm_first=True)": ["Encoder layer 编码器层 · pre-LN: norm first"],
    "decoder_layer()": ["Decoder layer 解码器层 · post-LN · every attention is multi-head"],
    "generation_loop()": ["most likely\nnext token", "tokens so far", "step 1", "step 5"],
    "referent_model()": [
        "ReferentModel: an encoder and a pointer head, no decoder", "vectors",
        "Encoder 编码器\nself-attention + feed-forward, each with Add & Norm (notebook 05)",
        "Pointer head 指针\n$q = h_{\\mathrm{it}}\\,W^Q$ from “it”,   $k_j = h_j\\,W^K$ from "
        "every word\n$p_j = \\mathrm{softmax}_j\\,(q \\cdot k_j\\,/\\sqrt{d_k})$ over the "
        "positions",
        "p over the words, after training:\n“it” = the animal (“… too tired”)"],
    "single_query()": [
        "One query against its keys 单个查询的注意力 · The Illustrated Transformer's example",
        "1 · scores 注意力分数", "2 · divide by $\\sqrt{d_k} = 8$", "3 · softmax → weights 权重",
        "4 · weighted sum 加权平均",
        "$d_k = 64$, so $\\sqrt{d_k} = 8$:   $112 / 8 = 14$,  $96 / 8 = 12$;   "
        "$\\alpha_1 = \\dfrac{e^{14}}{e^{14} + e^{12}} = \\dfrac{1}{1 + e^{-2}} = 0.88$"],
    "head_split()": ["$(B, L, d_{\\mathrm{model}})$\nhead $i$: columns $i\\,d_k : (i+1)\\,d_k$",
                     "$(B, L, d_{\\mathrm{model}})$, as it came in",
                     "$h = 4$ heads, each $L \\times d_k$", "reshape, transpose\n$(B, h, L, d_k)$"],
    "head_split(num_heads=1)": ["$h = 1$ head, $L \\times d_k$"],
    "cross_attention()": [
        "$Q$: $L_t \\times d_k$ from the decoder;   $K$, $V$: $L_s \\times d_k$ from the memory",
        "a square; grey: masked,\na position sees itself and\nthe positions before it",
        "one row per target position, each row sums to 1;\nnothing masked: every position "
        "reads the whole source"],
    "beam_tree()": [
        "Beam search 束搜索, beam size K = 2, on notebook 07's toy model for “twelve”", "start",
        "arrows: log p of the token\nboxes: the token, Σ log p so far",
        "finished answers, ranked by log p ÷ lp(n):\n1. 十二 (n = 3):  −0.85 ÷ 1.19 = −0.72\n"
        "2. 一十二 (n = 4):  −1.49 ÷ 1.28 = −1.17\n"
        "greedy (K = 1) keeps only 一 and ends at 一十二"],
    "beam_tree(beam_size=1)": [
        "finished answers, ranked by log p ÷ lp(n):\n1. 一十二 (n = 4):  −1.49 ÷ 1.28 = −1.17\n"
        "K = 1 is greedy decoding"],
    "beam_tree(beam_size=3)": ["3. (empty) (n = 1):  −3.00 ÷ 1.00 = −3.00"],
    "kv_cache()": [
        "The same numbers as recomputing: the past does not change. Cross-attention's K, V "
        "(the memory): computed once.", "computed at this step", "new token",
        "read from the cache 缓存", "rows computed per step 每步计算的行数:",
        "the weights α, one per row of K", "with cache 有缓存", "without 不用缓存"],
    "decoder_only()": [
        "GPT-style: one stack of masked self-attention blocks over one sequence, no encoder",
        "causal\nmask", "next token\n下一个词元", "no cross-\nattention:\nno encoder",
        "one sequence\n一个序列"],
    "attention_heatmap": ["key", "query"],
    "token_bars": ["before", "after", "probability"],
    "step_times": ["position of the generated token", "ms for this token"],
    "plot_cost": ["time (ms)", "peak memory (MiB)", "measured", "∝ n²", "sequence length n",
                  "scaled_dot_product_attention: time", "memory"],
    "plot_per_layer": ["layer"],
    "head_heatmaps": ["head 0", "head 1", "key", "query"],
    "layer_head_heatmaps": ["layer 0 head 0", "layer 1 head 1", "key", "query"],
}


@pytest.mark.parametrize("name", ENGLISH)
def test_english_labels_are_the_english_notebooks_own(name):
    drawn = drawn_texts(draw(name, "en"))
    lines = {line for text in drawn for line in text.split("\n")}  # a ranking's line, say
    assert [t for t in ENGLISH[name] if t not in drawn and t not in lines] == []


def test_a_label_the_caller_passes_is_drawn_as_given():
    use_language("zh")
    ax = viz.attention_heatmap(WEIGHTS[0, 0], xlabel="key position", ylabel="")
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("key position", "")
    assert viz.attention_heatmap(WEIGHTS[0, 0]).get_xlabel() == "键"  # the default follows
    fig = viz.plot_per_layer({"t": ("y", {"c": [1.0, 2.0]})}, xlabel="depth")
    assert fig.axes[0].get_xlabel() == "depth"
    fig = viz.plot_cost([16, 32], [1e-4, 4e-4], [1e4, 4e4], title="blocked")
    assert fig.axes[0].get_title() == "blocked：时间"


def test_every_label_has_both_languages_with_the_same_fields():
    fields = re.compile(r"(?<![\w^\\{])\{(\w+)\}")  # {n}, not \sqrt{d_k} or d_{\mathrm{…}}
    for key, text in labels.LABELS.items():
        assert set(text) == {"en", "zh"} and all(text.values()), key
        assert sorted(fields.findall(text["en"])) == sorted(fields.findall(text["zh"])), key


CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
HALF_WIDTH_BY_HAN = re.compile(r"[\u4e00-\u9fff][,:;!?()]|[,:;!?()][\u4e00-\u9fff]")


def test_chinese_labels_keep_formulas_apart_and_write_chinese_punctuation():
    """Mathtext has no Chinese glyphs: a line with a formula holds no Chinese (its Chinese
    goes on a line of its own). Chinese punctuation is full-width next to a Chinese word."""
    for key, text in labels.LABELS.items():
        zh = text["zh"]
        for line in zh.split("\n"):
            assert not (FORMULA.search(line) and CJK.search(line)), (key, line)
        assert not HALF_WIDTH_BY_HAN.search(FORMULA.sub("", zh)), (key, zh)


def test_the_chinese_checks_see_a_formula_beside_chinese_and_a_half_width_colon():
    assert FORMULA.search("每个都是 $d$") and CJK.search("每个都是 $d$")
    assert HALF_WIDTH_BY_HAN.search("停止:一千零五")
    assert not HALF_WIDTH_BY_HAN.search("停止：一千零五")


def test_label_fills_in_its_fields_and_spaces_them_in_chinese():
    assert labels.label("generation_loop.step", n=3) == "step 3"
    use_language("zh")
    assert labels.label("generation_loop.step", n=3) == "第 3 步"
    assert labels.label("kv_cache.step", t=2, token="一") == "第 2 步：输入 一"
    assert labels.label("single_query.key of", word="Thinking") == "“Thinking”的键"
    assert labels.label("transformer.embedding") == "嵌入  × √d_model"  # no fields: as written

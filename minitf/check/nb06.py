"""Exercises of notebook 06: a sliding-window causal mask, a cross-attention bug to fix and
the pre-LN decoder layer (cases, references, known mistakes)."""

import numpy as np

from ..attention import causal_mask, padding_mask, scaled_dot_product_attention, softmax
from ..decoder import DecoderLayer
from ..multihead import MultiHeadAttention, merge_heads, split_heads
from .core import Case, Exercise, Mistake
from .shared import (
    BY_D_MODEL_HINT,
    STRAIGHT_MERGE_HINT,
    STRAIGHT_SPLIT_HINT,
    perturb_norms_and_biases,
    split_heads_straight,
)

__all__ = ["check_local_causal_mask", "check_cross_attention", "check_pre_ln_decoder_layer"]


# --------------------------------------------------- sliding-window causal mask

def _band(n, low, high):
    """(n, n) bool, True where low <= i - j <= high (i the query, j the key)."""
    offset = np.arange(n)[:, None] - np.arange(n)[None, :]  # i - j
    return (offset >= low) & (offset <= high)


def _wrapped_window(n, window, by_slices=False):
    """The window written with a loop (or slices) whose start is not clipped at 0: a
    negative index wraps to the end of the row."""
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        if by_slices:
            mask[i, i - window + 1:i + 1] = True
        else:
            for j in range(i - window + 1, i + 1):
                mask[i, j] = True
    return mask


WRAP_HINT = {"en": "a negative index counts from the end of the row: for the first queries, "
                   "start the window at max(0, i − window + 1)",
             "zh": "负的下标会从这一行的末尾倒着数：对最前面的几个查询，窗口要从 "
                   "max(0, i − window + 1) 开始"}

LOCAL_CAUSAL_MASK = Exercise(
    name="local_causal_mask", checker="check_local_causal_mask", args=("n", "window"),
    task={"en": "an (n, n) bool array, True where key j is one of the `window` positions up "
                "to and including query i: i − window < j ≤ i",
          "zh": "形状为 (n, n) 的 bool 数组：键 j 是查询 i 及其之前共 `window` 个位置之一时为 "
                "True，即 i − window < j ≤ i"},
    cases=lambda: [Case((5, 2)), Case((6, 3)),
                   Case((4, 1), {"en": "only itself", "zh": "只看自己"}),
                   Case((3, 5), {"en": "a window longer than the sequence: the causal mask",
                                 "zh": "窗口比序列还长：就是因果掩码"})],
    reference=lambda n, window: _band(n, 0, window - 1),
    mistakes=(
        Mistake({"en": "each query sees one key too many: `window` keys including itself, so "
                       "j > i − window, not j ≥ i − window",
                 "zh": "每个查询多看了一个键：连同自己一共 `window` 个键，所以是 j > i − window，"
                       "而不是 j ≥ i − window"},
                lambda n, window: _band(n, 0, window)),
        Mistake({"en": "the window also reaches forward: keys after the query (j > i) must "
                       "stay False, as in the causal mask",
                 "zh": "窗口也伸向了后面：查询之后的键（j > i）必须保持 False，和因果掩码一样"},
                lambda n, window: _band(n, 1 - window, window - 1)),
        Mistake({"en": "this is the transpose: row i (the query) sees itself and the keys just "
                       "before it, on and below the diagonal",
                 "zh": "这是转置：第 i 行（查询）看的是它自己和紧挨在它前面的键，在对角线上及"
                       "对角线以下"},
                lambda n, window: _band(n, 1 - window, 0)),
        Mistake({"en": "the window is ignored: that is the plain causal mask; drop the keys "
                       "more than window − 1 positions back",
                 "zh": "窗口被忽略了：这只是普通的因果掩码；往前超过 window − 1 个位置的键要去掉"},
                lambda n, window: causal_mask(n)),
        Mistake({"en": "masks are boolean: use dtype=bool, or .astype(bool)",
                 "zh": "掩码是布尔值：用 dtype=bool，或者 .astype(bool)"},
                lambda n, window: _band(n, 0, window - 1).astype(float)),
        Mistake({"en": "each query must see itself: the window ends at j = i (i − window < "
                       "j ≤ i), it does not stop just before",
                 "zh": "每个查询都必须能看到自己：窗口到 j = i 为止（i − window < j ≤ i），"
                       "不是在它之前就停"},
                lambda n, window: _band(n, 1, window)),
        Mistake(WRAP_HINT, _wrapped_window),
        Mistake(WRAP_HINT, lambda n, window: _wrapped_window(n, window, by_slices=True)),
    ))


# ------------------------------------------------------------- cross-attention

def _cross(y, memory, attn, memory_mask, *, q_from="y", k_from="memory", v_from="memory",
           use_mask=True, project=True, by_d_model=False, biases=True, split=split_heads,
           masked="-inf", merge=merge_heads):
    """Multi-head attention by hand, with its inputs taken from where the mistakes take them
    (and the other flags' slips). masked: "-inf" (right), "zero" (masked scores set to 0),
    "after" (weights zeroed after the softmax): the two shortcuts of notebook 06 §2."""
    source = {"y": y, "memory": memory}

    def bias(name):
        return attn.params[name] if biases else 0.0

    q, k, v = (split(source[where] @ attn.params[f"W_{n}"] + bias(f"b_{n}"), attn.num_heads)
               for n, where in (("q", q_from), ("k", k_from), ("v", v_from)))
    if by_d_model:  # scores / √d_model instead of / √d_k
        q = q * np.sqrt(q.shape[-1] / y.shape[-1])
    mask = memory_mask if use_mask else None
    if masked == "-inf" or mask is None:
        heads, _ = scaled_dot_product_attention(q, k, v, mask)
    else:
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        weights = softmax(np.where(mask, scores, 0.0)) if masked == "zero" \
            else softmax(scores) * mask
        heads = weights @ v
    merged = merge(heads)  # (B, L_q, d_model)
    return merged @ attn.W_o + bias("b_o") if project else merged


def _random_attention(d_model, num_heads, seed):
    attn = MultiHeadAttention(d_model, num_heads, dtype=np.float64, rng=seed)
    rng = np.random.default_rng(seed + 100)
    for name in ("b_q", "b_k", "b_v", "b_o"):  # biases away from their initial 0
        attn.params[name][...] = 0.3 * rng.standard_normal(d_model)
    return attn


def _cross_attention_cases():
    rng = np.random.default_rng(61)
    src = np.array([[5, 6, 7, 2, 0], [8, 2, 0, 0, 0]])
    return [
        Case((rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 5, 8)),
              _random_attention(8, 2, seed=1), padding_mask(src)),
             {"en": "L_t = 4 target and L_s = 5 source positions, padded sources",
              "zh": "L_t = 4 个目标位置，L_s = 5 个源位置，源序列有填充"}),
        Case((rng.standard_normal((1, 3, 12)), rng.standard_normal((1, 3, 12)),
              _random_attention(12, 3, seed=2), None),
             {"en": "as many target as source positions, no mask",
              "zh": "目标位置和源位置一样多，没有掩码"}),
        Case((rng.standard_normal((1, 2, 8)), rng.standard_normal((1, 4, 8)),
              _random_attention(8, 4, seed=3), None),
             {"en": "L_t = 2, L_s = 4, 4 heads", "zh": "L_t = 2，L_s = 4，4 个头"}),
    ]


CROSS_ATTENTION = Exercise(
    name="cross_attention", checker="check_cross_attention",
    args=("y", "memory", "attn", "memory_mask"),
    task={"en": "attn(y, context=memory, mask=memory_mask): queries from y, keys and values "
                "from memory, by hand with attn's W_q, W_k, W_v, W_o and their biases",
          "zh": "attn(y, context=memory, mask=memory_mask)：查询来自 y，键和值来自 memory，"
                "用 attn 的 W_q、W_k、W_v、W_o 及其偏置亲手算出"},
    cases=_cross_attention_cases,
    reference=lambda y, memory, attn, memory_mask: attn(y, context=memory, mask=memory_mask),
    mistakes=(
        Mistake({"en": "the keys come from the decoder (y) and the values from the memory: a "
                       "query must be compared with the same source positions whose values "
                       "it averages, so K comes from memory too",
                 "zh": "键来自解码器（y），值却来自记忆：一个查询要和它所平均的那些值所在的源"
                       "位置作比较，所以 K 也要来自 memory"},
                lambda *args: _cross(*args, k_from="y")),
        Mistake({"en": "the roles are swapped: the queries come from the decoder (y), the keys "
                       "and values from the memory",
                 "zh": "角色弄反了：查询来自解码器（y），键和值来自记忆"},
                lambda *args: _cross(*args, q_from="memory", k_from="y", v_from="y")),
        Mistake({"en": "that is self-attention: keys and values must come from memory",
                 "zh": "这是自注意力：键和值必须来自 memory"},
                lambda *args: _cross(*args, k_from="y", v_from="y")),
        Mistake({"en": "the memory mask is ignored: pass it to the attention, so padded source "
                       "positions get weight 0",
                 "zh": "记忆的掩码被忽略了：把它传给注意力，让源序列中的填充位置得到权重 0"},
                lambda *args: _cross(*args, use_mask=False)),
        Mistake({"en": "the heads were merged but not mixed: finish with @ W_o + b_o",
                 "zh": "各个头合并了，但没有混合：最后还要 @ W_o + b_o"},
                lambda *args: _cross(*args, project=False)),
        Mistake(BY_D_MODEL_HINT, lambda *args: _cross(*args, by_d_model=True)),
        Mistake({"en": "the biases b_q, b_k, b_v, b_o are left out: each projection is "
                       "x @ W + b",
                 "zh": "漏掉了偏置 b_q、b_k、b_v、b_o：每个投影都是 x @ W + b"},
                lambda *args: _cross(*args, biases=False)),
        Mistake(STRAIGHT_SPLIT_HINT, lambda *args: _cross(*args, split=split_heads_straight)),
        Mistake({"en": "the masked scores were set to 0, shortcut (a) of §2: e⁰ = 1, so padded "
                       "source positions still get weight; fill them with -inf (np.where(mask, "
                       "scores, -np.inf)) before the softmax",
                 "zh": "被遮住的分数设成了 0，这是第 2 节的捷径 (a)：e⁰ = 1，填充的源位置仍会得到"
                       "权重；要在 softmax 之前把它们填成 -inf（np.where(mask, scores, -np.inf)）"},
                lambda *args: _cross(*args, masked="zero")),
        Mistake({"en": "the weights were zeroed after the softmax, shortcut (b) of §2: the rows "
                       "no longer sum to 1; fill the masked scores with -inf before the softmax",
                 "zh": "权重是在 softmax 之后才置零的，这是第 2 节的捷径 (b)：每一行之和不再是 1；"
                       "要在 softmax 之前把被遮住的分数填成 -inf"},
                lambda *args: _cross(*args, masked="after")),
        Mistake(STRAIGHT_MERGE_HINT, lambda *args: _cross(
            *args, merge=lambda h: h.reshape(h.shape[0], h.shape[2], -1))),
    ))


# ---------------------------------------------------------- pre-LN decoder layer

def _post_ln(y, memory, layer, tgt_mask, memory_mask):
    y = layer.norm1(y + layer.self_attn(y, mask=tgt_mask))
    y = layer.norm2(y + layer.cross_attn(y, memory, mask=memory_mask))
    return layer.norm3(y + layer.ffn(y))


def _pre_ln(y, memory, layer, tgt_mask, memory_mask, *, self_mask=True, from_memory=True,
            norm_memory=False, add_normed=False, norms=("norm1", "norm2", "norm3"),
            after=False, final=False):
    """The pre-LN decoder layer, and (with other flags) the usual wrong versions: `after`
    normalises each sub-layer's output as well, `final` the layer's output."""
    n1, n2, n3 = (getattr(layer, name) for name in norms)
    a = n1(y)
    y = (a if add_normed else y) + layer.self_attn(a, mask=tgt_mask if self_mask else None)
    y = n1(y) if after else y
    b = n2(y)
    context = (n2(memory) if norm_memory else memory) if from_memory else None
    y = (b if add_normed else y) + layer.cross_attn(
        b, context, mask=memory_mask if from_memory else None)
    y = n2(y) if after else y
    c = n3(y)
    out = (c if add_normed else y) + layer.ffn(c)
    return n3(out) if after or final else out


def _random_decoder_layer(d_model, num_heads, d_ff, seed):
    layer = DecoderLayer(d_model, num_heads, d_ff, norm_first=True, dtype=np.float64, rng=seed)
    return perturb_norms_and_biases(layer, seed + 100)


def _decoder_cases():
    rng = np.random.default_rng(60)
    src = np.array([[5, 6, 7, 2, 0], [8, 2, 0, 0, 0]])
    return [
        Case((rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 5, 8)),
              _random_decoder_layer(8, 2, 16, seed=1), causal_mask(4), padding_mask(src)),
             {"en": "a batch of 2, padded sources, d_model = 8",
              "zh": "含 2 个句子的批次，源序列有填充，d_model = 8"}),
        Case((rng.standard_normal((1, 3, 12)), rng.standard_normal((1, 2, 12)),
              _random_decoder_layer(12, 3, 24, seed=2), causal_mask(3), None),
             {"en": "one sentence, no memory mask, d_model = 12",
              "zh": "一个句子，没有记忆掩码，d_model = 12"}),
    ]


PRE_LN_DECODER_LAYER = Exercise(
    name="pre_ln_decoder_layer", checker="check_pre_ln_decoder_layer",
    args=("y", "memory", "layer", "tgt_mask", "memory_mask"),
    task={"en": "the pre-LN decoder layer: y + self_attn(norm1(y)), then · + "
                "cross_attn(norm2(·), memory), then · + ffn(norm3(·))",
          "zh": "前置层归一化（pre-LN）的解码器层：y + self_attn(norm1(y))，然后 · + "
                "cross_attn(norm2(·), memory)，再 · + ffn(norm3(·))"},
    cases=_decoder_cases,
    reference=lambda y, memory, layer, tgt_mask, memory_mask: layer(
        y, memory, tgt_mask, memory_mask),
    mistakes=(
        Mistake({"en": "that is the post-LN order of section 5; pre-LN normalises each "
                       "sub-layer's input: y = y + sublayer(norm(y))",
                 "zh": "这是第 5 节的后置层归一化（post-LN）顺序；pre-LN 归一化的是每个子层的"
                       "输入：y = y + sublayer(norm(y))"}, _post_ln),
        Mistake({"en": "the residual adds the normalised y; add the un-normalised y: "
                       "y + self_attn(norm1(y))",
                 "zh": "残差加上的是归一化后的 y；应当加上没有归一化的 y：y + self_attn(norm1(y))"},
                lambda *args: _pre_ln(*args, add_normed=True)),
        Mistake({"en": "the memory was normalised by norm2; norm2 is for the decoder's own y — "
                       "the memory already comes out of the encoder's final LayerNorm",
                 "zh": "记忆被 norm2 归一化了；norm2 是给解码器自己的 y 用的 —— 记忆已经经过了"
                       "编码器最后的 LayerNorm"},
                lambda *args: _pre_ln(*args, norm_memory=True)),
        Mistake({"en": "the cross-attention must take its keys and values from `memory`: "
                       "cross_attn(norm2(y), memory, mask=memory_mask)",
                 "zh": "交叉注意力的键和值必须来自 `memory`：cross_attn(norm2(y), memory, "
                       "mask=memory_mask)"},
                lambda *args: _pre_ln(*args, from_memory=False)),
        Mistake({"en": "the masked self-attention ignores tgt_mask, so it looks at later tokens",
                 "zh": "掩码自注意力没有用上 tgt_mask，于是它看到了后面的词元"},
                lambda *args: _pre_ln(*args, self_mask=False)),
        Mistake({"en": "each sub-layer's output was normalised again; pre-LN normalises its "
                       "input only: y = y + sublayer(norm(y)), and nothing after",
                 "zh": "每个子层的输出又做了一次归一化；pre-LN 只归一化子层的输入："
                       "y = y + sublayer(norm(y))，之后不再归一化"},
                lambda *args: _pre_ln(*args, after=True)),
        Mistake({"en": "norm1 was used for all three sub-layers; each has its own LayerNorm: "
                       "norm1, norm2, norm3",
                 "zh": "三个子层都用了 norm1；每个子层有自己的 LayerNorm：norm1、norm2、norm3"},
                lambda *args: _pre_ln(*args, norms=("norm1", "norm1", "norm1"))),
        Mistake({"en": "the output was normalised again; in pre-LN the layer's output is not "
                       "normalised (the final LayerNorm belongs to the stack, Decoder.norm)",
                 "zh": "输出又做了一次归一化；pre-LN 的层不对输出做归一化（最后那个 LayerNorm "
                       "属于整个堆叠，即 Decoder.norm）"},
                lambda *args: _pre_ln(*args, final=True)),
    ))


def check_local_causal_mask(fn):
    """fn(n, window) -> (n, n) bool, True where i − window < j ≤ i: each query sees itself
    and the window − 1 positions before it. An exercise of notebook 06 §1."""
    return LOCAL_CAUSAL_MASK.check(fn)


def check_cross_attention(fn):
    """fn(y, memory, attn, memory_mask) -> (B, L_t, d_model), the cross-attention
    attn(y, context=memory, mask=memory_mask) written by hand (a bug to fix). An exercise of
    notebook 06 §4."""
    return CROSS_ATTENTION.check(fn)


def check_pre_ln_decoder_layer(fn):
    """fn(y, memory, layer, tgt_mask, memory_mask) -> the pre-LN decoder layer's output,
    built from layer.norm1, layer.self_attn, layer.norm2, layer.cross_attn, layer.norm3,
    layer.ffn. An exercise of notebook 06 §5."""
    return PRE_LN_DECODER_LAYER.check(fn)


EXERCISES = [LOCAL_CAUSAL_MASK, CROSS_ATTENTION, PRE_LN_DECODER_LAYER]

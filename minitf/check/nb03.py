"""Exercises of notebook 03, multi-head attention: split_heads, merge_heads and the forward
pass (cases, references, known mistakes)."""

import numpy as np

from ..attention import softmax
from ..multihead import MultiHeadAttention, merge_heads, split_heads
from .core import Case, Exercise, Mistake
from .shared import (
    BY_D_MODEL_HINT,
    STRAIGHT_MERGE_HINT,
    STRAIGHT_SPLIT_HINT,
    split_heads_straight,
)

__all__ = ["check_merge_heads", "check_multi_head", "check_split_heads"]


# --- split_heads / merge_heads --------------------------------------------------------

def _split_interleaved(x, num_heads):
    B, L, d_model = x.shape
    return x.reshape(B, L, d_model // num_heads, num_heads).transpose(0, 3, 1, 2)


def _merge_without_transpose(x):
    B, h, L, d_k = x.shape
    return x.reshape(B, L, h * d_k)


def _merge_interleaved(x):
    B, h, L, d_k = x.shape
    return x.transpose(0, 2, 3, 1).reshape(B, L, h * d_k)


def _merge_along_positions(x):
    return np.concatenate([x[:, i] for i in range(x.shape[1])], axis=1)


def _merge_reversed(x):
    return np.concatenate([x[:, i] for i in reversed(range(x.shape[1]))], axis=-1)


def _split_transposed(axes):
    def split(x, num_heads):
        B, L, d_model = x.shape
        heads = x.reshape(B, L, num_heads, d_model // num_heads)
        return heads if axes is None else heads.transpose(*axes)
    return split


def _heads(h):
    return {"en": f"{h} head{'s' if h != 1 else ''}", "zh": f"{h} 个头"}


def _heads_of(h, d_k):
    return {"en": f"{_heads(h)['en']} of d_k = {d_k}", "zh": f"{h} 个头，d_k = {d_k}"}


def _split_cases():
    rng = np.random.default_rng(3)
    return [Case((rng.normal(size=(B, L, d)), h), _heads_of(h, d // h))
            for B, L, d, h in [(2, 3, 8, 2), (1, 5, 12, 3), (3, 4, 6, 1)]]


def _merge_cases():
    rng = np.random.default_rng(4)
    return [Case((rng.normal(size=shape),), _heads(shape[1]))
            for shape in [(2, 2, 3, 4), (1, 3, 5, 4), (3, 1, 4, 6)]]


TRANSPOSE_HINT = {
    "en": "after the reshape to (B, L, h, d_k), transpose(0, 2, 1, 3): the batch stays first, "
          "the heads come second, then the positions and the features",
    "zh": "reshape 成 (B, L, h, d_k) 之后，用 transpose(0, 2, 1, 3)：批次轴仍在最前，头排第二，"
          "然后是位置和特征"}

SPLIT_HEADS = Exercise(
    name="split_heads", checker="check_split_heads", args=("x", "num_heads"),
    task={"en": "(B, h, L, d_k), head i = columns i*d_k:(i+1)*d_k of x (B, L, d_model)",
          "zh": "(B, h, L, d_k)，第 i 个头是 x (B, L, d_model) 的第 i*d_k:(i+1)*d_k 列"},
    cases=_split_cases, reference=split_heads,
    mistakes=(
        Mistake(STRAIGHT_SPLIT_HINT, split_heads_straight),
        Mistake({"en": "your heads take every h-th column; in minitf head i is the contiguous "
                       "block of columns i*d_k:(i+1)*d_k",
                 "zh": "你的每个头取的是每隔 h 列的一列；在 minitf 中，第 i 个头是连续的一块列 "
                       "i*d_k:(i+1)*d_k"}, _split_interleaved),
        Mistake(TRANSPOSE_HINT, _split_transposed(None)),
        Mistake(TRANSPOSE_HINT, _split_transposed((2, 0, 1, 3))),
        Mistake(TRANSPOSE_HINT, _split_transposed((0, 2, 3, 1))),
    ))

MERGE_HEADS = Exercise(
    name="merge_heads", checker="check_merge_heads", args=("x",),
    task={"en": "(B, L, h*d_k), the heads of x (B, h, L, d_k) side by side",
          "zh": "(B, L, h*d_k)：x (B, h, L, d_k) 的各个头并排放在一起"},
    cases=_merge_cases, reference=merge_heads,
    mistakes=(
        Mistake(STRAIGHT_MERGE_HINT, _merge_without_transpose),
        Mistake({"en": "your output interleaves the heads' columns; head i must fill the "
                       "contiguous block of columns i*d_k:(i+1)*d_k",
                 "zh": "你的输出把各个头的列交错在了一起；第 i 个头必须占满连续的一块列 "
                       "i*d_k:(i+1)*d_k"}, _merge_interleaved),
        Mistake({"en": "you joined the heads along the positions (axis 1), which stacks them "
                       "one under the other; put them side by side along the features "
                       "(axis=-1)",
                 "zh": "你沿着位置（axis 1）拼接了各个头，结果是上下叠放；应当沿特征（axis=-1）"
                       "并排放置"},
                _merge_along_positions),
        Mistake({"en": "np.concatenate(x, axis=-1) walks over the first axis of x, the batch; "
                       "walk over the heads: np.concatenate([x[:, i] for i in range(h)], "
                       "axis=-1)",
                 "zh": "np.concatenate(x, axis=-1) 遍历的是 x 的第一个轴，也就是批次；要遍历"
                       "各个头：np.concatenate([x[:, i] for i in range(h)], axis=-1)"},
                lambda x: np.concatenate(x, axis=-1)),
        Mistake({"en": "np.split keeps the axis it splits: each piece is (B, 1, L, d_k); join "
                       "x[:, i] (B, L, d_k) instead, or squeeze axis 1",
                 "zh": "np.split 会保留被切开的那个轴：每一块的形状是 (B, 1, L, d_k)；要拼接的是 "
                       "x[:, i] (B, L, d_k)，或者先去掉 axis 1"},
                lambda x: np.concatenate(np.split(x, x.shape[1], axis=1), axis=-1)),
        Mistake({"en": "the heads are in reverse order: head 0 fills the first d_k columns",
                 "zh": "各个头的顺序反了：第 0 个头占最前面的 d_k 列"}, _merge_reversed),
    ))


# --- the multi-head forward pass ------------------------------------------------------

_PARAM_NAMES = ("W_q", "b_q", "W_k", "b_k", "W_v", "b_v", "W_o", "b_o")


def _multi_head(x, params, num_heads, *, scale_by="d_k", use_w_o=True, use_bias=True,
                b_o_per_head=False, use_b_o=True, qkv_bias=True):
    """The forward pass, and (with other flags) the usual wrong versions."""
    B, L, d_model = x.shape
    d_k = d_model // num_heads

    def project(name):
        y = x @ params[f"W_{name}"]
        return y + params[f"b_{name}"] if use_bias and qkv_bias else y

    q, k, v = (split_heads(project(n), num_heads) for n in "qkv")  # (B, h, L, d_k)
    scores = q @ k.transpose(0, 1, 3, 2)  # (B, h, L, L)
    if scale_by is not None:
        scores = scores / np.sqrt({"d_k": d_k, "d_model": d_model}[scale_by])
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    concat = merge_heads(weights @ v)  # (B, L, d_model)
    if not use_w_o:
        return concat
    if b_o_per_head:  # head by head, b_o added to every head's term
        return concat @ params["W_o"] + num_heads * params["b_o"]
    return concat @ params["W_o"] + params["b_o"] if use_bias and use_b_o else \
        concat @ params["W_o"]


NO_BIASES_HINT = {
    "en": "the biases b_q, b_k, b_v, b_o are left out",
    "zh": "漏掉了偏置 b_q、b_k、b_v、b_o"}
B_O_PER_HEAD_HINT = {
    "en": "you added b_o once per head; add it once, after the heads' terms are summed (it "
          "belongs to the output projection)",
    "zh": "你给每个头都加了一次 b_o；它属于输出投影，应当在各个头的项相加之后只加一次"}


def _by_blocks(x, params, num_heads, *, w_o="rows", own_bias=True, b_o_times=1):
    """The exercise's way, head by head: head i uses columns i*d_k:(i+1)*d_k of W_q, W_k, W_v
    (and of their biases) and rows i*d_k:(i+1)*d_k of W_o; the flags make the usual slips:
    w_o "columns" (W_o[:, block], raises) or "columns.T"; own_bias False (b[:d_k] for every
    head); b_o added b_o_times times ("heads+1": once per head and once more)."""
    d_k = x.shape[-1] // num_heads
    out = 0.0
    for i in range(num_heads):
        block = slice(i * d_k, (i + 1) * d_k)
        bias = block if own_bias else slice(0, d_k)
        q, k, v = (x @ params[f"W_{n}"][:, block] + params[f"b_{n}"][bias] for n in "qkv")
        head = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)) @ v  # (B, L, d_k)
        W_o = {"rows": params["W_o"][block], "columns": params["W_o"][:, block],
               "columns.T": params["W_o"][:, block].T}[w_o]
        out = out + head @ W_o
    times = num_heads + 1 if b_o_times == "heads+1" else b_o_times
    return out + times * params["b_o"]


def _reference_multi_head(x, params, num_heads):
    mha = MultiHeadAttention(x.shape[-1], num_heads, dtype=np.float64, rng=0)
    mha.load_state_dict(params)
    return mha(x)


def _multi_head_cases():
    rng = np.random.default_rng(5)
    cases = []
    for B, L, d_model, h in [(1, 4, 8, 2), (2, 5, 12, 3), (2, 3, 8, 1)]:
        params = {name: rng.normal(0.0, d_model ** -0.5,
                                   size=(d_model, d_model) if name[0] == "W" else (d_model,))
                  for name in _PARAM_NAMES}
        cases.append(Case((rng.normal(size=(B, L, d_model)), params, h),
                          {"en": f"d_model = {d_model}, {_heads(h)['en']}",
                           "zh": f"d_model = {d_model}，{h} 个头"}))
    return cases


W_O_ROWS_HINT = {
    "en": "head i's output (d_k columns) goes through the block of ROWS i*d_k:(i+1)*d_k of W_o, "
          "W_o[i*d_k:(i+1)*d_k] (d_k × d_model), not a block of its columns",
    "zh": "第 i 个头的输出（d_k 列）要经过 W_o 的第 i*d_k:(i+1)*d_k *行*，即 "
          "W_o[i*d_k:(i+1)*d_k]（d_k × d_model），而不是它的某几列"}

MULTI_HEAD = Exercise(
    name="multi_head", checker="check_multi_head", args=("x", "params", "num_heads"),
    task={"en": "multi-head self-attention of x (B, L, d_model), as MultiHeadAttention",
          "zh": "x (B, L, d_model) 的多头自注意力，与 MultiHeadAttention 相同"},
    cases=_multi_head_cases, reference=_reference_multi_head,
    mistakes=(
        Mistake(BY_D_MODEL_HINT, lambda x, p, h: _multi_head(x, p, h, scale_by="d_model")),
        Mistake({"en": "the scores are not divided by √d_k", "zh": "分数没有除以 √d_k"},
                lambda x, p, h: _multi_head(x, p, h, scale_by=None)),
        Mistake({"en": "the concatenated heads are returned without the output projection W_o "
                       "(and b_o)",
                 "zh": "拼接后的各个头没有经过输出投影 W_o（和 b_o）就返回了"},
                lambda x, p, h: _multi_head(x, p, h, use_w_o=False)),
        Mistake(NO_BIASES_HINT, lambda x, p, h: _multi_head(x, p, h, use_bias=False)),
        Mistake(B_O_PER_HEAD_HINT, lambda x, p, h: _multi_head(x, p, h, b_o_per_head=True)),
        Mistake({"en": "b_o is missing: the output projection is concat @ W_o + b_o",
                 "zh": "少了 b_o：输出投影是 concat @ W_o + b_o"},
                lambda x, p, h: _multi_head(x, p, h, use_b_o=False)),
        Mistake(W_O_ROWS_HINT, lambda x, p, h: _by_blocks(x, p, h, w_o="columns")),
        Mistake(W_O_ROWS_HINT, lambda x, p, h: _by_blocks(x, p, h, w_o="columns.T")),
        Mistake({"en": "b_q, b_k and b_v are missing (b_o is there): each projection is "
                       "x @ W + b",
                 "zh": "少了 b_q、b_k 和 b_v（b_o 倒是加了）：每个投影都是 x @ W + b"},
                lambda x, p, h: _multi_head(x, p, h, qkv_bias=False)),
        Mistake({"en": "you added b_o once per head and once more; add it once, after the "
                       "heads' terms are summed (it belongs to the output projection)",
                 "zh": "你给每个头都加了一次 b_o，最后又加了一次；它属于输出投影，应当在各个头的"
                       "项相加之后只加一次"},
                lambda x, p, h: _by_blocks(x, p, h, b_o_times="heads+1")),
        Mistake({"en": "every head took the first slice of the biases, b[:d_k]; head i takes "
                       "its own, b_q[i*d_k:(i+1)*d_k], like its columns of W_q",
                 "zh": "每个头都取了偏置的第一段 b[:d_k]；第 i 个头要取自己的那一段 "
                       "b_q[i*d_k:(i+1)*d_k]，和它在 W_q 中的列一样"},
                lambda x, p, h: _by_blocks(x, p, h, own_bias=False)),
    ))


def check_split_heads(fn):
    """fn(x, num_heads): (B, L, d_model) -> (B, h, L, d_k), head i = columns i*d_k:(i+1)*d_k.
    An exercise of notebook 03."""
    return SPLIT_HEADS.check(fn)


def check_merge_heads(fn):
    """fn(x): (B, h, L, d_k) -> (B, L, h*d_k), the heads side by side.
    An exercise of notebook 03."""
    return MERGE_HEADS.check(fn)


def check_multi_head(fn):
    """fn(x, params, num_heads): multi-head self-attention of x (B, L, d_model).

    `params` is a dict with the keys of MultiHeadAttention.params (W_q, b_q, ..., W_o, b_o).
    An exercise of notebook 03.
    """
    return MULTI_HEAD.check(fn)


EXERCISES = [SPLIT_HEADS, MERGE_HEADS, MULTI_HEAD]

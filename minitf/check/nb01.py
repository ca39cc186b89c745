"""Exercises of notebook 01: scaled scores, a stable softmax, and the bug in one query's
attention (cases, references, known mistakes)."""

import numpy as np

from ..attention import scaled_dot_product_attention, softmax
from .core import Case, Exercise, Mistake

__all__ = ["check_scaled_scores", "check_single_query_attention", "check_softmax"]


def _softmax_cases():
    rng = np.random.default_rng(11)
    return [
        Case((np.array([1.0, 2.0, 3.0]),)),
        Case((np.array([14.0, 12.0]),), {"en": "the worked example's scores 112/8 and 96/8",
                                         "zh": "演算示例的分数 112/8 和 96/8"}),
        Case((np.array([1000.0, 999.0, 998.0]),), {"en": "large entries", "zh": "很大的元素"}),
        Case((np.array([-1000.0, -1001.0]),), {"en": "very negative entries",
                                               "zh": "绝对值很大的负数"}),
        Case((np.array([[0.0, 1.0, 2.0], [5.0, 5.0, 5.0]]),), {"en": "two rows", "zh": "两行"}),
        Case((np.array([0.0, 1000.0]),), {"en": "a row spanning 1000",
                                          "zh": "一行之内相差 1000"}),
        Case((np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -1002.0]]),),
             {"en": "two rows 2000 apart", "zh": "两行相差 2000"}),
        Case((np.array([0.0, 2000.0]),), {"en": "a row spanning 2000: 1000 from its mean",
                                          "zh": "一行之内相差 2000：离均值 1000"}),
        Case((np.array([[0.0, 250.0, 1.0], [3.0, 1.0, 2.0]], dtype=np.float32),),
             {"en": "float32, a row spanning 250 (float32's exp overflows above 88)",
              "zh": "float32，一行之内相差 250（float32 的 exp 超过 88 就溢出）"}),
        Case((rng.normal(scale=3.0, size=(2, 3, 4)),),
             {"en": "a batch of rows (B, L, n)", "zh": "一批行 (B, L, n)"}),
        Case((rng.normal(scale=3.0, size=(2, 3, 2, 4)),),
             {"en": "the scores of a batch of heads (B, h, L, L)",
              "zh": "一批多头的分数 (B, h, L, L)"}),
    ]


def _naive_softmax(x):
    return np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)


def _shifted_softmax(x, shift, total=False):
    e = np.exp(x - shift)
    return e / e.sum() if total else e / e.sum(axis=-1, keepdims=True)


def _transposed_softmax(x, keepdims_sum=False):
    """The 2-D idiom (x.T - x.max(-1)).T: right for a matrix, wrong for 3-D input (a false
    pass while the cases were 1-D and 2-D)."""
    e = np.exp((x.T - x.max(-1)).T)
    return e / e.sum(-1, keepdims=True) if keepdims_sum else (e.T / e.sum(-1)).T


def _softmax_axis_1(x, ndim_branch=True):
    if ndim_branch and x.ndim == 1:
        return softmax(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _without_keepdims(x, max_keepdims=False):
    e = np.exp(x - x.max(axis=-1, keepdims=max_keepdims))  # (...,) meets x only when 1-D
    return e / e.sum(axis=-1)


KEEPDIMS_HINT = {
    "en": "x.max(axis=-1) and the sum along axis=-1 have shape (...,), which cannot meet "
          "x (..., n): keep the axis with keepdims=True, giving (..., 1)",
    "zh": "x.max(axis=-1) 和沿 axis=-1 的求和形状是 (...,)，与 x (..., n) 对不齐：用 "
          "keepdims=True 保留这个轴，得到 (..., 1)"}
ROW_SUM_HINT = {"en": "each row must sum to 1: take the max and the sum along axis=-1 with "
                      "keepdims=True",
                "zh": "每一行之和必须为 1：max 和 sum 都沿 axis=-1 计算，并加上 keepdims=True"}
TRANSPOSE_HINT = {
    "en": "(x.T - x.max(-1)).T works for a matrix only: on a batch (B, L, n) .T reverses every "
          "axis; x - x.max(axis=-1, keepdims=True) broadcasts for any shape",
    "zh": "(x.T - x.max(-1)).T 只对矩阵成立：对批次 (B, L, n)，.T 会把所有轴都倒过来；"
          "x - x.max(axis=-1, keepdims=True) 对任何形状都能正确广播"}
AXIS_1_HINT = {
    "en": "axis=1 is the last axis only for a matrix; for a batch (B, L, n) it is not: use "
          "axis=-1, the last axis whatever the shape",
    "zh": "axis=1 只在矩阵中才是最后一个轴；对批次 (B, L, n) 就不是了：用 axis=-1，无论什么"
          "形状它都是最后一个轴"}

SOFTMAX = Exercise(
    name="softmax", checker="check_softmax", args=("x",),
    task={"en": "the softmax of x along its last axis (each row sums to 1), without overflow",
          "zh": "x 沿最后一个轴的 softmax（每一行之和为 1），而且不溢出"},
    cases=_softmax_cases, reference=softmax,
    mistakes=(
        Mistake(ROW_SUM_HINT, lambda x: softmax(x, axis=None) if x.ndim > 1 else softmax(x)),
        Mistake(ROW_SUM_HINT, lambda x: _shifted_softmax(x, x.max(axis=-1, keepdims=True),
                                                          total=True)),
        Mistake({"en": "exp(1000) overflows: subtract the largest entry before taking exp",
                 "zh": "exp(1000) 会溢出：取 exp 之前先减去最大的元素"}, _naive_softmax),
        Mistake({"en": "subtract each row's largest entry, not its smallest: x − min can "
                       "still be 1000, and exp(1000) overflows",
                 "zh": "要减去每一行最大的元素，而不是最小的：x − min 仍可能达到 1000，"
                       "而 exp(1000) 会溢出"},
                lambda x: _shifted_softmax(x, x.min(axis=-1, keepdims=True))),
        Mistake({"en": "subtract each row's own max, x.max(axis=-1, keepdims=True): x.max() "
                       "is the largest entry of the whole array, and a row far below it "
                       "underflows to 0 / 0",
                 "zh": "要减去每一行自己的最大值 x.max(axis=-1, keepdims=True)：x.max() 是整个"
                       "数组的最大元素，远低于它的那一行会下溢成 0 / 0"},
                lambda x: _shifted_softmax(x, x.max())),
        Mistake(KEEPDIMS_HINT, _without_keepdims),
        Mistake(KEEPDIMS_HINT, lambda x: _without_keepdims(x, max_keepdims=True)),
        Mistake({"en": "the softmax ran over axis 0 (down the columns); it runs along each "
                       "row, the last axis (axis=-1, keepdims=True)",
                 "zh": "softmax 沿 axis 0（顺着列往下）计算了；它应当沿每一行，也就是最后一个轴"
                       "（axis=-1, keepdims=True）"},
                lambda x: softmax(x, axis=0)),
        Mistake({"en": "subtract each row's max, not its mean: a row spanning 2000 is still "
                       "1000 above its mean, and exp(1000) overflows (in float32 exp overflows "
                       "above 88)",
                 "zh": "要减去每一行的最大值，而不是均值：一行之内相差 2000 时，最大的元素仍比均值"
                       "高 1000，而 exp(1000) 会溢出（float32 的 exp 超过 88 就溢出）"},
                lambda x: _shifted_softmax(x, x.mean(axis=-1, keepdims=True))),
        Mistake(TRANSPOSE_HINT, _transposed_softmax),
        Mistake(TRANSPOSE_HINT, lambda x: _transposed_softmax(x, keepdims_sum=True)),
        Mistake(AXIS_1_HINT, _softmax_axis_1),
        Mistake(AXIS_1_HINT, lambda x: _softmax_axis_1(x, ndim_branch=False)),
        Mistake({"en": "shift the denominator too: divide e = exp(x − max) by its own sum, "
                       "e.sum(axis=-1, keepdims=True)",
                 "zh": "分母也要减去最大值：用 e = exp(x − max) 除以它自己的和 "
                       "e.sum(axis=-1, keepdims=True)"},
                lambda x: np.exp(x - x.max(axis=-1, keepdims=True))
                / np.exp(x).sum(axis=-1, keepdims=True)),
    ))


LEN_K_HINT = {"en": "d_k is the length of q (the number of columns of K); len(K) is n, the "
                    "number of keys",
              "zh": "d_k 是 q 的长度（K 的列数）；len(K) 是 n，也就是键的个数"}
SCALE_HINT = {"en": "the scores still need dividing by √d_k", "zh": "分数还要除以 √d_k"}
NOT_D_K_HINT = {"en": "divide by √d_k (np.sqrt(d_k)), not by d_k",
                "zh": "要除以 √d_k（np.sqrt(d_k)），而不是 d_k"}
EIGHT_HINT = {"en": "√d_k = 8 only in the worked example (d_k = 64): compute it from q, "
                    "np.sqrt(len(q))",
              "zh": "√d_k = 8 只是演算示例中的值（d_k = 64）：要从 q 算出来，np.sqrt(len(q))"}


def _attention_cases():
    """(q (d_k,), K (n, d_k), V (n, d_v)), the notes' example first."""
    rng = np.random.default_rng(1)
    q = np.full(64, 2.0)  # q·k₁ = 112, q·k₂ = 96 with d_k = 64
    k = np.stack([np.full(64, 112 / 128), np.full(64, 96 / 128)])
    v = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])
    return [
        Case((q, k, v), {"en": "the worked example: q·k = 112 and 96, d_k = 64",
                         "zh": "演算示例：q·k = 112 和 96，d_k = 64"}),
        Case((rng.normal(size=4), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))),
             {"en": "3 keys, d_k = 4, d_v = 2", "zh": "3 个键，d_k = 4，d_v = 2"}),
        Case((rng.normal(size=16), rng.normal(size=(5, 16)), rng.normal(size=(5, 16))),
             {"en": "5 keys, d_k = d_v = 16", "zh": "5 个键，d_k = d_v = 16"}),
    ]


SCALED_SCORES = Exercise(
    name={"en": "scaled scores", "zh": "缩放后的分数"}, checker="check_scaled_scores",
    args=("q", "K"),
    task={"en": "the (n,) scores q·kᵢ / √d_k, one per row kᵢ of K",
          "zh": "形状为 (n,) 的分数 q·kᵢ / √d_k，K 的每一行 kᵢ 对应一个"},
    cases=lambda: [Case(c.args[:2], c.note) for c in _attention_cases()],
    reference=lambda q, K: K @ q / np.sqrt(q.shape[-1]),
    mistakes=(
        Mistake(NOT_D_K_HINT, lambda q, K: K @ q / q.shape[-1]),
        Mistake(SCALE_HINT, lambda q, K: K @ q),
        Mistake(LEN_K_HINT, lambda q, K: K @ q / np.sqrt(len(K))),
        Mistake({"en": "divide by √d_k, do not multiply", "zh": "要除以 √d_k，而不是乘以它"},
                lambda q, K: K @ q * np.sqrt(q.shape[-1])),
        Mistake(EIGHT_HINT, lambda q, K: K @ q / 8),
    ))


def _single_query_attention(q, K, V):
    out, _ = scaled_dot_product_attention(q[None, :], K, V)  # (1, d_v)
    return out[0]


SINGLE_QUERY_ATTENTION = Exercise(
    name={"en": "single-query attention", "zh": "单个查询的注意力"},
    checker="check_single_query_attention", args=("q", "K", "V"),
    task={"en": "z (d_v,) = Σᵢ softmax(q·kᵢ/√d_k) vᵢ",
          "zh": "向量 z (d_v,) = Σᵢ softmax(q·kᵢ/√d_k) vᵢ"},
    cases=_attention_cases, reference=_single_query_attention,
    mistakes=(
        Mistake(LEN_K_HINT, lambda q, K, V: softmax(K @ q / np.sqrt(len(K))) @ V),
        Mistake({"en": "the scores still need dividing by √d_k before the softmax",
                 "zh": "分数在 softmax 之前还要除以 √d_k"},
                lambda q, K, V: softmax(K @ q) @ V),
        Mistake({"en": "z is the weighted sum of the value vectors vᵢ (rows of V), not of "
                       "the keys",
                 "zh": "z 是值向量 vᵢ（V 的各行）的加权和，不是键的加权和"},
                lambda q, K, V: softmax(K @ q / np.sqrt(q.shape[-1])) @ K),
        Mistake({"en": "z is Σᵢ αᵢ vᵢ — a vector of length d_v — not the weights α themselves",
                 "zh": "z 是 Σᵢ αᵢ vᵢ —— 一个长度为 d_v 的向量 —— 而不是权重 α 本身"},
                lambda q, K, V: softmax(K @ q / np.sqrt(q.shape[-1]))),
        Mistake({"en": "d_k is the length of q and of each key; V's width is d_v, which may "
                       "differ",
                 "zh": "d_k 是 q（也是每个键）的长度；V 的宽度是 d_v，两者可以不同"},
                lambda q, K, V: softmax(K @ q / np.sqrt(V.shape[-1])) @ V),
        Mistake(NOT_D_K_HINT, lambda q, K, V: softmax(K @ q / len(q)) @ V),
        Mistake(EIGHT_HINT, lambda q, K, V: softmax(K @ q / 8) @ V),
        Mistake({"en": "return z alone, not (z, weights)",
                 "zh": "只返回 z，不要返回 (z, weights)"},
                lambda q, K, V: (_single_query_attention(q, K, V),
                                 softmax(K @ q / np.sqrt(len(q))))),
    ))


def check_scaled_scores(fn):
    """fn(q, K) -> (n,) scores q·kᵢ / √d_k, for q (d_k,) and the keys as rows of K (n, d_k).
    An exercise of notebook 01 (§3)."""
    return SCALED_SCORES.check(fn)


def check_softmax(fn):
    """fn(x) -> softmax of `x` along its last axis; it must survive x = [1000, 999, 998].
    An exercise of notebook 01 (§5)."""
    return SOFTMAX.check(fn)


def check_single_query_attention(fn):
    """fn(q, K, V) -> z (d_v,) = Σᵢ softmax(q·kᵢ/√d_k) vᵢ, for q (d_k,), K (n, d_k), V (n, d_v).
    An exercise of notebook 01 (§6, the bug to find)."""
    return SINGLE_QUERY_ATTENTION.check(fn)


EXERCISES = [SCALED_SCORES, SOFTMAX, SINGLE_QUERY_ATTENTION]

"""Exercises of notebook 02: Q, K, V from one fused projection, matrix attention for any
number of keys, its FLOPs (cases, references, known mistakes)."""

import numpy as np

from ..attention import scaled_dot_product_attention, softmax
from ..figures.cost import attention_flops
from .core import Case, Exercise, Mistake

__all__ = ["check_attention", "check_attention_flops", "check_qkv"]


def _qkv_cases():
    rng = np.random.default_rng(2)
    return [
        Case((rng.normal(size=(4, 6)), rng.normal(size=(6, 3)), rng.normal(size=(6, 3)),
              rng.normal(size=(6, 3))), {"en": "one sentence (L, d_model)",
                                         "zh": "一个句子 (L, d_model)"}),
        Case((rng.normal(size=(2, 5, 8)), rng.normal(size=(8, 4)), rng.normal(size=(8, 4)),
              rng.normal(size=(8, 2))), {"en": "a batch (B, L, d_model), d_v ≠ d_k",
                                         "zh": "一个批次 (B, L, d_model)，d_v ≠ d_k"}),
        Case((rng.normal(size=(3, 8)), rng.normal(size=(8, 2)), rng.normal(size=(8, 2)),
              rng.normal(size=(8, 5))), {"en": "d_v = 5 wider than d_k = 2",
                                         "zh": "d_v = 5，比 d_k = 2 宽"}),
    ]


def _split_in_thirds(X, W_q, W_k, W_v):
    fused = X @ np.concatenate([W_q, W_k, W_v], axis=1)  # (..., L, 2 d_k + d_v)
    return tuple(np.split(fused, 3, axis=-1))


def _cut_at(X, W_q, W_k, W_v, width, last=True):
    """The fused product cut into blocks of `width` columns: V = P[..., 2w:3w] (not
    P[..., 2w:]) unless `last`."""
    P = X @ np.concatenate([W_q, W_k, W_v], axis=1)
    return P[..., :width], P[..., width:2 * width], P[..., 2 * width:None if last else 3 * width]


def _stacked_rows(X, W_q, W_k, W_v):
    P = X @ np.concatenate([W_q, W_k, W_v], axis=0)  # raises: the weights stacked as rows
    return tuple(np.split(P, 3, axis=-1))


QKV = Exercise(
    name={"en": "Q, K, V projections", "zh": "Q、K、V 投影"}, checker="check_qkv",
    args=("X", "W_q", "W_k", "W_v"),
    task={"en": "the tuple (Q, K, V) = (X W_q, X W_k, X W_v)",
          "zh": "元组 (Q, K, V) = (X W_q, X W_k, X W_v)"},
    cases=_qkv_cases, reference=lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_k, X @ W_v),
    labels=("Q", "K", "V"),
    mistakes=(
        Mistake({"en": "K is X W_k and V is X W_v: the projections are swapped",
                 "zh": "K 是 X W_k，V 是 X W_v：这两个投影弄反了"},
                lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_v, X @ W_k)),
        Mistake({"en": "the three column blocks have widths d_k, d_k and d_v: split at "
                       "columns d_k and 2·d_k (np.split(..., 3) needs three equal widths)",
                 "zh": "三个列块的宽度分别是 d_k、d_k 和 d_v：要在第 d_k 列和第 2·d_k 列处切开"
                       "（np.split(..., 3) 要求三块一样宽）"}, _split_in_thirds),
        Mistake({"en": "V is the last d_v columns, P[..., 2*d_k:]: cutting it at 3·d_k assumes "
                       "d_v = d_k, and here d_v is wider",
                 "zh": "V 是最后 d_v 列，即 P[..., 2*d_k:]：在 3·d_k 处截断等于假定 d_v = d_k，"
                       "而这里 d_v 更宽"},
                lambda X, W_q, W_k, W_v: _cut_at(X, W_q, W_k, W_v, W_q.shape[1], last=False)),
        Mistake({"en": "the cuts are at d_k and 2·d_k, with d_k = W_q.shape[1], not at d_v",
                 "zh": "切口在 d_k 和 2·d_k 处（d_k = W_q.shape[1]），不在 d_v 处"},
                lambda X, W_q, W_k, W_v: _cut_at(X, W_q, W_k, W_v, W_v.shape[1])),
        Mistake({"en": "put the three weights side by side, np.concatenate([W_q, W_k, W_v], "
                       "axis=1): they share their rows (d_model), each brings its columns",
                 "zh": "把三个权重左右并排，np.concatenate([W_q, W_k, W_v], axis=1)：它们的行"
                       "（d_model）相同，各自贡献自己的列"}, _stacked_rows),
    ))


def _kt(K):
    return np.swapaxes(K, -1, -2)


def _attention_cases():
    rng = np.random.default_rng(3)
    return [
        Case((rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))),
             {"en": "self-attention, 4 tokens", "zh": "自注意力，4 个词元"}),
        Case((rng.normal(size=(2, 8)), rng.normal(size=(5, 8)), rng.normal(size=(5, 4))),
             {"en": "2 queries, 5 keys", "zh": "2 个查询，5 个键"}),
        Case((rng.normal(size=(3, 6, 16)), rng.normal(size=(3, 6, 16)),
              rng.normal(size=(3, 6, 16))), {"en": "a batch of 3", "zh": "含 3 个序列的批次"}),
        Case((np.array([[20.0, 20.0, 20.0, 20.0], [-20.0, -20.0, -20.0, -20.0]])
              + rng.normal(size=(2, 4)), 25 + rng.normal(size=(3, 4)), rng.normal(size=(3, 2))),
             {"en": "scores near +1000 in one row and -1000 in the other",
              "zh": "一行的分数接近 +1000，另一行接近 -1000"}),
        Case((np.array([[50.0, 50.0, 50.0, 50.0], [1.0, 0.0, -1.0, 0.0]])
              + 0.1 * rng.normal(size=(2, 4)),
              np.array([[10.0, 10.0, 10.0, 10.0], [-10.0, -10.0, -10.0, -10.0],
                        [0.0, 0.0, 0.0, 0.0]]) + 0.1 * rng.normal(size=(3, 4)),
              rng.normal(size=(3, 2))),
             {"en": "one row of scores spans 2000, from -1000 to +1000",
              "zh": "有一行分数横跨 2000，从 -1000 到 +1000"}),
    ]


def _shifted_attention(Q, K, V, shift, keepdims_sum=True):
    scores = Q @ _kt(K) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - shift(scores))
    return e / e.sum(axis=-1, keepdims=keepdims_sum) @ V


def _row_max(keepdims):
    return lambda scores: scores.max(axis=-1, keepdims=keepdims)


KEEPDIMS_HINT = {
    "en": "scores.max(axis=-1) and the sum along axis=-1 have shape (..., L_q), which cannot "
          "meet the scores (..., L_q, L_k): keep the axis with keepdims=True",
    "zh": "scores.max(axis=-1) 和沿 axis=-1 的求和形状是 (..., L_q)，与分数 (..., L_q, L_k) "
          "对不齐：用 keepdims=True 保留这个轴"}

ATTENTION = Exercise(
    name={"en": "matrix attention", "zh": "矩阵形式的注意力"}, checker="check_attention",
    args=("Q", "K", "V"),
    task={"en": "Z = softmax(Q Kᵀ / √d_k) V, for (L, d) matrices and (B, L, d) batches",
          "zh": "Z = softmax(Q Kᵀ / √d_k) V，输入既可以是 (L, d) 矩阵，也可以是 (B, L, d) 批次"},
    cases=_attention_cases,
    reference=lambda Q, K, V: scaled_dot_product_attention(Q, K, V)[0],
    mistakes=(
        Mistake({"en": "divide the scores by √d_k before the softmax",
                 "zh": "在 softmax 之前先把分数除以 √d_k"},
                lambda Q, K, V: softmax(Q @ _kt(K)) @ V),
        Mistake({"en": "the softmax runs along each row (axis=-1): each query's weights sum "
                       "to 1",
                 "zh": "softmax 沿每一行计算（axis=-1）：每个查询的权重之和为 1"},
                lambda Q, K, V: softmax(Q @ _kt(K) / np.sqrt(Q.shape[-1]), axis=-2) @ V),
        Mistake({"en": "return Z = weights @ V, not the weights",
                 "zh": "要返回 Z = weights @ V，而不是权重本身"},
                lambda Q, K, V: softmax(Q @ _kt(K) / np.sqrt(Q.shape[-1]))),
        Mistake({"en": "for a batch, swap only the last two axes of K: np.swapaxes(K, -1, -2) "
                       "(K.T reverses all of them)",
                 "zh": "对批次只交换 K 的最后两个轴：np.swapaxes(K, -1, -2)（K.T 会把所有轴"
                       "都倒过来）"},
                lambda Q, K, V: softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ V),
        Mistake({"en": "subtract each row's own max, scores.max(axis=-1, keepdims=True): the "
                       "max of the whole array leaves a row far below it to underflow to "
                       "0 / 0",
                 "zh": "要减去每一行自己的最大值 scores.max(axis=-1, keepdims=True)：减去整个"
                       "数组的最大值，会让远低于它的那一行下溢成 0 / 0"},
                lambda Q, K, V: _shifted_attention(Q, K, V, np.max)),
        Mistake({"en": "exp of a score near 1000 overflows: subtract each row's max before "
                       "np.exp",
                 "zh": "接近 1000 的分数取 exp 会溢出：在 np.exp 之前减去每一行的最大值"},
                lambda Q, K, V: _shifted_attention(Q, K, V, lambda s: 0.0)),
        Mistake({"en": "subtract each row's max, not its mean: a row of scores spanning 2000 "
                       "is still 1000 above its mean, and exp(1000) overflows (in float32 exp "
                       "overflows above 88)",
                 "zh": "要减去每一行的最大值，而不是均值：一行分数横跨 2000 时，最大的分数仍比"
                       "均值高 1000，而 exp(1000) 会溢出（float32 的 exp 超过 88 就溢出）"},
                lambda Q, K, V: _shifted_attention(
                    Q, K, V, lambda s: s.mean(axis=-1, keepdims=True))),
        Mistake(KEEPDIMS_HINT, lambda Q, K, V: _shifted_attention(Q, K, V, _row_max(False))),
        Mistake(KEEPDIMS_HINT, lambda Q, K, V: _shifted_attention(Q, K, V, _row_max(True),
                                                                   keepdims_sum=False)),
        Mistake(KEEPDIMS_HINT, lambda Q, K, V: _shifted_attention(Q, K, V, _row_max(False),
                                                                   keepdims_sum=False)),
        Mistake({"en": "d_k is the width of Q and K (Q.shape[-1]); V's width is d_v, which may "
                       "differ",
                 "zh": "d_k 是 Q 和 K 的宽度（Q.shape[-1]）；V 的宽度是 d_v，两者可以不同"},
                lambda Q, K, V: softmax(Q @ _kt(K) / np.sqrt(V.shape[-1])) @ V),
        Mistake({"en": "return Z alone, not (Z, weights)", "zh": "只返回 Z，不要返回 (Z, weights)"},
                lambda Q, K, V: scaled_dot_product_attention(Q, K, V)),
    ))


def _layer_flops(n, d_model, d_k, d_v):
    projections = 2 * n * d_model * (2 * d_k + d_v)  # X W_q, X W_k (d_k columns), X W_v (d_v)
    return projections + attention_flops(n, n, d_k, d_v)


ATTENTION_FLOPS = Exercise(
    name={"en": "attention FLOPs", "zh": "注意力的浮点运算次数"},
    checker="check_attention_flops", args=("n", "d_model", "d_k", "d_v"),
    task={"en": "the FLOPs of X W^Q, X W^K, X W^V, Q Kᵀ and weights @ V (2 per multiply-add)",
          "zh": "X W^Q、X W^K、X W^V、Q Kᵀ 和 weights @ V 的浮点运算次数（每次乘加算 2 次）"},
    cases=lambda: [Case((4, 8, 4, 4)),
                   Case((512, 512, 64, 64), {"en": "the paper's sizes", "zh": "论文中的尺寸"}),
                   Case((100, 32, 16, 8), {"en": "d_v ≠ d_k", "zh": "d_v ≠ d_k"}),
                   Case((1, 1, 1, 1), {"en": "one token", "zh": "只有一个词元"})],
    reference=_layer_flops,
    mistakes=(
        Mistake({"en": "count a multiply-add as 2 FLOPs (one multiply, one add)",
                 "zh": "一次乘加要算 2 次浮点运算（一次乘法，一次加法）"},
                lambda n, d_model, d_k, d_v: _layer_flops(n, d_model, d_k, d_v) // 2),
        Mistake({"en": "count the three projections X W^Q, X W^K, X W^V as well: "
                       "2·n·d_model·d_out FLOPs each",
                 "zh": "三个投影 X W^Q、X W^K、X W^V 也要算上：每个 2·n·d_model·d_out 次"},
                lambda n, d_model, d_k, d_v: attention_flops(n, n, d_k, d_v)),
        Mistake({"en": "the weights times V costs 2·n²·d_v too",
                 "zh": "权重乘以 V 也要 2·n²·d_v 次"},
                lambda n, d_model, d_k, d_v: 2 * n * d_model * (2 * d_k + d_v) + 2 * n * n * d_k),
        Mistake({"en": "V and the product weights @ V have d_v columns, not d_k",
                 "zh": "V 和乘积 weights @ V 都有 d_v 列，不是 d_k 列"},
                lambda n, d_model, d_k, d_v: _layer_flops(n, d_model, d_k, d_k)),
        Mistake({"en": "the projections produce d_k, d_k and d_v columns, not d_model: "
                       "2·n·d_model·(2·d_k + d_v) FLOPs together",
                 "zh": "三个投影产生的是 d_k、d_k 和 d_v 列，不是 d_model 列：合计 "
                       "2·n·d_model·(2·d_k + d_v) 次"},
                lambda n, d_model, d_k, d_v: 6 * n * d_model ** 2
                + attention_flops(n, n, d_k, d_v)),
        Mistake({"en": "count the matrix products only: the softmax is not asked",
                 "zh": "只数矩阵乘法：softmax 不在要求之内"},
                lambda n, d_model, d_k, d_v: _layer_flops(n, d_model, d_k, d_v) + 3 * n * n),
        Mistake({"en": "weights @ V multiplies an n × n matrix by an n × d_v one: "
                       "2·n·n·d_v FLOPs",
                 "zh": "weights @ V 是 n × n 矩阵乘以 n × d_v 矩阵：2·n·n·d_v 次"},
                lambda n, d_model, d_k, d_v: 2 * n * d_model * (2 * d_k + d_v)
                + 2 * n * n * d_k + 2 * n * d_v),
    ))


def check_qkv(fn):
    """fn(X, W_q, W_k, W_v) -> (Q, K, V) = (X W_q, X W_k, X W_v), for X (L, d) or (B, L, d).
    An exercise of notebook 02 (§1)."""
    return QKV.check(fn)


def check_attention(fn):
    """fn(Q, K, V) -> Z = softmax(Q Kᵀ / √d_k) V, for (L, d) matrices and (B, L, d) batches.
    An exercise of notebook 02 (§3)."""
    return ATTENTION.check(fn)


def check_attention_flops(fn):
    """fn(n, d_model, d_k, d_v) -> FLOPs of the Q, K, V projections plus Q Kᵀ and A V.
    An exercise of notebook 02 (§5)."""
    return ATTENTION_FLOPS.check(fn)


EXERCISES = [QKV, ATTENTION, ATTENTION_FLOPS]

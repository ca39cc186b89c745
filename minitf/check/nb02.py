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
              rng.normal(size=(6, 3))), "one sentence (L, d_model)"),
        Case((rng.normal(size=(2, 5, 8)), rng.normal(size=(8, 4)), rng.normal(size=(8, 4)),
              rng.normal(size=(8, 2))), "a batch (B, L, d_model), d_v ≠ d_k"),
    ]


def _split_in_thirds(X, W_q, W_k, W_v):
    fused = X @ np.concatenate([W_q, W_k, W_v], axis=1)  # (..., L, 2 d_k + d_v)
    return tuple(np.split(fused, 3, axis=-1))


QKV = Exercise(
    name="Q, K, V projections", checker="check_qkv", args=("X", "W_q", "W_k", "W_v"),
    task="the tuple (Q, K, V) = (X W_q, X W_k, X W_v)",
    cases=_qkv_cases, reference=lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_k, X @ W_v),
    labels=("Q", "K", "V"),
    mistakes=(
        Mistake("K is X W_k and V is X W_v: the projections are swapped",
                lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_v, X @ W_k)),
        Mistake("the three column blocks have widths d_k, d_k and d_v: split at columns d_k "
                "and 2·d_k (np.split(..., 3) needs three equal widths)", _split_in_thirds),
    ))


def _kt(K):
    return np.swapaxes(K, -1, -2)


def _attention_cases():
    rng = np.random.default_rng(3)
    return [
        Case((rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))),
             "self-attention, 4 tokens"),
        Case((rng.normal(size=(2, 8)), rng.normal(size=(5, 8)), rng.normal(size=(5, 4))),
             "2 queries, 5 keys"),
        Case((rng.normal(size=(3, 6, 16)), rng.normal(size=(3, 6, 16)),
              rng.normal(size=(3, 6, 16))), "a batch of 3"),
        Case((np.array([[20.0, 20.0, 20.0, 20.0], [-20.0, -20.0, -20.0, -20.0]])
              + rng.normal(size=(2, 4)), 25 + rng.normal(size=(3, 4)), rng.normal(size=(3, 2))),
             "scores near +1000 in one row and -1000 in the other"),
    ]


def _shifted_attention(Q, K, V, shift):
    scores = Q @ _kt(K) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - shift(scores))
    return e / e.sum(axis=-1, keepdims=True) @ V


ATTENTION = Exercise(
    name="matrix attention", checker="check_attention", args=("Q", "K", "V"),
    task="Z = softmax(Q Kᵀ / √d_k) V, for (L, d) matrices and (B, L, d) batches",
    cases=_attention_cases,
    reference=lambda Q, K, V: scaled_dot_product_attention(Q, K, V)[0],
    mistakes=(
        Mistake("divide the scores by √d_k before the softmax",
                lambda Q, K, V: softmax(Q @ _kt(K)) @ V),
        Mistake("the softmax runs along each row (axis=-1): each query's weights sum to 1",
                lambda Q, K, V: softmax(Q @ _kt(K) / np.sqrt(Q.shape[-1]), axis=-2) @ V),
        Mistake("return Z = weights @ V, not the weights",
                lambda Q, K, V: softmax(Q @ _kt(K) / np.sqrt(Q.shape[-1]))),
        Mistake("for a batch, swap only the last two axes of K: np.swapaxes(K, -1, -2) "
                "(K.T reverses all of them)",
                lambda Q, K, V: softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ V),
        Mistake("subtract each row's own max, scores.max(axis=-1, keepdims=True): the max of "
                "the whole array leaves a row far below it to underflow to 0 / 0",
                lambda Q, K, V: _shifted_attention(Q, K, V, np.max)),
        Mistake("exp of a score near 1000 overflows: subtract each row's max before np.exp",
                lambda Q, K, V: _shifted_attention(Q, K, V, lambda s: 0.0)),
    ))


def _layer_flops(n, d_model, d_k, d_v):
    projections = 2 * n * d_model * (2 * d_k + d_v)  # X W_q, X W_k (d_k columns), X W_v (d_v)
    return projections + attention_flops(n, n, d_k, d_v)


ATTENTION_FLOPS = Exercise(
    name="attention FLOPs", checker="check_attention_flops", args=("n", "d_model", "d_k", "d_v"),
    task="the FLOPs of X W^Q, X W^K, X W^V, Q Kᵀ and weights @ V (2 per multiply-add)",
    cases=lambda: [Case((4, 8, 4, 4)), Case((512, 512, 64, 64), "the paper's sizes"),
                   Case((100, 32, 16, 8), "d_v ≠ d_k"), Case((1, 1, 1, 1), "one token")],
    reference=_layer_flops,
    mistakes=(
        Mistake("count a multiply-add as 2 FLOPs (one multiply, one add)",
                lambda n, d_model, d_k, d_v: _layer_flops(n, d_model, d_k, d_v) // 2),
        Mistake("count the three projections X W^Q, X W^K, X W^V as well: "
                "2·n·d_model·d_out FLOPs each",
                lambda n, d_model, d_k, d_v: attention_flops(n, n, d_k, d_v)),
        Mistake("the weights times V costs 2·n²·d_v too",
                lambda n, d_model, d_k, d_v: 2 * n * d_model * (2 * d_k + d_v) + 2 * n * n * d_k),
        Mistake("V and the product A V have d_v columns, not d_k",
                lambda n, d_model, d_k, d_v: _layer_flops(n, d_model, d_k, d_k)),
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

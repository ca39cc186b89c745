"""Exercises of notebook 01: scaled scores, a stable softmax, and the bug in one query's
attention (cases, references, known mistakes)."""

import numpy as np

from ..attention import scaled_dot_product_attention, softmax
from .core import Case, Exercise, Mistake

__all__ = ["check_scaled_scores", "check_single_query_attention", "check_softmax"]


def _softmax_cases():
    return [
        Case((np.array([1.0, 2.0, 3.0]),)),
        Case((np.array([14.0, 12.0]),), "the notes' scores 112/8 and 96/8"),
        Case((np.array([1000.0, 999.0, 998.0]),), "large entries"),
        Case((np.array([-1000.0, -1001.0]),), "very negative entries"),
        Case((np.array([[0.0, 1.0, 2.0], [5.0, 5.0, 5.0]]),), "two rows"),
        Case((np.array([0.0, 1000.0]),), "a row spanning 1000"),
        Case((np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -1002.0]]),),
             "two rows 2000 apart"),
    ]


def _naive_softmax(x):
    return np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)


def _shifted_softmax(x, shift):
    e = np.exp(x - shift)
    return e / e.sum(axis=-1, keepdims=True)


def _without_keepdims(x):
    e = np.exp(x - x.max(axis=-1))  # (...,): meets x (..., n) only when it is 1-D
    return e / e.sum(axis=-1)


SOFTMAX = Exercise(
    name="softmax", checker="check_softmax", args=("x",),
    task="the softmax of x along its last axis (each row sums to 1), without overflow",
    cases=_softmax_cases, reference=softmax,
    mistakes=(
        Mistake("each row must sum to 1: take the max and the sum along axis=-1 with "
                "keepdims=True", lambda x: softmax(x, axis=None) if x.ndim > 1 else softmax(x)),
        Mistake("exp(1000) overflows: subtract the largest entry before taking exp",
                _naive_softmax),
        Mistake("subtract each row's largest entry, not its smallest: x − min can still be "
                "1000, and exp(1000) overflows",
                lambda x: _shifted_softmax(x, x.min(axis=-1, keepdims=True))),
        Mistake("subtract each row's own max, x.max(axis=-1, keepdims=True): x.max() is the "
                "largest entry of the whole array, and a row far below it underflows to 0 / 0",
                lambda x: _shifted_softmax(x, x.max())),
        Mistake("x.max(axis=-1) and the sum along axis=-1 have shape (...,), which cannot "
                "meet x (..., n): keep the axis with keepdims=True, giving (..., 1)",
                _without_keepdims),
        Mistake("the softmax ran over axis 0 (down the columns); it runs along each row, the "
                "last axis (axis=-1, keepdims=True)", lambda x: softmax(x, axis=0)),
    ))


LEN_K_HINT = ("d_k is the length of q (the number of columns of K); len(K) is n, the number "
              "of keys")


def _attention_cases():
    """(q (d_k,), K (n, d_k), V (n, d_v)), the notes' example first."""
    rng = np.random.default_rng(1)
    q = np.full(64, 2.0)  # q·k₁ = 112, q·k₂ = 96 with d_k = 64
    k = np.stack([np.full(64, 112 / 128), np.full(64, 96 / 128)])
    v = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])
    return [
        Case((q, k, v), "the notes' example: q·k = 112 and 96, d_k = 64"),
        Case((rng.normal(size=4), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))),
             "3 keys, d_k = 4, d_v = 2"),
        Case((rng.normal(size=16), rng.normal(size=(5, 16)), rng.normal(size=(5, 16))),
             "5 keys, d_k = d_v = 16"),
    ]


SCALED_SCORES = Exercise(
    name="scaled scores", checker="check_scaled_scores", args=("q", "K"),
    task="the (n,) scores q·kᵢ / √d_k, one per row kᵢ of K",
    cases=lambda: [Case(c.args[:2], c.note) for c in _attention_cases()],
    reference=lambda q, K: K @ q / np.sqrt(q.shape[-1]),
    mistakes=(
        Mistake("divide by √d_k (np.sqrt(d_k)), not by d_k", lambda q, K: K @ q / q.shape[-1]),
        Mistake("the scores still need dividing by √d_k", lambda q, K: K @ q),
        Mistake(LEN_K_HINT, lambda q, K: K @ q / np.sqrt(len(K))),
    ))


def _single_query_attention(q, K, V):
    out, _ = scaled_dot_product_attention(q[None, :], K, V)  # (1, d_v)
    return out[0]


SINGLE_QUERY_ATTENTION = Exercise(
    name="single-query attention", checker="check_single_query_attention",
    args=("q", "K", "V"),
    task="z (d_v,) = Σᵢ softmax(q·kᵢ/√d_k) vᵢ",
    cases=_attention_cases, reference=_single_query_attention,
    mistakes=(
        Mistake(LEN_K_HINT, lambda q, K, V: softmax(K @ q / np.sqrt(len(K))) @ V),
        Mistake("the scores still need dividing by √d_k before the softmax",
                lambda q, K, V: softmax(K @ q) @ V),
        Mistake("z is the weighted sum of the value vectors vᵢ (rows of V), not of the keys",
                lambda q, K, V: softmax(K @ q / np.sqrt(q.shape[-1])) @ K),
        Mistake("z is Σᵢ αᵢ vᵢ — a vector of length d_v — not the weights α themselves",
                lambda q, K, V: softmax(K @ q / np.sqrt(q.shape[-1]))),
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

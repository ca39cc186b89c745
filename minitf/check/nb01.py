"""Checkers for the exercises of notebook 01: a stable softmax and one query's attention."""

import warnings

import numpy as np

from ..attention import scaled_dot_product_attention, softmax
from .core import CheckResult, check_function, describe_difference

__all__ = ["check_scaled_scores", "check_single_query_attention", "check_softmax"]


def add_hints(result, fn, cases, mistakes):
    """Append a hint to a failed `result` when `fn` agrees with a known mistake on every case.

    `mistakes` is a list of (hint, wrong_reference) pairs. Never raises.
    """
    if result or any("not written yet" in line for line in result.lines):
        return result
    for hint, wrong in mistakes:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                same = all(describe_difference(fn(*c), wrong(*c)) is None for c in cases)
        except Exception:  # noqa: BLE001 - a checker reports, it never raises
            same = False
        if same:
            return CheckResult(result.name, False, result.lines + [f"hint: {hint}"])
    return result


def softmax_cases():
    """Small, huge, very negative and 2-D inputs (softmax along the last axis)."""
    return [
        (np.array([1.0, 2.0, 3.0]),),
        (np.array([14.0, 12.0]),),
        (np.array([1000.0, 999.0, 998.0]),),
        (np.array([-1000.0, -1001.0]),),
        (np.array([[0.0, 1.0, 2.0], [5.0, 5.0, 5.0]]),),
    ]


def check_softmax(fn):
    """fn(x) -> softmax of `x` along its last axis; it must survive x = [1000, 999, 998]."""
    cases = softmax_cases()
    result = check_function("softmax", fn, softmax, cases)
    mistakes = [
        ("each row must sum to 1: take the max and the sum along axis=-1 with keepdims=True",
         lambda x: softmax(x, axis=None) if x.ndim > 1 else softmax(x)),
        ("exp(1000) overflows: subtract the largest entry before taking exp",
         lambda x: np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)),
    ]
    return add_hints(result, fn, cases, mistakes)


def attention_cases():
    """(q (d_k,), K (n, d_k), V (n, d_v)) triples, the notes' example among them."""
    rng = np.random.default_rng(1)
    # The notes' example: q·k₁ = 112, q·k₂ = 96 with d_k = 64.
    q = np.full(64, 2.0)
    k = np.stack([np.full(64, 112 / 128), np.full(64, 96 / 128)])
    v = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])
    return [
        (q, k, v),
        (rng.normal(size=4), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))),
        (rng.normal(size=16), rng.normal(size=(5, 16)), rng.normal(size=(5, 16))),
    ]


def reference_scaled_scores(q, K):
    return K @ q / np.sqrt(q.shape[-1])


def check_scaled_scores(fn):
    """fn(q, K) -> (n,) scores q·kᵢ / √d_k, for q (d_k,) and the keys as rows of K (n, d_k)."""
    cases = [c[:2] for c in attention_cases()]
    result = check_function("scaled scores", fn, reference_scaled_scores, cases)
    mistakes = [
        ("divide by √d_k (np.sqrt(d_k)), not by d_k", lambda q, K: K @ q / q.shape[-1]),
        ("the scores still need dividing by √d_k", lambda q, K: K @ q),
    ]
    return add_hints(result, fn, cases, mistakes)


def reference_single_query_attention(q, K, V):
    out, _ = scaled_dot_product_attention(q[None, :], K, V)  # (1, d_v)
    return out[0]


def check_single_query_attention(fn):
    """fn(q, K, V) -> z (d_v,) = Σᵢ softmax(q·kᵢ/√d_k) vᵢ, for q (d_k,), K (n, d_k), V (n, d_v)."""
    cases = attention_cases()
    result = check_function("single-query attention", fn, reference_single_query_attention,
                            cases)
    mistakes = [
        ("the scores still need dividing by √d_k before the softmax",
         lambda q, K, V: softmax(K @ q) @ V),
        ("z is the weighted sum of the value vectors vᵢ (rows of V), not of the keys",
         lambda q, K, V: softmax(K @ q / np.sqrt(q.shape[-1])) @ K),
        ("z is Σᵢ αᵢ vᵢ — a vector of length d_v — not the weights α themselves",
         lambda q, K, V: softmax(K @ q / np.sqrt(q.shape[-1]))),
    ]
    return add_hints(result, fn, cases, mistakes)

"""Checkers for the exercises of notebook 02: projections, matrix attention, its FLOPs."""

import warnings

import numpy as np

from ..attention import scaled_dot_product_attention, softmax
from ..cost import attention_flops
from .core import CheckResult, check_function, describe_difference
from .nb01 import add_hints

__all__ = ["check_attention", "check_attention_flops", "check_qkv"]

NOT_WRITTEN = "not written yet: replace `raise NotImplementedError` with your code"


def qkv_cases():
    """(X, W_q, W_k, W_v): one sentence (L, d_model), then a batch (B, L, d_model), d_v ≠ d_k."""
    rng = np.random.default_rng(2)
    return [
        (rng.normal(size=(4, 6)), rng.normal(size=(6, 3)), rng.normal(size=(6, 3)),
         rng.normal(size=(6, 3))),
        (rng.normal(size=(2, 5, 8)), rng.normal(size=(8, 4)), rng.normal(size=(8, 4)),
         rng.normal(size=(8, 2))),
    ]


def check_qkv(fn):
    """fn(X, W_q, W_k, W_v) -> (Q, K, V) = (X W_q, X W_k, X W_v), for X (L, d) or (B, L, d)."""
    name = "Q, K, V projections"
    lines = []
    for i, (X, W_q, W_k, W_v) in enumerate(qkv_cases(), 1):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                got = fn(X, W_q, W_k, W_v)
        except NotImplementedError:
            return CheckResult(name, False, [NOT_WRITTEN])
        except Exception as error:  # noqa: BLE001 - a checker reports, it never raises
            lines.append(f"case {i}: raised {type(error).__name__}: {error}")
            continue
        if got is None:
            lines.append(f"case {i}: returned None — did you forget `return`?")
            continue
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            lines.append(f"case {i}: expected three arrays (Q, K, V), "
                         f"got a {type(got).__name__}")
            continue
        for label, array, W in zip("QKV", got, (W_q, W_k, W_v)):
            problem = describe_difference(array, X @ W)
            if problem:
                lines.append(f"case {i}: {label}: {problem}")
    if lines:
        return CheckResult(name, False, lines)
    return CheckResult(name, True, [f"{len(qkv_cases())} cases agree with minitf"])


def attention_cases():
    """(Q, K, V): self-attention, more keys than queries, and a batch (B, L, d)."""
    rng = np.random.default_rng(3)
    return [
        (rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))),
        (rng.normal(size=(2, 8)), rng.normal(size=(5, 8)), rng.normal(size=(5, 4))),
        (rng.normal(size=(3, 6, 16)), rng.normal(size=(3, 6, 16)), rng.normal(size=(3, 6, 16))),
    ]


def reference_attention(Q, K, V):
    return scaled_dot_product_attention(Q, K, V)[0]


def check_attention(fn):
    """fn(Q, K, V) -> Z = softmax(Q Kᵀ / √d_k) V, for (L, d) matrices and (B, L, d) batches."""
    cases = attention_cases()
    result = check_function("matrix attention", fn, reference_attention, cases)

    def kt(K):
        return np.swapaxes(K, -1, -2)

    mistakes = [
        ("divide the scores by √d_k before the softmax",
         lambda Q, K, V: softmax(Q @ kt(K)) @ V),
        ("the softmax runs along each row (axis=-1): each query's weights sum to 1",
         lambda Q, K, V: softmax(Q @ kt(K) / np.sqrt(Q.shape[-1]), axis=-2) @ V),
        ("return Z = weights @ V, not the weights",
         lambda Q, K, V: softmax(Q @ kt(K) / np.sqrt(Q.shape[-1]))),
    ]
    result = add_hints(result, fn, cases, mistakes)
    # Works on matrices but not on batches: usually K.T, which reverses *all* the axes.
    lines = result.lines
    if not result and not any(line.startswith(("case 1", "case 2")) for line in lines) \
            and any(line.startswith("case 3") for line in lines) \
            and not any(line.startswith("hint") for line in lines):
        lines = lines + ["hint: for a batch, swap only the last two axes of K: "
                         "np.swapaxes(K, -1, -2) (K.T reverses all of them)"]
        result = CheckResult(result.name, False, lines)
    return result


def reference_layer_flops(n, d_model, d_k, d_v):
    projections = 2 * n * d_model * (2 * d_k + d_v)  # X W_q, X W_k (d_k columns), X W_v (d_v)
    return projections + attention_flops(n, n, d_k, d_v)


def check_attention_flops(fn):
    """fn(n, d_model, d_k, d_v) -> FLOPs of the Q, K, V projections plus Q Kᵀ and A V."""
    cases = [(4, 8, 4, 4), (512, 512, 64, 64), (100, 32, 16, 8), (1, 1, 1, 1)]
    result = check_function("attention FLOPs", fn, reference_layer_flops, cases)
    mistakes = [
        ("count a multiply-add as 2 FLOPs (one multiply, one add)",
         lambda n, d_model, d_k, d_v: reference_layer_flops(n, d_model, d_k, d_v) // 2),
        ("count the three projections X W^Q, X W^K, X W^V as well: "
         "2·n·d_model·d_out FLOPs each",
         lambda n, d_model, d_k, d_v: attention_flops(n, n, d_k, d_v)),
        ("the weights times V costs 2·n²·d_v too",
         lambda n, d_model, d_k, d_v: 2 * n * d_model * (2 * d_k + d_v) + 2 * n * n * d_k),
        ("V and the product A V have d_v columns, not d_k",
         lambda n, d_model, d_k, d_v: reference_layer_flops(n, d_model, d_k, d_k)),
    ]
    return add_hints(result, fn, cases, mistakes)

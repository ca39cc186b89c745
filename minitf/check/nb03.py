"""Checkers for the exercises of notebook 03 (multi-head attention).

Each checker compares the learner's function with minitf on a few cases; when the answer
is wrong it also tries the usual mistakes and, if one of them reproduces the learner's
output, says which.
"""

import copy

import numpy as np

from ..multihead import MultiHeadAttention, merge_heads, split_heads
from .core import check_function, describe_difference

__all__ = ["check_merge_heads", "check_multi_head", "check_split_heads"]


def _check_with_hints(name, fn, reference, cases, mistakes, **tolerances):
    """check_function, plus a hint naming a known mistake that gives the learner's output.

    `mistakes` is a list of (wrong_function, hint). The learner's function gets copies of
    the arguments, so changing them in place cannot spoil the reference.
    """
    def on_copies(*args):
        return fn(*copy.deepcopy(args))

    result = check_function(name, on_copies, reference, cases, **tolerances)
    if result.passed or result.lines[0].startswith("not written yet"):
        return result
    for case in cases:
        try:
            got = on_copies(*case)
        except Exception:  # noqa: BLE001 - the report above already names the error
            continue
        if describe_difference(got, reference(*case), **tolerances) is None:
            continue  # right on this case: a mistake that agrees here says nothing
        for wrong, hint in mistakes:
            if describe_difference(got, wrong(*case), **tolerances) is None:
                result.lines.append("hint: " + hint)
                return result
    return result


# --- split_heads / merge_heads --------------------------------------------------------

def _split_without_transpose(x, num_heads):
    B, L, d_model = x.shape
    return x.reshape(B, num_heads, L, d_model // num_heads)


def _split_interleaved(x, num_heads):
    B, L, d_model = x.shape
    return x.reshape(B, L, d_model // num_heads, num_heads).transpose(0, 3, 1, 2)


def _merge_without_transpose(x):
    B, h, L, d_k = x.shape
    return x.reshape(B, L, h * d_k)


def _merge_interleaved(x):
    B, h, L, d_k = x.shape
    return x.transpose(0, 2, 3, 1).reshape(B, L, h * d_k)


_SPLIT_CASES = [(2, 3, 8, 2), (1, 5, 12, 3), (3, 4, 6, 1)]  # (B, L, d_model, num_heads)
_MERGE_CASES = [(2, 2, 3, 4), (1, 3, 5, 4), (3, 1, 4, 6)]  # (B, h, L, d_k)


def check_split_heads(fn):
    """fn(x, num_heads): (B, L, d_model) -> (B, h, L, d_k), head i = columns i*d_k:(i+1)*d_k."""
    rng = np.random.default_rng(3)
    cases = [(rng.normal(size=(B, L, d)), h) for B, L, d, h in _SPLIT_CASES]
    mistakes = [
        (_split_without_transpose,
         "you reshaped straight to (B, h, L, d_k), which cuts the sequence into pieces "
         "instead of the features: reshape to (B, L, h, d_k) first, then swap axes 1 and 2"),
        (_split_interleaved,
         "your heads take every h-th column; in minitf head i is the contiguous block of "
         "columns i*d_k:(i+1)*d_k"),
    ]
    return _check_with_hints("split_heads", fn, split_heads, cases, mistakes)


def check_merge_heads(fn):
    """fn(x): (B, h, L, d_k) -> (B, L, h*d_k), the heads side by side."""
    rng = np.random.default_rng(4)
    cases = [(rng.normal(size=shape),) for shape in _MERGE_CASES]
    mistakes = [
        (_merge_without_transpose,
         "you reshaped (B, h, L, d_k) straight to (B, L, h*d_k), which mixes positions of "
         "different heads: swap axes 1 and 2 first, then reshape"),
        (_merge_interleaved,
         "your output interleaves the heads' columns; head i must fill the contiguous "
         "block of columns i*d_k:(i+1)*d_k"),
    ]
    return _check_with_hints("merge_heads", fn, merge_heads, cases, mistakes)


# --- the multi-head forward pass ------------------------------------------------------

_PARAM_NAMES = ("W_q", "b_q", "W_k", "b_k", "W_v", "b_v", "W_o", "b_o")


def _multi_head(x, params, num_heads, *, scale_by="d_k", use_w_o=True, use_bias=True):
    """The reference forward pass, and (with other flags) the usual wrong versions."""
    B, L, d_model = x.shape
    d_k = d_model // num_heads

    def project(name):
        y = x @ params[f"W_{name}"]
        return y + params[f"b_{name}"] if use_bias else y

    q, k, v = (split_heads(project(n), num_heads) for n in "qkv")  # (B, h, L, d_k)
    scores = q @ k.transpose(0, 1, 3, 2)  # (B, h, L, L)
    if scale_by is not None:
        scores = scores / np.sqrt({"d_k": d_k, "d_model": d_model}[scale_by])
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    concat = merge_heads(weights @ v)  # (B, L, d_model)
    if not use_w_o:
        return concat
    return concat @ params["W_o"] + params["b_o"] if use_bias else concat @ params["W_o"]


def _reference_multi_head(x, params, num_heads):
    mha = MultiHeadAttention(x.shape[-1], num_heads, dtype=np.float64, rng=0)
    mha.load_state_dict(params)
    return mha(x)


def _random_params(rng, d_model):
    params = {}
    for name in _PARAM_NAMES:
        shape = (d_model, d_model) if name.startswith("W") else (d_model,)
        params[name] = rng.normal(0.0, d_model ** -0.5, size=shape)
    return params


def check_multi_head(fn):
    """fn(x, params, num_heads): multi-head self-attention of x (B, L, d_model).

    `params` is a dict with the keys of MultiHeadAttention.params (W_q, b_q, ..., W_o, b_o).
    """
    rng = np.random.default_rng(5)
    cases = []
    for B, L, d_model, h in [(1, 4, 8, 2), (2, 5, 12, 3), (2, 3, 8, 1)]:
        cases.append((rng.normal(size=(B, L, d_model)), _random_params(rng, d_model), h))
    mistakes = [
        (lambda x, p, h: _multi_head(x, p, h, scale_by="d_model"),
         "the scores are divided by √d_model; each head works in d_k = d_model / h "
         "dimensions, so divide by √d_k"),
        (lambda x, p, h: _multi_head(x, p, h, scale_by=None),
         "the scores are not divided by √d_k"),
        (lambda x, p, h: _multi_head(x, p, h, use_w_o=False),
         "the concatenated heads are returned without the output projection W_o (and b_o)"),
        (lambda x, p, h: _multi_head(x, p, h, use_bias=False),
         "the biases b_q, b_k, b_v, b_o are left out"),
    ]
    return _check_with_hints("multi_head", fn, _reference_multi_head, cases, mistakes)

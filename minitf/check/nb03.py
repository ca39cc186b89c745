"""Exercises of notebook 03, multi-head attention: split_heads, merge_heads and the forward
pass (cases, references, known mistakes)."""

import numpy as np

from ..multihead import MultiHeadAttention, merge_heads, split_heads
from .core import Case, Exercise, Mistake
from .shared import STRAIGHT_SPLIT_HINT, split_heads_straight

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


def _heads(h):
    return f"{h} head{'s' if h != 1 else ''}"


def _split_cases():
    rng = np.random.default_rng(3)
    return [Case((rng.normal(size=(B, L, d)), h), f"{_heads(h)} of d_k = {d // h}")
            for B, L, d, h in [(2, 3, 8, 2), (1, 5, 12, 3), (3, 4, 6, 1)]]


def _merge_cases():
    rng = np.random.default_rng(4)
    return [Case((rng.normal(size=shape),), _heads(shape[1]))
            for shape in [(2, 2, 3, 4), (1, 3, 5, 4), (3, 1, 4, 6)]]


SPLIT_HEADS = Exercise(
    name="split_heads", checker="check_split_heads", args=("x", "num_heads"),
    task="(B, h, L, d_k), head i = columns i*d_k:(i+1)*d_k of x (B, L, d_model)",
    cases=_split_cases, reference=split_heads,
    mistakes=(
        Mistake(STRAIGHT_SPLIT_HINT, split_heads_straight),
        Mistake("your heads take every h-th column; in minitf head i is the contiguous block "
                "of columns i*d_k:(i+1)*d_k", _split_interleaved),
    ))

MERGE_HEADS = Exercise(
    name="merge_heads", checker="check_merge_heads", args=("x",),
    task="(B, L, h*d_k), the heads of x (B, h, L, d_k) side by side",
    cases=_merge_cases, reference=merge_heads,
    mistakes=(
        Mistake("you reshaped (B, h, L, d_k) straight to (B, L, h*d_k), which mixes "
                "positions of different heads: swap axes 1 and 2 first, then reshape",
                _merge_without_transpose),
        Mistake("your output interleaves the heads' columns; head i must fill the contiguous "
                "block of columns i*d_k:(i+1)*d_k", _merge_interleaved),
        Mistake("you joined the heads along the positions (axis 1), which stacks them one "
                "under the other; put them side by side along the features (axis=-1)",
                _merge_along_positions),
    ))


# --- the multi-head forward pass ------------------------------------------------------

_PARAM_NAMES = ("W_q", "b_q", "W_k", "b_k", "W_v", "b_v", "W_o", "b_o")


def _multi_head(x, params, num_heads, *, scale_by="d_k", use_w_o=True, use_bias=True,
                b_o_per_head=False, use_b_o=True):
    """The forward pass, and (with other flags) the usual wrong versions."""
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
    if b_o_per_head:  # head by head, b_o added to every head's term
        return concat @ params["W_o"] + num_heads * params["b_o"]
    return concat @ params["W_o"] + params["b_o"] if use_bias and use_b_o else \
        concat @ params["W_o"]


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
                          f"d_model = {d_model}, {_heads(h)}"))
    return cases


MULTI_HEAD = Exercise(
    name="multi_head", checker="check_multi_head", args=("x", "params", "num_heads"),
    task="multi-head self-attention of x (B, L, d_model), as MultiHeadAttention",
    cases=_multi_head_cases, reference=_reference_multi_head,
    mistakes=(
        Mistake("the scores are divided by √d_model; each head works in d_k = d_model / h "
                "dimensions, so divide by √d_k",
                lambda x, p, h: _multi_head(x, p, h, scale_by="d_model")),
        Mistake("the scores are not divided by √d_k",
                lambda x, p, h: _multi_head(x, p, h, scale_by=None)),
        Mistake("the concatenated heads are returned without the output projection W_o "
                "(and b_o)", lambda x, p, h: _multi_head(x, p, h, use_w_o=False)),
        Mistake("the biases b_q, b_k, b_v, b_o are left out",
                lambda x, p, h: _multi_head(x, p, h, use_bias=False)),
        Mistake("you added b_o once per head; add it once, after the heads' terms are "
                "summed (it belongs to the output projection)",
                lambda x, p, h: _multi_head(x, p, h, b_o_per_head=True)),
        Mistake("b_o is missing: the output projection is concat @ W_o + b_o",
                lambda x, p, h: _multi_head(x, p, h, use_b_o=False)),
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

"""Checkers for the exercises of notebook 10: minitf's W_q, W_k, W_v out of torch's stacked
in_proj_weight, and the masks in torch's convention (True = may NOT attend).

The learner's answers may be numpy arrays or torch tensors. The in_proj reference comes from
minitf.pytorch's parameter map, imported only when the checker runs, so that importing
minitf.check never imports torch.
"""

import numpy as np

from ..attention import causal_mask, padding_mask
from ..tasks import PAD_ID
from .nb06 import diagnose, run_cases

__all__ = ["check_split_in_proj", "check_torch_masks"]


def _array(x):
    """numpy or torch -> numpy (a torch tensor that needs grad is detached first)."""
    detach = getattr(x, "detach", None)
    return np.asarray(detach() if detach else x)


# ------------------------------------------------------------------ in_proj_weight

def split_in_proj(in_proj_weight):
    """torch's (3d, d) in_proj_weight -> minitf's (W_q, W_k, W_v), each (d, d), by the map
    from_torch uses."""
    from ..pytorch import minitf_arrays, torch_name  # imports torch

    names = [(f"attn.W_{x}", *torch_name(f"attn.W_{x}")) for x in "qkv"]
    d = in_proj_weight.shape[1]
    split = minitf_arrays({"attn.in_proj_weight": in_proj_weight}, d, names)
    return split["attn.W_q"], split["attn.W_k"], split["attn.W_v"]


def _judge_split_in_proj(got, in_proj_weight):
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return (f"returned a {type(got).__name__}; return the three matrices "
                "(W_q, W_k, W_v)")
    got = [_array(g) for g in got]
    expected = split_in_proj(in_proj_weight)
    d = in_proj_weight.shape[1]
    blocks = [in_proj_weight[i * d:(i + 1) * d] for i in range(3)]  # as torch keeps them
    for i, name in enumerate(("W_q", "W_k", "W_v")):
        problem = diagnose(got[i], expected[i], [
            (blocks[i], "not transposed: torch's rows are minitf's columns (it computes "
                        "x Wᵀ, minitf x W) — take the block's .T"),
            *[(blocks[j].T, f"this is the block of {other}: torch's order is queries "
                            "(rows 0:d), keys (d:2d), values (2d:3d)")
              for j, other in enumerate(("W_q", "W_k", "W_v")) if j != i],
        ])
        if problem:
            return f"{name}: {problem}"
    return None


def _split_in_proj_cases():
    rng = np.random.default_rng(100)
    return [(np.round(rng.standard_normal((3 * d, d)), 2),) for d in (2, 4)]


def check_split_in_proj(fn):
    """fn(in_proj_weight (3d, d), as torch keeps an attention layer's input projections)
    -> (W_q, W_k, W_v), each (d, d) as minitf keeps them (y = x W)."""
    return run_cases("split_in_proj", fn, _split_in_proj_cases(), _judge_split_in_proj)


# ------------------------------------------------------------------ masks

def torch_masks(src, tgt_in):
    """(tgt_mask (L_t, L_t), src_key_padding_mask (B, L_s), tgt_key_padding_mask (B, L_t)),
    bool, True where a query may NOT look: minitf's masks, negated and in torch's shapes."""
    return (~causal_mask(tgt_in.shape[1]), ~padding_mask(src, PAD_ID)[:, 0, 0],
            ~padding_mask(tgt_in, PAD_ID)[:, 0, 0])


def _judge_one_mask(got, expected, minitf_form):
    got = _array(got)
    if got.dtype != bool and got.shape == expected.shape and np.array_equal(got, expected):
        return f"right pattern but dtype {got.dtype}; torch wants a bool mask"
    if got.shape == minitf_form.shape and got.shape != expected.shape:
        return f"shape {got.shape} is minitf's broadcastable form; torch wants {expected.shape}"
    L = expected.shape[-1]
    mistakes = [(~expected, "True and False are swapped — torch's True means 'may NOT "
                            "look' (minitf's means 'may look')")]
    if expected.shape == (L, L):
        mistakes += [
            (np.triu(np.ones((L, L), dtype=bool)),
             "the diagonal is blocked too — a token may look at itself: np.triu(…, k=1)"),
            (np.tril(np.ones((L, L), dtype=bool), k=-1),
             "this blocks the past, not the future: np.triu(…, k=1)"),
        ]
    return diagnose(got, expected, mistakes)


def _judge_torch_masks(got, src, tgt_in):
    if not isinstance(got, tuple) or len(got) != 3:
        return (f"returned a {type(got).__name__}; return the triple (tgt_mask, "
                "src_key_padding_mask, tgt_key_padding_mask)")
    expected = torch_masks(src, tgt_in)
    minitf_forms = (causal_mask(tgt_in.shape[1]), padding_mask(src, PAD_ID),
                    padding_mask(tgt_in, PAD_ID))
    names = ("tgt_mask", "src_key_padding_mask", "tgt_key_padding_mask")
    for g, e, name, form in zip(got, expected, names, minitf_forms):
        problem = _judge_one_mask(g, e, form)
        if problem:
            return f"{name}: {problem}"
    return None


def _torch_masks_cases():
    return [
        (np.array([[5, 6, 2, 0], [7, 2, 0, 0]]), np.array([[1, 9, 4], [1, 8, 0]])),
        (np.array([[4, 4, 4, 2]]), np.array([[1, 5, 6, 7, 8]])),  # no padding
    ]


def check_torch_masks(fn):
    """fn(src (B, L_s), tgt_in (B, L_t) ids) -> (tgt_mask (L_t, L_t), src_key_padding_mask
    (B, L_s), tgt_key_padding_mask (B, L_t)): the masks minitf's model uses, in torch's
    convention (bool, True = may NOT attend)."""
    return run_cases("torch_masks", fn, _torch_masks_cases(), _judge_torch_masks)

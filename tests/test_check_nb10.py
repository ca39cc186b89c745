"""The checkers of notebook 10 pass right answers (numpy or torch), name the usual mistakes,
and never raise.

Needs torch: tests/conftest.py leaves this file out when torch is not installed.
"""

import numpy as np
import pytest
import torch

from minitf.attention import causal_mask, padding_mask
from minitf.check import check_split_in_proj, check_torch_masks
from minitf.check.nb10 import split_in_proj
from minitf.model import Transformer
from minitf.pytorch import to_torch


def not_written(*args):
    raise NotImplementedError  # your code here


@pytest.mark.parametrize("checker", [check_split_in_proj, check_torch_masks])
def test_not_written_and_crash(checker):
    result = checker(not_written)
    assert not result and "not written yet" in str(result)

    def crash(*args):
        raise KeyError("oops")

    result = checker(crash)
    assert not result and "raised KeyError" in str(result)


# ------------------------------------------------------------------ in_proj

def right_split(w):
    d = w.shape[1]
    return w[:d].T, w[d:2 * d].T, w[2 * d:].T


def test_split_in_proj_right_answers_pass():
    assert check_split_in_proj(right_split)
    assert check_split_in_proj(lambda w: [b.T for b in np.split(w, 3)])
    assert check_split_in_proj(lambda w: tuple(torch.from_numpy(w).T.chunk(3, dim=1)))


def test_split_in_proj_undoes_what_torch_holds():
    """The reference is the map from_torch uses: it gives back an attention layer's W's."""
    model = Transformer(5, 5, d_model=4, num_heads=2, num_layers=1, d_ff=8, dtype=np.float64)
    attn = model.encoder.layers[0].self_attn
    held = to_torch(model).encoder.layers[0].self_attn.in_proj_weight.detach().numpy()
    for got, want in zip(split_in_proj(held), (attn.W_q, attn.W_k, attn.W_v)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("wrong, hint", [
    (lambda w: np.split(w, 3), "not transposed"),
    (lambda w: [b.T for b in np.split(w, 3)][::-1], "W_q: "),
    (lambda w: [b.T for b in np.split(w, 3)][::-1], "this is the block of W_v"),
    (lambda w: [right_split(w)[i] for i in (0, 2, 1)], "W_k: "),
    (lambda w: np.stack(right_split(w)), "returned a ndarray; return the three matrices"),
    (lambda w: right_split(w)[:2], "return the three matrices"),
])
def test_split_in_proj_mistakes_are_named(wrong, hint):
    result = check_split_in_proj(wrong)
    assert not result and hint in str(result)


# ------------------------------------------------------------------ masks

def right_masks(src, tgt_in):
    L = tgt_in.shape[1]
    return np.triu(np.ones((L, L), dtype=bool), k=1), src == 0, tgt_in == 0


def test_masks_right_answers_pass():
    assert check_torch_masks(right_masks)
    assert check_torch_masks(lambda s, t: tuple(torch.from_numpy(m) for m in right_masks(s, t)))


def replace(i, value):
    """right_masks with its i-th mask replaced by value(src, tgt_in)."""
    def fn(src, tgt_in):
        masks = list(right_masks(src, tgt_in))
        masks[i] = value(src, tgt_in)
        return tuple(masks)
    return fn


@pytest.mark.parametrize("wrong, hint", [
    (replace(0, lambda s, t: causal_mask(t.shape[1])), "tgt_mask: "),
    (replace(0, lambda s, t: causal_mask(t.shape[1])), "True and False are swapped"),
    (replace(0, lambda s, t: np.triu(np.ones((t.shape[1],) * 2, dtype=bool))),
     "the diagonal is blocked too"),
    (replace(0, lambda s, t: np.tril(np.ones((t.shape[1],) * 2, dtype=bool), k=-1)),
     "blocks the past"),
    (replace(0, lambda s, t: np.triu(np.ones((t.shape[1],) * 2), k=1)), "dtype float64"),
    (replace(1, lambda s, t: s != 0), "src_key_padding_mask: "),
    (replace(1, lambda s, t: s != 0), "True and False are swapped"),
    (replace(2, lambda s, t: ~padding_mask(t)), "tgt_key_padding_mask: shape (2, 1, 1, 3)"),
    (lambda s, t: right_masks(s, t)[:2], "return the triple"),
])
def test_mask_mistakes_are_named(wrong, hint):
    result = check_torch_masks(wrong)
    assert not result and hint in str(result)

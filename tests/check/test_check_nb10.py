"""The checkers of notebook 10 (minitf.check.nb10): the notebook's solutions and other right
answers (numpy or torch) pass, each known mistake gets its own hint and no other, and
nothing is raised.

Needs torch: tests/conftest.py leaves this file out when torch is not installed.
"""

from pathlib import Path

import numpy as np
import pytest
import torch
from check_solutions import notebook_solutions

from minitf.check.core import NOT_WRITTEN
from minitf.check.messages import pick
from minitf.check.nb10 import EXERCISES, check_split_in_proj, check_torch_masks, split_in_proj
from minitf.model import Transformer
from minitf.pytorch import to_torch

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "10_to_pytorch.ipynb"
CHECKERS = {"check_split_in_proj": check_split_in_proj, "check_torch_masks": check_torch_masks}


def test_the_notebook_calls_these_checkers_and_its_solutions_pass():
    solutions = notebook_solutions(set(CHECKERS), [NOTEBOOK])
    assert set(solutions) == set(CHECKERS) == {e.checker for e in EXERCISES}
    for name, fn in solutions.items():
        assert CHECKERS[name](fn), name


def right_split(w):
    d = w.shape[1]
    return w[:d].T, w[d:2 * d].T, w[2 * d:].T


def right_masks(src, tgt_in):
    L = tgt_in.shape[1]
    return np.triu(np.ones((L, L), dtype=bool), k=1), src == 0, tgt_in == 0


def test_right_answers_written_other_ways_pass():
    assert check_split_in_proj(right_split)
    assert check_split_in_proj(lambda w: [b.T for b in np.split(w, 3)])
    assert check_split_in_proj(lambda w: torch.from_numpy(w).T.chunk(3, dim=1))
    assert check_torch_masks(right_masks)
    assert check_torch_masks(lambda s, t: tuple(torch.from_numpy(m) for m in right_masks(s, t)))


def test_split_in_proj_undoes_what_torch_holds():
    """The reference is the map from_torch uses: it gives back an attention layer's W's."""
    model = Transformer(5, 5, d_model=4, num_heads=2, num_layers=1, d_ff=8, dtype=np.float64)
    attn = model.encoder.layers[0].self_attn
    held = to_torch(model).encoder.layers[0].self_attn.in_proj_weight.detach().numpy()
    for got, want in zip(split_in_proj(held), (attn.W_q, attn.W_k, attn.W_v)):
        np.testing.assert_array_equal(got, want)


MISTAKES = [(e, i) for e in EXERCISES for i in range(len(e.mistakes))]


@pytest.mark.parametrize("exercise, index", MISTAKES,
                         ids=[f"{e.name}-{i}" for e, i in MISTAKES])
def test_each_mistake_gets_its_own_hint_and_no_other(exercise, index):
    mistake = exercise.mistakes[index]
    result = exercise.check(mistake.fn)
    assert not result
    assert result.hints == [pick(mistake.hint)]


@pytest.mark.parametrize("wrong, hint", [
    (lambda w: np.split(w, 3), "not transposed"),
    (lambda s, t: (np.triu(np.ones((t.shape[1],) * 2), k=1), s == 0, t == 0), None),
])
def test_learner_written_mistakes(wrong, hint):
    checker = check_split_in_proj if wrong.__code__.co_argcount == 1 else check_torch_masks
    result = checker(wrong)
    assert not result
    assert len(result.hints) == (1 if hint else 0)
    assert hint is None or result.hints[0].startswith(hint)
    if hint is None:  # a float mask: no known mistake, but the report says what is wrong
        assert "dtype float64, expected bool" in str(result)


def test_torchs_own_float_mask_gets_a_hint():
    """generate_square_subsequent_mask's -inf/0 float mask works in torch, but the exercise
    asks for the boolean form; the hint says both (review 10-8)."""
    def float_mask(src, tgt_in):
        L = tgt_in.shape[1]
        return (torch.nn.Transformer.generate_square_subsequent_mask(L),
                torch.from_numpy(src == 0), torch.from_numpy(tgt_in == 0))

    result = check_torch_masks(float_mask)
    assert not result and len(result.hints) == 1, str(result)
    assert "torch's float mask" in result.hints[0] and "boolean form" in result.hints[0]
    assert "dtype float32, expected bool" in str(result)


@pytest.mark.parametrize("checker", list(CHECKERS.values()))
def test_not_written_crashing_and_not_callable(checker):
    def not_written(*args):
        raise NotImplementedError  # your code here

    assert str(checker(not_written)).endswith(NOT_WRITTEN)

    def crash(*args):
        raise KeyError("oops")

    result = checker(crash)
    assert not result and "raised KeyError" in str(result)
    assert "needs your function itself" in str(checker(np.ones(3)))
    assert not checker(lambda *args: None)

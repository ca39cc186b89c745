"""The checkers of notebook 10 (minitf.check.nb10): the notebook's solutions and other right
answers (numpy or torch) pass, each known mistake gets its own hint and no other, and
nothing is raised.

Needs torch: tests/conftest.py leaves this file out when torch is not installed.
"""

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from check_solutions import notebook_solutions

from minitf import tasks
from minitf.check.core import NOT_WRITTEN
from minitf.check.messages import pick
from minitf.check.nb10 import (
    EXERCISES,
    TRAIN_STEP,
    check_split_in_proj,
    check_torch_masks,
    check_train_step,
    split_in_proj,
)
from minitf.model import Transformer
from minitf.pytorch import to_torch
from minitf.translator import load_translator

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "10_to_pytorch.ipynb"
CHECKERS = {"check_split_in_proj": check_split_in_proj, "check_torch_masks": check_torch_masks,
            "check_train_step": check_train_step}


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


# ------------------------------------------------------------------ the training step

def moved(batch, device):
    return [t.to(device) for t in batch]


def step_transposed(model, batch, optimizer, device):
    """The classes on axis 1 by a transpose instead of a flatten; model.zero_grad."""
    src, tgt_in, tgt_out = moved(batch, device)
    logits = model(src, tgt_in)  # (B, L, V)
    loss = F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=0, label_smoothing=0.1)
    model.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    return float(loss)


def step_zeroed_after(model, batch, optimizer, device):
    """nanoGPT's order: the gradients are cleared after the step, ready for the next one; the
    padding set to -100 in place, the loss module's default ignore_index; non_blocking."""
    src, tgt_in, tgt_out = (t.to(device, non_blocking=True) for t in batch)
    tgt_out[tgt_out == 0] = -100
    logits = model(src, tgt_in)
    loss = torch.nn.CrossEntropyLoss(label_smoothing=0.1)(
        logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def step_by_hand(model, batch, optimizer, device):
    """The model moved too, the ids by torch.as_tensor(device=...), the targets moved after the
    forward, the clipping written out, model.train() and autocast off on a CPU."""
    model.to(device).train()
    src, tgt_in = (torch.as_tensor(t, device=device) for t in batch[:2])
    with torch.autocast(device_type=device.type, enabled=device.type == "cuda"):
        logits = model(src, tgt_in)
    targets = batch[2].flatten().to(device)
    loss = F.cross_entropy(logits.flatten(0, 1), targets, ignore_index=0, label_smoothing=0.1)
    optimizer.zero_grad()
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
    if norm > 1.0:
        for g in grads:
            g.mul_(1.0 / (norm + 1e-6))
    optimizer.step()
    return loss.detach().cpu().item()


@pytest.mark.parametrize("right", [step_transposed, step_zeroed_after, step_by_hand])
def test_training_steps_written_other_ways_pass(right):
    result = check_train_step(right)
    assert result, str(result)


def test_the_reference_is_the_step_written_out():
    """minitf.pytorch.train_step, the reference, is the six lines of notebook 08 in torch: the
    same loss and weights as a step spelled out, on the translator itself."""
    from minitf.pytorch import train_step

    model, _ = load_translator()
    a, b = to_torch(model), to_torch(model)
    batch = tuple(torch.from_numpy(x) for x in tasks.make_batch([5, 1234]))
    opt_a = torch.optim.Adam(a.parameters(), lr=1e-3)
    opt_b = torch.optim.Adam(b.parameters(), lr=1e-3)
    loss_a = train_step(a, batch, opt_a, torch.device("cpu"))
    logits = b(*batch[:2])
    loss_b = F.cross_entropy(logits.flatten(0, 1), batch[2].flatten(), ignore_index=0,
                             label_smoothing=0.1)
    opt_b.zero_grad()
    loss_b.backward()
    torch.nn.utils.clip_grad_norm_(b.parameters(), 1.0)
    opt_b.step()
    assert isinstance(loss_a, float) and loss_a == loss_b.item()
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(p, q), name
    assert not torch.equal(a.generator.bias, to_torch(model).generator.bias)  # it moved


def test_the_step_checker_sees_which_tensors_were_sent_to_the_device():
    """On a CPU a move changes nothing, so the checker records the calls: each batch tensor
    left behind is named, and one that is sent along only after a reshape counts."""
    def sends(*names):
        def step(model, batch, optimizer, device):
            parts = [t.to(device) if n in names else t
                     for n, t in zip(("src", "tgt_in", "tgt_out"), batch)]
            return _right_step(model, parts, optimizer)
        return step

    result = check_train_step(sends("src", "tgt_out"))
    assert not result and result.hints == [], str(result)  # no known mistake leaves tgt_in
    assert "tgt_in was not sent to `device`" in str(result)
    assert check_train_step(sends("src", "tgt_in", "tgt_out"))

    def after_a_reshape(model, batch, optimizer, device):
        src, tgt_in, tgt_out = batch
        return _right_step(model, (src.to(device), tgt_in.to(device),
                                   tgt_out.flatten().to(device)), optimizer)

    assert check_train_step(after_a_reshape)


def _right_step(model, batch, optimizer, returned=lambda loss: loss.item()):
    """A right step on a batch already where it should be; `returned(loss)` is returned."""
    src, tgt_in, tgt_out = batch
    loss = F.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt_out.flatten(),
                           ignore_index=0, label_smoothing=0.1)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return returned(loss)


def hostile_loop(model, batch, optimizer, device):
    while True:
        pass


def hostile_meta(model, batch, optimizer, device):
    model.to("meta")
    return 1.0


def hostile_new_layer(model, batch, optimizer, device):
    loss = _right_step(model, moved(batch, device), optimizer)
    model.extra = torch.nn.Linear(8, 17, dtype=torch.float64)  # after a right step
    return loss


def hostile_no_grad_for_good(model, batch, optimizer, device):
    torch.set_grad_enabled(False)
    return 2.5


def hostile_exit(model, batch, optimizer, device):
    raise SystemExit(3)


@pytest.mark.parametrize("hostile, says", [
    (lambda model, batch, optimizer, device: None, "returned None"),
    (lambda model, batch, optimizer, device: "2.85", "the string"),
    (lambda model, batch, optimizer, device: {"loss": 2.85}, "a dict"),
    (lambda model, batch, optimizer, device: float("nan"), "got nan"),
    (hostile_meta, "step 1's loss"),
    (hostile_new_layer, "not the ones it had"),
    (hostile_no_grad_for_good, "step 1's loss"),
    (hostile_exit, "raised SystemExit"),
])
def test_hostile_training_steps_are_reported_never_raised(hostile, says):
    result = check_train_step(hostile)
    assert not result and says in str(result), str(result)
    assert torch.is_grad_enabled()  # the checker restored it
    assert check_train_step(TRAIN_STEP.reference)  # and nothing it did leaks into the next


def test_a_step_that_never_ends_is_stopped(monkeypatch):
    monkeypatch.setattr(TRAIN_STEP, "time_limit", 0.5)
    result = check_train_step(hostile_loop)
    assert not result and "was stopped" in str(result)


def forgot_zero_grad(model, batch, optimizer, device):
    src, tgt_in, tgt_out = (t.to(device) for t in batch)
    logits = model(src, tgt_in)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), tgt_out.view(-1), ignore_index=0,
                           label_smoothing=0.1)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


def stepped_before_backward(model, batch, optimizer, device):
    src, tgt_in, tgt_out = (t.to(device) for t in batch)
    loss = F.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt_out.flatten(), ignore_index=0,
                           label_smoothing=0.1)
    optimizer.zero_grad()
    optimizer.step()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    return loss.item()


def padding_counted(model, batch, optimizer, device):
    src, tgt_in, tgt_out = (t.to(device) for t in batch)
    logits = model(src, tgt_in)
    loss = torch.nn.CrossEntropyLoss(label_smoothing=0.1)(logits.flatten(0, 1), tgt_out.flatten())
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


def never_moved(model, batch, optimizer, device):
    return _right_step(model, batch, optimizer)


def returns_the_tensor(model, batch, optimizer, device):
    return _right_step(model, moved(batch, device), optimizer, returned=lambda loss: loss.detach())


def sends_to_cuda(model, batch, optimizer, device):
    return _right_step(model, [t.cuda() for t in batch], optimizer)


@pytest.mark.parametrize("wrong, hint", [
    (forgot_zero_grad, "the gradients piled up"),
    (stepped_before_backward, "the weights never moved"),
    (padding_counted, "the padding was counted"),
    (never_moved, "the batch stayed where it was"),
    (returns_the_tensor, "it returned the loss tensor"),
    (sends_to_cuda, ".cuda() sends a tensor"),
])
def test_training_step_mistakes_written_as_a_learner_would(wrong, hint):
    result = check_train_step(wrong)
    assert not result and len(result.hints) == 1, str(result)
    assert result.hints[0].startswith(hint), str(result)

"""Exercises of notebook 08: cross-entropy with padding, the softmax backward pass, one Adam
step and the warm-up schedule (cases, references, known mistakes)."""

import numpy as np

from ..attention import log_softmax, softmax
from ..train import cross_entropy, warmup_schedule
from .core import Case, Exercise, Mistake

__all__ = ["check_cross_entropy", "check_softmax_backward", "check_adam_step",
           "check_warmup"]


# ---------------------------------------------------------------- cross-entropy

def _token_losses(logits, targets):
    """−log softmax(logits)[target] at every position, padding included."""
    log_probs = log_softmax(logits)
    return -np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]


def _cross_entropy_cases():
    rng = np.random.default_rng(80)
    targets = np.array([[5, 7, 2, 0], [4, 2, 0, 0]])  # 0 = <pad> after <eos> = 2
    return [
        Case((rng.standard_normal((2, 4, 9)), targets, 0), "(B, L, V) with padding"),
        Case((800 + 10 * rng.standard_normal((3, 6)), np.array([1, 0, 5]), 0),
             "logits around 800, (N, V)"),
        Case((rng.standard_normal((2, 3, 5)), np.array([[1, 2, 3], [4, 0, 1]]), -1),
             "ignore_index -1: no padding, and 0 is a real target"),
    ]


def _kept(logits, targets, ignore_index):
    return _token_losses(logits, targets)[targets != ignore_index]


CROSS_ENTROPY = Exercise(
    name="cross_entropy", checker="check_cross_entropy",
    args=("logits", "targets", "ignore_index"),
    task="one number: the mean of −log softmax(logits)[target] over the targets that are "
         "not ignore_index",
    cases=_cross_entropy_cases,
    reference=lambda logits, targets, ignore_index: cross_entropy(
        logits, targets, ignore_index=ignore_index)[0],
    mistakes=(
        Mistake("padding was counted: leave out the positions whose target is ignore_index, "
                "and divide by the number of the others",
                lambda z, y, i: _token_losses(z, y).mean()),
        Mistake("the padded positions are still in the sum: add up only the losses where "
                "targets != ignore_index",
                lambda z, y, i: _token_losses(z, y).sum() / max(int((y != i).sum()), 1)),
        Mistake("that is the sum; the loss is the mean over the targets that are not padding",
                lambda z, y, i: _kept(z, y, i).sum()),
        Mistake("the sign is wrong: the loss is −log p, a positive number",
                lambda z, y, i: -_kept(z, y, i).mean()),
        Mistake("0 was left out, not ignore_index: use the argument",
                lambda z, y, i: _kept(z, y, 0).mean()),
        Mistake("np.exp overflowed on large logits: subtract each row's maximum before "
                "np.exp (the softmax does not change)",
                lambda z, y, i: -np.log(np.take_along_axis(
                    np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True), y[..., None],
                    axis=-1)[..., 0][y != i]).mean()),
    ))


# ------------------------------------------------------------- softmax backward

def _softmax_backward(alpha, d_alpha):
    """ds = α ⊙ (dα − Σ_j dα_j α_j) along the last axis."""
    return alpha * (d_alpha - np.sum(d_alpha * alpha, axis=-1, keepdims=True))


def _softmax_backward_cases():
    rng = np.random.default_rng(81)
    masked = np.where(np.tril(np.ones((4, 4), dtype=bool)),
                      rng.standard_normal((2, 2, 4, 4)), -np.inf)
    return [
        Case((softmax(rng.standard_normal(5)), rng.standard_normal(5)), "one row"),
        Case((softmax(rng.standard_normal((3, 4))), rng.standard_normal((3, 4))),
             "(L_q, L_k)"),
        Case((softmax(masked), rng.standard_normal((2, 2, 4, 4))),
             "(B, h, L, L) with causal zeros"),
    ]


SOFTMAX_BACKWARD = Exercise(
    name="softmax_backward", checker="check_softmax_backward", args=("alpha", "d_alpha"),
    task="ds = ∂L/∂s for alpha = softmax(s) along the last axis, every row at once",
    cases=_softmax_backward_cases, reference=_softmax_backward,
    mistakes=(
        Mistake("only the diagonal part diag(α) dα: subtract α · (αᵀ dα), the part from −ααᵀ "
                "(every α_j depends on every score)", lambda a, d: a * d),
        Mistake("the leading α ⊙ is missing: ds = α ⊙ (dα − Σ_j dα_j α_j)",
                lambda a, d: d - np.sum(d * a, axis=-1, keepdims=True)),
        Mistake("summed over the wrong axis: the sum runs over the last axis, the keys of one "
                "row (axis=-1, keepdims=True)",
                lambda a, d: a * (d - np.sum(d * a, axis=0, keepdims=True))),
        Mistake("summed over the whole array: each row (each query) has its own "
                "Σ_j dα_j α_j (axis=-1, keepdims=True)",
                lambda a, d: a * (d - np.sum(d * a))),
        Mistake("the sum is Σ_j dα_j α_j, weighted by α, not the plain sum of dα",
                lambda a, d: a * (d - np.sum(d, axis=-1, keepdims=True))),
    ))


# -------------------------------------------------------------------- Adam step

def _adam_step(param, grad, m, v, t, lr, beta1, beta2, eps, *, correct_m=True, correct_v=True,
               m_rule="ema", v_rule="ema", sqrt=True, sign=-1.0):
    """One Adam update -> (param, m, v), new arrays; the flags make the usual mistakes."""
    m = {"ema": beta1 * m + (1 - beta1) * grad, "no 1-b": beta1 * m + grad,
         "swapped": (1 - beta1) * m + beta1 * grad}[m_rule]
    v = {"ema": beta2 * v + (1 - beta2) * grad ** 2, "not squared": beta2 * v + (1 - beta2) * grad,
         "swapped": (1 - beta2) * v + beta2 * grad ** 2}[v_rule]
    m_hat = m / (1 - beta1 ** t) if correct_m else m
    v_hat = v / (1 - beta2 ** t) if correct_v else v
    root = np.sqrt(v_hat) if sqrt else v_hat
    return param + sign * lr * m_hat / (root + eps), m, v


def _adam_cases():
    rng = np.random.default_rng(82)
    first = (rng.standard_normal(4), rng.standard_normal(4), np.zeros(4), np.zeros(4),
             1, 0.01, 0.9, 0.98, 1e-9)
    m, v = 0.1 * rng.standard_normal((2, 3)), 0.05 * rng.random((2, 3))
    third = (rng.standard_normal((2, 3)), rng.standard_normal((2, 3)), m, v,
             3, 0.001, 0.9, 0.999, 1e-8)
    m, v = 0.2 * rng.standard_normal(5), 0.1 * rng.random(5)
    late = (rng.standard_normal(5), 0.5 * rng.standard_normal(5), m, v,
            40, 0.05, 0.8, 0.9, 1e-6)
    return [Case(first, "the very first step: m = v = 0, t = 1"), Case(third, "step 3"),
            Case(late, "step 40")]


def _adam_variant(**flags):
    return lambda *args: _adam_step(*args, **flags)


ADAM_STEP = Exercise(
    name="adam_step", checker="check_adam_step",
    args=("param", "grad", "m", "v", "t", "lr", "beta1", "beta2", "eps"),
    task="(new_param, new_m, new_v) after one Adam step with bias correction (t counts from 1)",
    cases=_adam_cases, reference=_adam_step, labels=("param", "m", "v"),
    mistakes=(
        Mistake("m ← β₁ m + (1 − β₁) g: the (1 − β₁) is missing", _adam_variant(m_rule="no 1-b")),
        Mistake("β₁ and 1 − β₁ are swapped: m ← β₁ m + (1 − β₁) g",
                _adam_variant(m_rule="swapped")),
        Mistake("v is the average of the squared gradient g²",
                _adam_variant(v_rule="not squared")),
        Mistake("β₂ and 1 − β₂ are swapped: v ← β₂ v + (1 − β₂) g²",
                _adam_variant(v_rule="swapped")),
        Mistake("no bias correction: divide m by 1 − β₁ᵗ and v by 1 − β₂ᵗ (both start at 0, "
                "so early averages are too small)",
                _adam_variant(correct_m=False, correct_v=False)),
        Mistake("only m was bias-corrected: v̂ = v / (1 − β₂ᵗ) too",
                _adam_variant(correct_v=False)),
        Mistake("only v was bias-corrected: m̂ = m / (1 − β₁ᵗ) too",
                _adam_variant(correct_m=False)),
        Mistake("the square root of v̂ is missing", _adam_variant(sqrt=False)),
        Mistake("the step goes uphill: subtract lr · m̂ / (√v̂ + ε)", _adam_variant(sign=1.0)),
    ))


# ---------------------------------------------------------------- warm-up schedule

def _lr(step, d_model, warmup, scale, *, rise_power=-1.5, combine=min, model_power=-0.5):
    decay, rise = step ** -0.5, step * warmup ** rise_power
    return scale * d_model ** model_power * combine(decay, rise)


def _warmup_cases():
    def where(step, warmup):
        side = "before" if step < warmup else "after" if step > warmup else "at"
        return f"step {step}, {side} the peak at step {warmup}"

    return [Case(c, where(c[0], c[2])) for c in [
        (1, 512, 4000, 1.0), (4000, 512, 4000, 1.0), (20000, 512, 4000, 1.0),
        (30, 64, 100, 0.25), (400, 64, 100, 0.25)]]


WARMUP = Exercise(
    name="warmup", checker="check_warmup", args=("step", "d_model", "warmup", "scale"),
    task="scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)",
    cases=_warmup_cases,
    reference=lambda step, d_model, warmup, scale: warmup_schedule(
        step, d_model=d_model, warmup=warmup, scale=scale),
    mistakes=(
        Mistake("max instead of min: the rate is the smaller of the rise step · warmup^-1.5 "
                "and the decay step^-0.5", lambda *a: _lr(*a, combine=max)),
        Mistake("the rising part is step · warmup^-1.5 (so that it meets step^-0.5 at the "
                "peak)", lambda *a: _lr(*a, rise_power=-0.5)),
        Mistake("the factor d_model^-0.5 is missing", lambda *a: _lr(*a, model_power=0.0)),
        Mistake("d_model^-0.5 means 1 / √d_model", lambda *a: _lr(*a, model_power=0.5)),
        Mistake("multiply by `scale`", lambda step, d, w, scale: _lr(step, d, w, 1.0)),
    ))


def check_cross_entropy(fn):
    """fn(logits (..., V), targets (...) int, ignore_index) -> the mean cross-entropy over
    the targets that are not ignore_index, as minitf.train.cross_entropy's loss.
    An exercise of notebook 08."""
    return CROSS_ENTROPY.check(fn)


def check_softmax_backward(fn):
    """fn(alpha, d_alpha) -> ds, where alpha = softmax(s) along the last axis and
    d_alpha = ∂L/∂alpha; ds = ∂L/∂s has alpha's shape. An exercise of notebook 08."""
    return SOFTMAX_BACKWARD.check(fn)


def check_adam_step(fn):
    """fn(param, grad, m, v, t, lr, beta1, beta2, eps) -> (new_param, new_m, new_v): one
    Adam step with bias correction (t counts from 1), as minitf.train.Adam.
    An exercise of notebook 08."""
    return ADAM_STEP.check(fn)


def check_warmup(fn):
    """fn(step, d_model, warmup, scale) -> the learning rate
    scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5). An exercise of notebook 08."""
    return WARMUP.check(fn)


EXERCISES = [CROSS_ENTROPY, SOFTMAX_BACKWARD, ADAM_STEP, WARMUP]

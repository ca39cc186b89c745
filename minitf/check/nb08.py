"""Exercises of notebook 08: cross-entropy with label smoothing and padding, the backward pass
of log-softmax, one Adam step and the warm-up schedule (cases, references, known mistakes)."""

import numpy as np

from ..attention import log_softmax, softmax
from ..train import cross_entropy, warmup_schedule
from .core import Case, Exercise, Mistake

__all__ = ["check_cross_entropy", "check_log_softmax_backward", "check_adam_step",
           "check_warmup"]


# ------------------------------------------------- cross-entropy with label smoothing

def _smoothed_losses(logits, targets, eps, *, target_share=None, spread=None):
    """−Σ_v q_v log p_v at every position, padding included, with
    q = target_share · onehot(y) + spread on every class (default 1 − ε and ε/V)."""
    log_probs = log_softmax(logits)
    V = logits.shape[-1]
    share = 1 - eps if target_share is None else target_share
    spread = eps / V if spread is None else spread
    picked = np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]
    return -share * picked - spread * log_probs.sum(axis=-1)


def _cross_entropy_cases():
    rng = np.random.default_rng(80)
    targets = np.array([[5, 7, 2, 0], [4, 2, 0, 0]])  # 0 = <pad> after <eos> = 2
    return [
        Case((rng.standard_normal((2, 4, 9)), targets, 0.1, 0), "(B, L, V) with padding, ε 0.1"),
        Case((800 + 10 * rng.standard_normal((3, 6)), np.array([1, 0, 5]), 0.1, 0),
             "logits around 800, (N, V), ε 0.1"),
        Case((rng.standard_normal((2, 3, 5)), np.array([[1, 2, 3], [4, 0, 1]]), 0.2, -1),
             "ignore_index -1: no padding, and 0 is a real target; ε 0.2"),
        Case((rng.standard_normal((2, 4, 9)), targets, 0.0, 0),
             "ε 0: no smoothing, the plain cross-entropy"),
    ]


def _kept(logits, targets, eps, ignore_index, **q):
    return _smoothed_losses(logits, targets, eps, **q)[targets != ignore_index]


def _naive_smoothed(z, y, e, i):
    probs = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    log_probs = np.log(probs)
    picked = np.take_along_axis(log_probs, y[..., None], axis=-1)[..., 0]
    losses = -(1 - e) * picked - e / z.shape[-1] * log_probs.sum(axis=-1)
    return losses[y != i].mean()


CROSS_ENTROPY = Exercise(
    name="cross_entropy", checker="check_cross_entropy",
    args=("logits", "targets", "eps", "ignore_index"),
    task="one number: the mean of −Σ_v q_v log softmax(logits)_v, with "
         "q = (1 − eps) onehot(target) + eps / V, over the targets that are not ignore_index",
    cases=_cross_entropy_cases,
    reference=lambda logits, targets, eps, ignore_index: cross_entropy(
        logits, targets, ignore_index=ignore_index, label_smoothing=eps)[0],
    mistakes=(
        Mistake("padding was counted: leave out the positions whose target is ignore_index, "
                "and divide by the number of the others",
                lambda z, y, e, i: _smoothed_losses(z, y, e).mean()),
        Mistake("the padded positions' losses were zeroed but still counted in the mean: "
                "divide by the number of targets that are not ignore_index, not by every "
                "position", lambda z, y, e, i: (_smoothed_losses(z, y, e) * (y != i)).mean()),
        Mistake("that is the sum; the loss is the mean over the targets that are not padding",
                lambda z, y, e, i: _kept(z, y, e, i).sum()),
        Mistake("the sign is wrong: the loss is −Σ q log p, a positive number",
                lambda z, y, e, i: -_kept(z, y, e, i).mean()),
        Mistake("0 was left out, not ignore_index: use the argument",
                lambda z, y, e, i: _kept(z, y, e, 0).mean()),
        Mistake("no smoothing: with eps > 0 the target is not the one-hot vector but "
                "q = (1 − eps) onehot + eps / V", lambda z, y, e, i: _kept(z, y, 0.0, i).mean()),
        Mistake("the target class keeps weight 1: it gets (1 − eps) + eps / V, so that q sums "
                "to 1", lambda z, y, e, i: _kept(z, y, e, i, target_share=1.0).mean()),
        Mistake("eps is shared by all V classes: each gets eps / V, not eps",
                lambda z, y, e, i: _kept(z, y, e, i, spread=e).mean()),
        Mistake("np.exp overflowed on large logits: subtract each row's maximum before "
                "np.exp (the softmax does not change)", _naive_smoothed),
    ))


# --------------------------------------------------------- log-softmax backward

def _log_softmax_backward(s, d_logp, *, weights="softmax", total="plain", axis=-1, sign=-1.0):
    """ds = dℓ − softmax(s) · Σ_i dℓ_i along the last axis, ℓ = log softmax(s); the keywords
    make the usual mistakes."""
    alpha = softmax(s) if weights == "softmax" else np.exp(s) / np.exp(s).sum(
        axis=-1, keepdims=True)
    summed = d_logp if total == "plain" else d_logp * alpha
    total = np.sum(summed, axis=axis, keepdims=axis is not None)
    return d_logp + sign * alpha * total


def _log_softmax_backward_cases():
    rng = np.random.default_rng(81)
    return [
        Case((rng.standard_normal(5), rng.standard_normal(5)), "one row"),
        Case((rng.standard_normal((3, 4)), rng.standard_normal((3, 4))), "(L_q, L_k)"),
        Case((1000 + rng.standard_normal((2, 2, 4, 5)), rng.standard_normal((2, 2, 4, 5))),
             "(B, h, L, V), scores around 1000"),
    ]


LOG_SOFTMAX_BACKWARD = Exercise(
    name="log_softmax_backward", checker="check_log_softmax_backward", args=("s", "d_logp"),
    task="ds = ∂L/∂s for logp = log softmax(s) along the last axis, every row at once",
    cases=_log_softmax_backward_cases, reference=_log_softmax_backward,
    mistakes=(
        Mistake("ds = dℓ only: log softmax(s)_i = s_i − log Σ_j e^(s_j), and the second term "
                "depends on every score: subtract softmax(s) · Σ_i dℓ_i",
                lambda s, d: d),
        Mistake("that is the backward pass of softmax, α ⊙ (dℓ − Σ α dℓ); the log changes it: "
                "ds = dℓ − α · Σ_i dℓ_i", lambda s, d: softmax(s) * (
                    d - np.sum(d * softmax(s), axis=-1, keepdims=True))),
        Mistake("the sum is the plain Σ_i dℓ_i (every ℓ_i has the same − log Σ e^s), not "
                "weighted by α", lambda s, d: _log_softmax_backward(s, d, total="weighted")),
        Mistake("each score gets its own share: ds_j = dℓ_j − α_j Σ_i dℓ_i (the α_j is "
                "missing)", lambda s, d: d - np.sum(d, axis=-1, keepdims=True)),
        Mistake("summed over the wrong axis: the sum runs over the last axis, one row's "
                "entries (axis=-1, keepdims=True)",
                lambda s, d: _log_softmax_backward(s, d, axis=0)),
        Mistake("summed over the whole array: each row has its own Σ_i dℓ_i "
                "(axis=-1, keepdims=True)", lambda s, d: _log_softmax_backward(s, d, axis=None)),
        Mistake("the sign of the second term is wrong: ds = dℓ − α Σ_i dℓ_i",
                lambda s, d: _log_softmax_backward(s, d, sign=1.0)),
        Mistake("np.exp overflowed on large scores: compute softmax(s) with each row's "
                "maximum subtracted first", lambda s, d: _log_softmax_backward(s, d,
                                                                             weights="naive")),
    ))


# -------------------------------------------------------------------- Adam step

def _adam_step(param, grad, m, v, t, lr, beta1, beta2, eps, *, correct_m=True, correct_v=True,
               m_rule="ema", v_rule="ema", sqrt=True, sign=-1.0, eps_inside=False):
    """One Adam update -> (param, m, v), new arrays; the flags make the usual mistakes."""
    m = {"ema": beta1 * m + (1 - beta1) * grad, "no 1-b": beta1 * m + grad,
         "swapped": (1 - beta1) * m + beta1 * grad}[m_rule]
    v = {"ema": beta2 * v + (1 - beta2) * grad ** 2, "not squared": beta2 * v + (1 - beta2) * grad,
         "swapped": (1 - beta2) * v + beta2 * grad ** 2}[v_rule]
    m_hat = m / (1 - beta1 ** t) if correct_m else m
    v_hat = v / (1 - beta2 ** t) if correct_v else v
    if eps_inside:
        return param + sign * lr * m_hat / np.sqrt(v_hat + eps), m, v
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
    m, v = 0.1 * rng.standard_normal(4), 1e-4 * rng.random(4)
    large_eps = (rng.standard_normal(4), 0.1 * rng.standard_normal(4), m, v,
                 5, 0.01, 0.9, 0.999, 1e-2)
    return [Case(first, "the very first step: m = v = 0, t = 1"), Case(third, "step 3"),
            Case(late, "step 40"), Case(large_eps, "step 5, a large ε = 0.01")]


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
        Mistake("ε goes outside the square root: lr · m̂ / (√v̂ + ε), not √(v̂ + ε)",
                _adam_variant(eps_inside=True)),
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
    """fn(logits (..., V), targets (...) int, eps, ignore_index) -> the mean cross-entropy
    against the smoothed target q = (1 − eps) onehot + eps / V over the targets that are not
    ignore_index, as minitf.train.cross_entropy's loss with label_smoothing=eps.
    An exercise of notebook 08 §1."""
    return CROSS_ENTROPY.check(fn)


def check_log_softmax_backward(fn):
    """fn(s, d_logp) -> ds, where logp = log softmax(s) along the last axis and
    d_logp = ∂L/∂logp; ds = ∂L/∂s has s's shape. An exercise of notebook 08 §3."""
    return LOG_SOFTMAX_BACKWARD.check(fn)


def check_adam_step(fn):
    """fn(param, grad, m, v, t, lr, beta1, beta2, eps) -> (new_param, new_m, new_v): one
    Adam step with bias correction (t counts from 1), as minitf.train.Adam.
    An exercise of notebook 08 §4."""
    return ADAM_STEP.check(fn)


def check_warmup(fn):
    """fn(step, d_model, warmup, scale) -> the learning rate
    scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5). An exercise of notebook 08 §5."""
    return WARMUP.check(fn)


EXERCISES = [CROSS_ENTROPY, LOG_SOFTMAX_BACKWARD, ADAM_STEP, WARMUP]

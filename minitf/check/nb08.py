"""Checkers for the exercises of notebook 08: cross-entropy with padding, the softmax
backward pass, one Adam step and the warm-up schedule.

Like those of notebooks 05-07, they compare with minitf and, for a wrong answer, name the
usual mistake it reproduces (padding counted in the mean, the missing −α(αᵀdα) term, Adam
without bias correction, max instead of min, ...).
"""

import numpy as np

from ..attention import log_softmax, softmax
from ..train import cross_entropy, warmup_schedule
from .core import describe_difference
from .nb06 import diagnose, run_cases

__all__ = ["check_cross_entropy", "check_softmax_backward", "check_adam_step",
           "check_warmup"]


# ---------------------------------------------------------------- cross-entropy

def _token_losses(logits, targets):
    """−log softmax(logits)[target] at every position, padding included."""
    log_probs = log_softmax(logits)
    return -np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]


def _judge_cross_entropy(got, logits, targets, ignore_index):
    if isinstance(got, tuple):
        return (f"returned a tuple of {len(got)}; return only the loss, one number "
                "(minitf's cross_entropy also returns the gradient, this exercise does not)")
    got_arr = np.asarray(got, dtype=float) if got is not None else None
    if got_arr is not None and got_arr.shape != ():
        return (f"returned an array of shape {got_arr.shape}; return one number, the mean "
                "over the targets that are not padding")
    if got_arr is not None and not np.isfinite(got_arr):
        return (f"got {got_arr.item()}: np.exp overflowed on large logits — subtract each "
                "row's maximum before np.exp (the softmax does not change)")
    expected, _ = cross_entropy(logits, targets, ignore_index=ignore_index)
    losses = _token_losses(logits, targets)
    keep = targets != ignore_index
    n = max(int(keep.sum()), 1)
    return diagnose(got, expected, [
        (losses.mean(), "padding was counted: leave out the positions whose target is "
                        "ignore_index, and divide by the number of the others"),
        (losses.sum() / n, "the padded positions are still in the sum: add up only the "
                           "losses where targets != ignore_index"),
        (losses[keep].sum(), "that is the sum; the loss is the mean over the targets that "
                             "are not padding"),
        (-expected, "the sign is wrong: the loss is −log p, a positive number"),
        (losses[targets != 0].mean(), "0 was left out, not ignore_index: use the argument"),
    ])


def _cross_entropy_cases():
    rng = np.random.default_rng(80)
    targets = np.array([[5, 7, 2, 0], [4, 2, 0, 0]])  # 0 = <pad> after <eos> = 2
    return [
        (rng.standard_normal((2, 4, 9)), targets, 0),  # (B, L, V) with padding
        (800 + 10 * rng.standard_normal((3, 6)), np.array([1, 0, 5]), 0),  # huge, (N, V)
        (rng.standard_normal((2, 3, 5)), np.array([[1, 2, 3], [4, 0, 1]]), -1),  # no padding
    ]


def check_cross_entropy(fn):
    """fn(logits (..., V), targets (...) int, ignore_index) -> the mean cross-entropy over
    the targets that are not ignore_index, as minitf.train.cross_entropy's loss."""
    return run_cases("cross_entropy", fn, _cross_entropy_cases(), _judge_cross_entropy)


# ------------------------------------------------------------- softmax backward

def softmax_backward(alpha, d_alpha):
    """ds = α ⊙ (dα − Σ_j dα_j α_j) along the last axis: the Jacobian diag(α) − ααᵀ applied
    to dα, for every row at once."""
    return alpha * (d_alpha - np.sum(d_alpha * alpha, axis=-1, keepdims=True))


def _judge_softmax_backward(got, alpha, d_alpha):
    expected = softmax_backward(alpha, d_alpha)
    return diagnose(got, expected, [
        (alpha * d_alpha, "only the diagonal part diag(α) dα: subtract α · (αᵀ dα), the "
                          "part from −ααᵀ (every α_j depends on every score)"),
        (d_alpha - np.sum(d_alpha * alpha, axis=-1, keepdims=True),
         "the leading α ⊙ is missing: ds = α ⊙ (dα − Σ_j dα_j α_j)"),
        (alpha * (d_alpha - np.sum(d_alpha * alpha, axis=0, keepdims=True)),
         "summed over the wrong axis: the sum runs over the last axis, the keys of one row "
         "(axis=-1, keepdims=True)"),
        (alpha * (d_alpha - np.sum(d_alpha * alpha)),
         "summed over the whole array: each row (each query) has its own Σ_j dα_j α_j "
         "(axis=-1, keepdims=True)"),
        (alpha * (d_alpha - np.sum(d_alpha, axis=-1, keepdims=True)),
         "the sum is Σ_j dα_j α_j, weighted by α, not the plain sum of dα"),
    ])


def _softmax_backward_cases():
    rng = np.random.default_rng(81)
    masked = np.where(np.tril(np.ones((4, 4), dtype=bool)),
                      rng.standard_normal((2, 2, 4, 4)), -np.inf)
    return [
        (softmax(rng.standard_normal(5)), rng.standard_normal(5)),  # one row
        (softmax(rng.standard_normal((3, 4))), rng.standard_normal((3, 4))),  # (L_q, L_k)
        (softmax(masked), rng.standard_normal((2, 2, 4, 4))),  # (B, h, L, L), causal zeros
    ]


def check_softmax_backward(fn):
    """fn(alpha, d_alpha) -> ds, where alpha = softmax(s) along the last axis and
    d_alpha = ∂L/∂alpha; ds = ∂L/∂s has alpha's shape."""
    return run_cases("softmax_backward", fn, _softmax_backward_cases(),
                     _judge_softmax_backward)


# -------------------------------------------------------------------- Adam step

def adam_step(param, grad, m, v, t, lr, beta1, beta2, eps, bias_correction=True):
    """One Adam update of one array -> (param, m, v), new arrays (the inputs are kept)."""
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad ** 2
    m_hat, v_hat = (m / (1 - beta1 ** t), v / (1 - beta2 ** t)) if bias_correction else (m, v)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def _judge_adam_step(got, param, grad, m, v, t, lr, beta1, beta2, eps):
    if not isinstance(got, tuple) or len(got) != 3:
        return f"returned a {type(got).__name__}; return the triple (param, m, v)"
    new_param, new_m, new_v = adam_step(param, grad, m, v, t, lr, beta1, beta2, eps)
    problem = diagnose(got[1], new_m, [
        (beta1 * m + grad, "m ← β₁ m + (1 − β₁) g: the (1 − β₁) is missing"),
        ((1 - beta1) * m + beta1 * grad, "β₁ and 1 − β₁ are swapped: m ← β₁ m + (1 − β₁) g"),
    ])
    if problem:
        return "m: " + problem
    problem = diagnose(got[2], new_v, [
        (beta2 * v + (1 - beta2) * grad, "v is the average of the squared gradient g²"),
        ((1 - beta2) * v + beta2 * grad ** 2,
         "β₂ and 1 − β₂ are swapped: v ← β₂ v + (1 − β₂) g²"),
    ])
    if problem:
        return "v: " + problem
    m_hat, v_hat = new_m / (1 - beta1 ** t), new_v / (1 - beta2 ** t)
    with np.errstate(all="ignore"):
        mistakes = [
            (adam_step(param, grad, m, v, t, lr, beta1, beta2, eps, bias_correction=False)[0],
             "no bias correction: divide m by 1 − β₁ᵗ and v by 1 − β₂ᵗ (both start at 0, "
             "so early averages are too small)"),
            (param - lr * m_hat / (np.sqrt(new_v) + eps),
             "only m was bias-corrected: v̂ = v / (1 − β₂ᵗ) too"),
            (param - lr * new_m / (np.sqrt(v_hat) + eps),
             "only v was bias-corrected: m̂ = m / (1 − β₁ᵗ) too"),
            (param - lr * m_hat / (v_hat + eps), "the square root of v̂ is missing"),
            (param + lr * m_hat / (np.sqrt(v_hat) + eps),
             "the step goes uphill: subtract lr · m̂ / (√v̂ + ε)"),
            (param - lr * grad, "that is plain gradient descent; use m̂ / (√v̂ + ε)"),
        ]
    problem = diagnose(got[0], new_param, mistakes)
    return None if problem is None else "param: " + problem


def _adam_cases():
    rng = np.random.default_rng(82)
    first = (rng.standard_normal(4), rng.standard_normal(4), np.zeros(4), np.zeros(4),
             1, 0.01, 0.9, 0.98, 1e-9)  # the very first step: m = v = 0
    m, v = 0.1 * rng.standard_normal((2, 3)), 0.05 * rng.random((2, 3))
    third = (rng.standard_normal((2, 3)), rng.standard_normal((2, 3)), m, v,
             3, 0.001, 0.9, 0.999, 1e-8)
    m, v = 0.2 * rng.standard_normal(5), 0.1 * rng.random(5)
    late = (rng.standard_normal(5), 0.5 * rng.standard_normal(5), m, v,
            40, 0.05, 0.8, 0.9, 1e-6)
    return [first, third, late]


def _copying(fn):
    """fn called on copies of the arrays, so an in-place update cannot touch the cases."""
    def call(*case):
        return fn(*(a.copy() if isinstance(a, np.ndarray) else a for a in case))
    return call


def check_adam_step(fn):
    """fn(param, grad, m, v, t, lr, beta1, beta2, eps) -> (new_param, new_m, new_v): one
    Adam step with bias correction (t counts from 1), as minitf.train.Adam."""
    return run_cases("adam_step", _copying(fn), _adam_cases(), _judge_adam_step)


# ---------------------------------------------------------------- warm-up schedule

def _judge_warmup(got, step, d_model, warmup, scale):
    expected = warmup_schedule(step, d_model=d_model, warmup=warmup, scale=scale)
    if got is not None and describe_difference(got, expected) is None:
        return None
    rise, decay = step * warmup ** -1.5, step ** -0.5
    where = "before" if step < warmup else "after" if step > warmup else "at"
    return diagnose(got, expected, [
        (scale * d_model ** -0.5 * max(decay, rise),
         "max instead of min: the rate is the smaller of the rise step · warmup^-1.5 and "
         "the decay step^-0.5"),
        (scale * d_model ** -0.5 * min(decay, step * warmup ** -0.5),
         "the rising part is step · warmup^-1.5 (so that it meets step^-0.5 at the peak)"),
        (scale * min(decay, rise), "the factor d_model^-0.5 is missing"),
        (scale * d_model ** 0.5 * min(decay, rise), "d_model^-0.5 means 1 / √d_model"),
        (d_model ** -0.5 * min(decay, rise), "multiply by `scale`"),
    ]) + f" (step {step}, {where} the peak at step {warmup})"


def check_warmup(fn):
    """fn(step, d_model, warmup, scale) -> the learning rate
    scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)."""
    cases = [(1, 512, 4000, 1.0), (4000, 512, 4000, 1.0), (20000, 512, 4000, 1.0),
             (30, 64, 100, 0.25), (400, 64, 100, 0.25)]
    return run_cases("warmup", fn, cases, _judge_warmup)

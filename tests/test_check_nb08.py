"""The checkers of notebook 08 pass right answers, name the usual mistakes, and never raise."""

import numpy as np
import pytest

from minitf.check import check_adam_step, check_cross_entropy, check_softmax_backward, check_warmup
from minitf.module import Module
from minitf.train import Adam


def not_written(*args):
    raise NotImplementedError  # your code here


@pytest.mark.parametrize("checker", [check_cross_entropy, check_softmax_backward,
                                     check_adam_step, check_warmup])
def test_not_written(checker):
    result = checker(not_written)
    assert not result and "not written yet" in str(result)


def test_a_crash_is_reported_not_raised():
    def crash(*args):
        raise KeyError("oops")

    for checker in (check_cross_entropy, check_softmax_backward, check_adam_step, check_warmup):
        result = checker(crash)
        assert not result and "raised KeyError" in str(result)


# ---------------------------------------------------------------- cross-entropy

def token_losses(logits, targets):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]


def cross_entropy(logits, targets, ignore_index=0):
    keep = targets != ignore_index
    return token_losses(logits, targets)[keep].mean()


def test_cross_entropy_right_answer_passes():
    result = check_cross_entropy(cross_entropy)
    assert result and "✓ cross_entropy: pass" in str(result) and "3 cases agree" in str(result)


def test_cross_entropy_names_the_mistake():
    def no_max(logits, targets, ignore_index=0):
        probs = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
        picked = np.take_along_axis(probs, targets[..., None], axis=-1)[..., 0]
        return -np.log(picked)[targets != ignore_index].mean()

    cases = {
        "padding was counted": lambda lg, t, i=0: token_losses(lg, t).mean(),
        "still in the sum": lambda lg, t, i=0: token_losses(lg, t).sum() / (t != i).sum(),
        "that is the sum": lambda lg, t, i=0: token_losses(lg, t)[t != i].sum(),
        "sign is wrong": lambda lg, t, i=0: -cross_entropy(lg, t, i),
        "not ignore_index": lambda lg, t, i=0: token_losses(lg, t)[t != 0].mean(),
        "subtract each row's maximum": no_max,
        "return only the loss": lambda lg, t, i=0: (cross_entropy(lg, t, i), None),
        "return one number": lambda lg, t, i=0: token_losses(lg, t),
        "forget `return`": lambda lg, t, i=0: None,
    }
    for hint, fn in cases.items():
        result = check_cross_entropy(fn)
        assert not result and hint in str(result), (hint, str(result))


# ------------------------------------------------------------- softmax backward

def softmax_backward(alpha, d_alpha):
    return alpha * (d_alpha - (d_alpha * alpha).sum(axis=-1, keepdims=True))


def test_softmax_backward_right_answer_passes():
    assert check_softmax_backward(softmax_backward)


def test_softmax_backward_with_the_jacobian_passes():
    # the 1-D, 2-D and 4-D cases through an explicit Jacobian, one row at a time
    def by_jacobian(alpha, d_alpha):
        rows_a, rows_d = alpha.reshape(-1, alpha.shape[-1]), d_alpha.reshape(-1, alpha.shape[-1])
        ds = [(np.diag(a) - np.outer(a, a)) @ d for a, d in zip(rows_a, rows_d)]
        return np.array(ds).reshape(alpha.shape)

    assert check_softmax_backward(by_jacobian)


def test_softmax_backward_names_the_mistake():
    cases = {
        "only the diagonal part": lambda a, d: a * d,
        "leading α ⊙ is missing": lambda a, d: d - (d * a).sum(axis=-1, keepdims=True),
        "wrong axis": lambda a, d: a * (d - (d * a).sum(axis=0, keepdims=True)),
        "whole array": lambda a, d: a * (d - (d * a).sum()),
        "weighted by α": lambda a, d: a * (d - d.sum(axis=-1, keepdims=True)),
        "shape": lambda a, d: softmax_backward(a, d)[..., :-1],
    }
    for hint, fn in cases.items():
        result = check_softmax_backward(fn)
        assert not result and hint in str(result), (hint, str(result))


# -------------------------------------------------------------------- Adam step

def adam_step(param, grad, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad ** 2
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def test_adam_step_right_answer_passes():
    result = check_adam_step(adam_step)
    assert result and "3 cases agree" in str(result)


def test_adam_step_in_place_passes():
    def in_place(param, grad, m, v, t, lr, beta1, beta2, eps):
        m *= beta1
        m += (1 - beta1) * grad
        v *= beta2
        v += (1 - beta2) * grad * grad
        param -= lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps)
        return param, m, v

    assert check_adam_step(in_place)


def test_adam_step_agrees_with_minitf_adam():
    # the reference of the checker is the update minitf.train.Adam makes
    class One(Module):
        def __init__(self, p):
            super().__init__()
            self.add_param("p", p)
            self.g = self.grads["p"]

    rng = np.random.default_rng(0)
    model = One(rng.standard_normal(6))
    opt = Adam(model, lr=0.01, betas=(0.9, 0.98), eps=1e-9)
    p, m, v = model.p.copy(), np.zeros(6), np.zeros(6)
    for t in range(1, 4):
        model.g[:] = rng.standard_normal(6)
        opt.step()
        p, m, v = adam_step(p, model.g, m, v, t, 0.01, 0.9, 0.98, 1e-9)
        np.testing.assert_allclose(model.p, p, rtol=1e-12)


def test_adam_step_names_the_mistake():
    def variant(m_fn=None, v_fn=None, update=None):
        def fn(param, grad, m, v, t, lr, beta1, beta2, eps):
            new_m = m_fn(m, grad, beta1) if m_fn else beta1 * m + (1 - beta1) * grad
            new_v = v_fn(v, grad, beta2) if v_fn else beta2 * v + (1 - beta2) * grad ** 2
            m_hat, v_hat = new_m / (1 - beta1 ** t), new_v / (1 - beta2 ** t)
            if update:
                return update(param, grad, new_m, new_v, m_hat, v_hat, lr, eps), new_m, new_v
            return param - lr * m_hat / (np.sqrt(v_hat) + eps), new_m, new_v
        return fn

    cases = {
        "(1 − β₁) is missing": variant(m_fn=lambda m, g, b: b * m + g),
        "m: 4 of 4": variant(m_fn=lambda m, g, b: (1 - b) * m + b * g),
        "squared gradient": variant(v_fn=lambda v, g, b: b * v + (1 - b) * g),
        "v: ": variant(v_fn=lambda v, g, b: (1 - b) * v + b * g ** 2),
        "no bias correction": variant(update=lambda p, g, m, v, mh, vh, lr, e:
                                      p - lr * m / (np.sqrt(v) + e)),
        "only m was bias-corrected": variant(update=lambda p, g, m, v, mh, vh, lr, e:
                                             p - lr * mh / (np.sqrt(v) + e)),
        "only v was bias-corrected": variant(update=lambda p, g, m, v, mh, vh, lr, e:
                                             p - lr * m / (np.sqrt(vh) + e)),
        "square root": variant(update=lambda p, g, m, v, mh, vh, lr, e: p - lr * mh / (vh + e)),
        "uphill": variant(update=lambda p, g, m, v, mh, vh, lr, e:
                          p + lr * mh / (np.sqrt(vh) + e)),
        "plain gradient descent": variant(update=lambda p, g, m, v, mh, vh, lr, e: p - lr * g),
        "return the triple": lambda *args: adam_step(*args)[0],
    }
    for hint, fn in cases.items():
        result = check_adam_step(fn)
        assert not result and hint in str(result), (hint, str(result))


# ---------------------------------------------------------------- warm-up schedule

def warmup_lr(step, d_model, warmup, scale=1.0):
    return scale * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def test_warmup_right_answer_passes():
    result = check_warmup(warmup_lr)
    assert result and "5 cases agree" in str(result)


def test_warmup_names_the_mistake():
    cases = {
        "max instead of min": lambda s, d, w, c=1.0: c * d ** -0.5 * max(s ** -0.5, s * w ** -1.5),
        "warmup^-1.5": lambda s, d, w, c=1.0: c * d ** -0.5 * min(s ** -0.5, s * w ** -0.5),
        "d_model^-0.5 is missing": lambda s, d, w, c=1.0: c * min(s ** -0.5, s * w ** -1.5),
        "1 / √d_model": lambda s, d, w, c=1.0: c * d ** 0.5 * min(s ** -0.5, s * w ** -1.5),
        "multiply by `scale`": lambda s, d, w, c=1.0: warmup_lr(s, d, w),
        "forget `return`": lambda s, d, w, c=1.0: None,
    }
    for hint, fn in cases.items():
        result = check_warmup(fn)
        assert not result and hint in str(result), (hint, str(result))


def test_warmup_says_which_side_of_the_peak():
    def wrong_after_the_peak(step, d_model, warmup, scale=1.0):
        return warmup_lr(step, d_model, warmup, scale) * (2 if step > warmup else 1)

    result = check_warmup(wrong_after_the_peak)
    assert not result and "after the peak" in str(result) and "before" not in str(result)

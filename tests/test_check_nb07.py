"""The checkers of notebook 07 pass right answers, name the usual mistakes, and never raise."""

import numpy as np

from minitf.attention import padding_mask, softmax
from minitf.check import check_greedy_step, check_temperature, check_top_k, check_top_p


def not_written(*args):
    raise NotImplementedError  # your code here


def assert_names(checker, cases):
    """Every wrong answer fails, and the report contains its hint."""
    for fn, hint in cases.items():
        result = checker(fn)
        assert not result and hint in str(result), (hint, str(result))


# ------------------------------------------------------------------ greedy step

def next_logits(model, src, prefix, position=-1, memory_mask=True, mask_pad=True):
    memory = model.encode(src)
    logits = model.decode(prefix, memory, padding_mask(src) if memory_mask else None)
    logits = logits[:, position]  # (B, V)
    if mask_pad:
        logits[:, 0] = -np.inf
    return logits


def greedy_step(model, src, prefix):
    return next_logits(model, src, prefix).argmax(axis=-1)


def test_greedy_step_right_answer_passes():
    result = check_greedy_step(greedy_step)
    assert result and "✓ greedy_step: pass" in str(result) and "3 cases agree" in str(result)


def test_greedy_step_not_written():
    result = check_greedy_step(not_written)
    assert not result and "not written yet" in str(result)


def test_greedy_step_names_the_mistake():
    assert_names(check_greedy_step, {
        (lambda m, s, p: next_logits(m, s, p, position=0).argmax(axis=-1)): "logits[:, -1]",
        (lambda m, s, p: next_logits(m, s, p, mask_pad=False).argmax(axis=-1)): "<pad> (id 0)",
        (lambda m, s, p: next_logits(m, s, p, memory_mask=False).argmax(axis=-1)):
            "padding_mask(src)",
        (lambda m, s, p: greedy_step(m, s, p)[:, None]): "one id per row",
        (lambda m, s, p: next_logits(m, s, p).max(axis=-1)): "returned floats",
        (lambda m, s, p: next_logits(m, s, p).argmax()): "shape ()",
        (lambda m, s, p: None): "forget `return`",
    })


def test_greedy_step_reports_a_crash():
    result = check_greedy_step(lambda m, s, p: m.decode(p, s))
    assert not result and "raised" in str(result)


# ------------------------------------------------------------------ temperature

def temperature_softmax(logits, temperature):
    z = logits / temperature
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def test_temperature_right_answer_passes():
    result = check_temperature(temperature_softmax)
    assert result and "4 cases agree" in str(result)


def test_temperature_renormalised_power_is_also_right():
    def via_power(logits, temperature):
        p = softmax(logits) ** (1 / temperature)
        return p / p.sum(axis=-1, keepdims=True)

    # exp(-8 / 0.1) underflows to 0 either way; everything else agrees
    result = check_temperature(via_power)
    assert result, str(result)


def test_temperature_not_written():
    assert "not written yet" in str(check_temperature(not_written))


def test_temperature_names_the_mistake():
    def unstable(logits, temperature):
        e = np.exp(logits / temperature)
        return e / e.sum(axis=-1, keepdims=True)

    def first_axis(logits, temperature):
        z = logits / temperature
        e = np.exp(z - z.max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)

    assert_names(check_temperature, {
        unstable: "subtract the largest logit",
        (lambda logits, t: temperature_softmax(logits * t, 1.0)): "multiplied by T",
        (lambda logits, t: softmax(logits) / t): "divided by T after the softmax",
        (lambda logits, t: softmax(logits) ** (1 / t)): "renormalised",
        (lambda logits, t: softmax(logits)): "temperature was ignored",
        first_axis: "axis 0",
        (lambda logits, t: None): "forget `return`",
    })


# ------------------------------------------------------------------------ top-k

def top_k(logits, k):
    order = np.argsort(-logits, axis=-1)[..., :k]  # (..., k) ids of the k largest
    keep = np.zeros(logits.shape, dtype=bool)
    np.put_along_axis(keep, order, True, axis=-1)
    return keep


def test_top_k_right_answer_passes():
    result = check_top_k(top_k)
    assert result and "4 cases agree" in str(result)


def test_top_k_threshold_answer_passes():
    result = check_top_k(lambda logits, k: logits >= np.sort(logits, axis=-1)[..., -k:][..., :1])
    assert result, str(result)


def test_top_k_not_written():
    assert "not written yet" in str(check_top_k(not_written))


def test_top_k_names_the_mistake():
    def first_axis(logits, k):
        if logits.ndim == 1:
            return top_k(logits, k)
        keep = np.zeros(logits.shape, dtype=bool)
        np.put_along_axis(keep, np.argsort(-logits, axis=0)[:k], True, axis=0)
        return keep

    assert_names(check_top_k, {
        (lambda logits, k: top_k(-logits, k)): "k smallest",
        (lambda logits, k: top_k(logits, k + 1)): "k + 1 tokens",
        (lambda logits, k: top_k(logits, max(k - 1, 1))): "k − 1 tokens",
        (lambda logits, k: np.argsort(-logits, axis=-1)[..., :k]): "indices",
        (lambda logits, k: np.where(top_k(logits, k), logits, -np.inf)): "boolean mask",
        first_axis: "last axis",
        (lambda logits, k: None): "forget `return`",
    })


# ------------------------------------------------------------------------ top-p

def top_p(probs, p):
    order = np.argsort(-probs, axis=-1)  # most probable first
    ranked = np.take_along_axis(probs, order, axis=-1)
    before = np.cumsum(ranked, axis=-1) - ranked  # the mass ranked above each token
    keep = np.zeros(probs.shape, dtype=bool)
    np.put_along_axis(keep, order, before < p, axis=-1)
    return keep


def test_top_p_right_answer_passes():
    result = check_top_p(top_p)
    assert result and "4 cases agree" in str(result)


def test_top_p_not_written():
    assert "not written yet" in str(check_top_p(not_written))


def test_top_p_names_the_mistake():
    def ranked_keep(probs, p, rule, descending=True):
        order = np.argsort(-probs if descending else probs, axis=-1)
        ranked = np.take_along_axis(probs, order, axis=-1)
        keep = np.zeros(probs.shape, dtype=bool)
        np.put_along_axis(keep, order, rule(np.cumsum(ranked, axis=-1), ranked), axis=-1)
        return keep

    assert_names(check_top_p, {
        (lambda probs, p: ranked_keep(probs, p, lambda c, r: c <= p)): "past p was dropped",
        (lambda probs, p: ranked_keep(probs, p, lambda c, r: c < p)): "past p was dropped",
        (lambda probs, p: np.cumsum(probs, axis=-1) - probs < p): "vocabulary order",
        (lambda probs, p: ranked_keep(probs, p, lambda c, r: c - r < p, descending=False)):
            "descending order",
        (lambda probs, p: probs >= p): "own probability",
        (lambda probs, p: np.where(top_p(probs, p), probs, 0.0)): "boolean mask",
        (lambda probs, p: None): "forget `return`",
    })


# --------------------------------------------------------------------- nonsense

def test_checkers_report_nonsense_without_raising():
    for checker in (check_greedy_step, check_temperature, check_top_k, check_top_p):
        for fn in (lambda *args: "nonsense", lambda *args: [1, 2], lambda *args: {"a": 1}):
            result = checker(fn)
            assert not result and "case 1:" in str(result), str(result)

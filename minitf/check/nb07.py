"""Checkers for the exercises of notebook 07: one greedy step, the temperature softmax, and
the top-k and top-p filters.

Each checker runs the learner's function on a few cases, compares it with minitf.generate,
and when the answer is wrong also tests it against the usual mistakes, so the report can
say which one it is (the first position instead of the last, multiplying by the
temperature, the k smallest, a nucleus that stops one token too early, ...).
"""

import numpy as np

from ..attention import padding_mask, softmax
from ..generate import BOS_ID, PAD_ID, greedy_decode, top_k_mask, top_p_mask
from ..model import Transformer
from .nb06 import diagnose, run_cases

__all__ = ["check_greedy_step", "check_temperature", "check_top_k", "check_top_p"]


def _as_array(got):
    """The learner's result as an array, or None when it is not array-like."""
    try:
        return np.asarray(got)
    except Exception:  # noqa: BLE001 - reported by the caller, never raised
        return None


# ------------------------------------------------------------------ greedy step

def _tiny_model(seed):
    """A small random translator: 12 source and 12 target tokens, one layer."""
    return Transformer(12, 12, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8,
                       rng=seed)


def _greedy_cases():
    """(model, src, prefix) with prefix = <bos> + greedy_decode's own first t tokens, so the
    expected answer is token t of greedy_decode."""
    model = _tiny_model(seed=1)
    src = np.array([[5, 6, 7, 8, 2], [9, 2, 0, 0, 0], [4, 10, 2, 0, 0]])  # padded batch
    cases = []
    for t in (0, 2, 4):
        generated = greedy_decode(model, src, max_len=t, eos_id=None) if t else \
            np.zeros((len(src), 0), dtype=np.int64)
        prefix = np.concatenate([np.full((len(src), 1), BOS_ID), generated], axis=1)
        cases.append((model, src, prefix))
    return cases


def _next_logits(model, src, prefix, *, position=-1, use_memory_mask=True, mask_pad=True):
    """The logits for the next token, with the knobs that the usual mistakes turn."""
    memory = model.encode(src)
    memory_mask = padding_mask(src, PAD_ID) if use_memory_mask else None
    logits = model.decode(prefix, memory, memory_mask)[:, position]  # (B, V)
    if mask_pad:
        logits[:, PAD_ID] = -np.inf
    return logits


def _judge_greedy_step(got, model, src, prefix):
    t = prefix.shape[1] - 1
    expected = greedy_decode(model, src, max_len=t + 1, eos_id=None)[:, t]  # (B,)
    arr = _as_array(got)
    if arr is None or got is None:
        return _describe_none(got)
    if arr.shape == (len(src), 1) and np.array_equal(arr[:, 0], expected):
        return f"shape {arr.shape}, expected {expected.shape}: return one id per row, (B,)"
    if arr.shape == expected.shape and np.issubdtype(arr.dtype, np.floating):
        return (f"returned floats ({arr.dtype}); return the ids of the best tokens "
                "(argmax), not their logits or probabilities")
    return diagnose(arr, expected, [
        (_next_logits(model, src, prefix, position=0).argmax(axis=-1),
         "that is the prediction made at position 0 (after <bos>); the next token comes "
         "from the last position: logits[:, -1]"),
        (_next_logits(model, src, prefix, mask_pad=False).argmax(axis=-1),
         "<pad> (id 0) was chosen; it is never generated: set logits[:, 0] = -np.inf "
         "before the argmax, as greedy_decode does"),
        (_next_logits(model, src, prefix, use_memory_mask=False).argmax(axis=-1),
         "the padded source rows read their <pad> positions: pass "
         "padding_mask(src) as the memory mask to model.decode"),
    ])


def _describe_none(got):
    if got is None:
        return "returned None — did you forget `return`?"
    return f"returned a {type(got).__name__}, expected an array of ids"


def check_greedy_step(fn):
    """fn(model, src, prefix) -> (B,) ids: the most probable next token after `prefix`
    (B, t+1), which starts with <bos>; <pad> is never chosen. Compared with the token that
    minitf.generate.greedy_decode picks at that step."""
    return run_cases("greedy_step", fn, _greedy_cases(), _judge_greedy_step)


# ------------------------------------------------------------------ temperature

def _temperature_reference(logits, temperature):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return softmax(shifted / temperature)


def _temperature_cases():
    rng = np.random.default_rng(70)
    return [
        (np.array([2.0, 1.0, 0.5, -1.0]), 0.5),
        (rng.normal(size=(3, 6)) * 2, 2.0),
        (rng.normal(size=(2, 5)), 1.0),
        (np.array([1000.0, 998.0, 990.0]), 0.1),  # exp(1000 / 0.1) overflows
    ]


def _judge_temperature(got, logits, temperature):
    expected = _temperature_reference(logits, temperature)
    with np.errstate(all="ignore"):
        arr = _as_array(got)
        if arr is not None and arr.shape == expected.shape and np.issubdtype(
                arr.dtype, np.number) and np.isnan(arr).any():
            return ("contains nan: exp of a large logit / T overflows — subtract the "
                    "largest logit of each row before dividing and exponentiating")
        probs = softmax(logits - logits.max(axis=-1, keepdims=True))
        mistakes = [
            (_temperature_reference(logits * temperature, 1.0),
             "the logits were multiplied by T; divide them: softmax(logits / T)"),
            (probs / temperature,
             "the probabilities were divided by T after the softmax (they no longer sum "
             "to 1); divide the logits before it"),
            (probs ** (1 / temperature),
             "p^(1/T) is right up to a constant, but it must be renormalised to sum to 1"),
            (probs, "the temperature was ignored"),
        ]
        if logits.ndim == 2:
            mistakes.append((softmax(logits / temperature, axis=0),
                             "the softmax ran over axis 0; it runs over the vocabulary, "
                             "the last axis (axis=-1)"))
    return diagnose(got, expected, mistakes)


def check_temperature(fn):
    """fn(logits, temperature) -> softmax(logits / temperature) along the last axis, as
    minitf.generate.sample uses it."""
    return run_cases("temperature", fn, _temperature_cases(), _judge_temperature)


# ------------------------------------------------------------------------ top-k

def _top_k_cases():
    rng = np.random.default_rng(71)
    return [
        (np.array([1.5, -0.3, 2.7, 0.1, 2.2, -1.0, 0.8, 0.4]), 3),
        (rng.normal(size=(3, 10)), 4),
        (rng.normal(size=(2, 6)), 1),
        (rng.normal(size=(5,)), 5),
    ]


def _judge_top_k(got, logits, k):
    expected = top_k_mask(logits, k)
    arr = _as_array(got)
    if arr is None or got is None:
        return _describe_none(got)
    if arr.shape == expected.shape[:-1] + (k,) and np.issubdtype(arr.dtype, np.integer) \
            and arr.shape != expected.shape:
        return (f"shape {arr.shape}: those look like the indices of the kept tokens; return "
                "a boolean mask of the logits' shape, True at the k largest")
    if arr.shape == expected.shape and np.issubdtype(arr.dtype, np.floating):
        return (f"returned {arr.dtype} values; return a boolean mask (True = keep), the "
                "filtering itself is np.where(mask, logits, -np.inf)")
    V = logits.shape[-1]
    mistakes = [(top_k_mask(-logits, k), "that keeps the k smallest logits; sort in "
                                         "descending order (np.argsort(-logits))")]
    if k < V:
        mistakes.append((top_k_mask(logits, k + 1), "that keeps k + 1 tokens; keep exactly k"))
    if k > 1:
        mistakes.append((top_k_mask(logits, k - 1), "that keeps k − 1 tokens; keep exactly k"))
    if logits.ndim == 2:
        order = np.argsort(-logits, axis=0)[:k]
        wrong_axis = np.zeros(logits.shape, dtype=bool)
        np.put_along_axis(wrong_axis, order, True, axis=0)
        mistakes.append((wrong_axis, "the k largest of each column were kept; rank along "
                                     "the vocabulary, the last axis (axis=-1)"))
    return diagnose(arr, expected, mistakes)


def check_top_k(fn):
    """fn(logits, k) -> bool mask of logits' shape, True at the k largest logits of each
    row (compared with minitf.generate.top_k_mask)."""
    return run_cases("top_k", fn, _top_k_cases(), _judge_top_k)


# ------------------------------------------------------------------------ top-p

def _top_p_cases():
    rng = np.random.default_rng(72)
    return [
        (np.array([0.05, 0.4, 0.1, 0.3, 0.15]), 0.75),  # 0.4 + 0.3 < 0.75: 0.15 joins
        (softmax(rng.normal(size=(3, 8)) * 1.5), 0.9),
        (np.array([0.7, 0.1, 0.08, 0.06, 0.06]), 0.5),  # the top token alone passes p
        (softmax(rng.normal(size=(2, 6))), 0.6),
    ]


def _cumulative_keep(probs, p, *, descending=True, strict_before=True):
    """Variants of the nucleus rule: rank, add up, keep while the running total is small."""
    order = np.argsort(-probs if descending else probs, axis=-1, kind="stable")
    ranked = np.take_along_axis(probs, order, axis=-1)
    mass = np.cumsum(ranked, axis=-1)
    if strict_before:
        keep_ranked = mass - ranked < p
    else:
        keep_ranked = mass < p  # drops the token that crosses p
    keep = np.zeros(probs.shape, dtype=bool)
    np.put_along_axis(keep, order, keep_ranked, axis=-1)
    return keep


def _judge_top_p(got, probs, p):
    expected = top_p_mask(probs, p)
    arr = _as_array(got)
    if arr is None or got is None:
        return _describe_none(got)
    if arr.shape == expected.shape and np.issubdtype(arr.dtype, np.floating):
        return (f"returned {arr.dtype} values; return a boolean mask (True = keep), the "
                "filtering itself is np.where(mask, probs, 0)")
    return diagnose(arr, expected, [
        (_cumulative_keep(probs, p, strict_before=False),
         "the token that carries the running total past p was dropped (keeping while "
         "cumsum < p); keep a token when the mass *before* it is below p, so the kept "
         "mass reaches p"),
        (np.cumsum(probs, axis=-1) - probs < p,
         "the running total was taken in vocabulary order; sort by probability first, "
         "most probable first"),
        (_cumulative_keep(probs, p, descending=False),
         "that ranks the least probable first; sort in descending order"),
        (probs >= p, "tokens whose own probability is ≥ p were kept; p is a bound on the "
                     "total mass of the kept tokens"),
    ])


def check_top_p(fn):
    """fn(probs, p) -> bool mask of probs' shape: the nucleus, the most probable tokens
    whose total probability first reaches p (compared with minitf.generate.top_p_mask)."""
    return run_cases("top_p", fn, _top_p_cases(), _judge_top_p)

"""Checkers for the exercises of notebook 06: the causal mask, masked attention and the
decoder layer.

Each checker runs the learner's function on a few cases, compares it with minitf, and when
the answer is wrong also tests it against the usual mistakes, so the report can say which
one it is (a transposed mask, masking after the softmax, pre-LN order, ...).
"""

import warnings

import numpy as np

from ..attention import causal_mask, padding_mask, scaled_dot_product_attention, softmax
from ..decoder import DecoderLayer
from .core import CheckResult, describe_difference

__all__ = ["check_causal_mask", "check_masked_attention", "check_decoder_layer"]

NOT_WRITTEN = "not written yet: replace `raise NotImplementedError` with your code"


def run_cases(name, fn, cases, judge):
    """Call fn(*case) for each case; judge(got, *case) returns None or what is wrong.

    The learner's exceptions are reported, not raised; NotImplementedError reads as
    "not written yet". Used by the checkers of notebooks 05 and 06.
    """
    lines = []
    for i, case in enumerate(cases, 1):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")  # overflow and NaN show up in the report
                got = fn(*case)
        except NotImplementedError:
            return CheckResult(name, False, [NOT_WRITTEN])
        except Exception as error:  # noqa: BLE001 - a checker reports, it never raises
            lines.append(f"case {i}: raised {type(error).__name__}: {error}")
            continue
        try:
            problem = judge(got, *case)
        except Exception as error:  # noqa: BLE001 - e.g. a learner's result of a strange type
            problem = f"returned something unexpected ({type(error).__name__}: {error})"
        if problem:
            lines.append(f"case {i}: {problem}")
    if lines:
        return CheckResult(name, False, lines)
    return CheckResult(name, True, ["1 case agrees with minitf" if len(cases) == 1
                                    else f"{len(cases)} cases agree with minitf"])


def diagnose(got, expected, known_mistakes, rtol=1e-5, atol=1e-6):
    """None if `got` matches `expected`; otherwise what differs, plus the name of the first
    known mistake (a list of (wrong_result, hint)) that `got` reproduces. A mistake is
    matched 10 times more loosely than a right answer, so that a slip made together with a
    harmless difference in rounding is still recognised."""
    problem = describe_difference(got, expected, rtol, atol)
    if problem is None:
        return None
    got = np.asarray(got)
    for wrong, hint in known_mistakes:
        wrong = np.asarray(wrong)
        if got.shape == wrong.shape and got.dtype.kind == wrong.dtype.kind:
            if (np.array_equal(got, wrong) if wrong.dtype == bool
                    else np.allclose(got, wrong, rtol=10 * rtol, atol=10 * atol)):
                return f"{problem} — {hint}"
    return problem


# ---------------------------------------------------------------- causal mask

def _judge_causal_mask(got, n):
    expected = causal_mask(n)
    if got is not None and np.asarray(got).dtype != bool and np.array_equal(got, expected):
        return (f"right pattern but dtype {np.asarray(got).dtype}; masks are boolean "
                "(use dtype=bool or .astype(bool))")
    upper = np.triu(np.ones((n, n), dtype=bool))
    return diagnose(got, expected, [
        (upper, "this is the transpose: row i (the query) may see columns 0..i, on and "
                "below the diagonal — np.tril, not np.triu"),
        (~expected, "True and False are swapped: True must mean 'may attend'"),
        (np.tril(np.ones((n, n), dtype=bool), k=-1),
         "the diagonal is False, but a position may attend to itself"),
    ])


def check_causal_mask(fn):
    """fn(n) -> (n, n) bool, True on and below the diagonal."""
    return run_cases("causal_mask", fn, [(1,), (2,), (5,)], _judge_causal_mask)


# ------------------------------------------------------------ masked attention

def _attention_without_scaling(q, k, v, mask):
    scores = np.where(mask, q @ np.swapaxes(k, -1, -2), -np.inf)
    return softmax(scores)


def _softmax_then_mask(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    return softmax(scores) * mask


def _masked_scores_zero(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    return softmax(np.where(mask, scores, 0.0))


def _judge_masked_attention(got, q, k, v, mask):
    if not isinstance(got, tuple) or len(got) != 2:
        return (f"returned a {type(got).__name__}; return the pair (out, weights)")
    out, weights = got
    expected_out, expected_weights = scaled_dot_product_attention(q, k, v, mask)
    problem = diagnose(weights, expected_weights, [
        (_softmax_then_mask(q, k, v, mask),
         "the masked weights are 0 but the rows no longer sum to 1: mask the scores "
         "with -inf before the softmax, not the weights after it"),
        (_masked_scores_zero(q, k, v, mask),
         "masked positions still get weight: a score of 0 gives exp(0) = 1; use -np.inf"),
        (softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])),
         "the mask was not applied: masked positions must get weight 0"),
        (_attention_without_scaling(q, k, v, mask),
         "the scores were not divided by √d_k"),
    ])
    if problem:
        return "weights: " + problem
    problem = describe_difference(out, expected_out)
    if problem:
        return "out: " + problem + " (out = weights @ v)"
    return None


def _masked_attention_cases():
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((4, 3)) for _ in range(3))
    tokens = np.array([[7, 8, 9, 2, 0, 0], [7, 2, 0, 0, 0, 0]])
    return [
        (q, k, v, causal_mask(4)),  # one sequence, (L, L) scores
        (rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 6, 4)),
         rng.standard_normal((2, 6, 3)), padding_mask(tokens)[:, 0]),  # (2, 1, 6) padding
        (2 * rng.standard_normal((2, 3, 5, 4)), 2 * rng.standard_normal((2, 3, 5, 4)),
         rng.standard_normal((2, 3, 5, 2)), causal_mask(5)),  # (B, h, L, L) like the model
    ]


def check_masked_attention(fn):
    """fn(q, k, v, mask) -> (out, weights), as minitf.attention.scaled_dot_product_attention."""
    return run_cases("masked_attention", fn, _masked_attention_cases(),
                     _judge_masked_attention)


# --------------------------------------------------------------- decoder layer

def _decoder_mistakes(y, memory, layer, tgt_mask, memory_mask):
    """(wrong output, hint) for the usual slips in a post-LN decoder layer."""
    sa, ca, ffn = layer.self_attn, layer.cross_attn, layer.ffn
    n1, n2, n3 = layer.norm1, layer.norm2, layer.norm3

    def post_ln(self_mask=tgt_mask, from_memory=True, residual=True):
        keep = 1.0 if residual else 0.0
        h = n1(keep * y + sa(y, mask=self_mask))
        cross = ca(h, memory, mask=memory_mask) if from_memory else ca(h)
        h = n2(keep * h + cross)
        return n3(keep * h + ffn(h))

    pre = y + sa(n1(y), mask=tgt_mask)
    pre = pre + ca(n2(pre), memory, mask=memory_mask)
    pre = pre + ffn(n3(pre))
    return [
        (pre, "that is the pre-LN order; this exercise is post-LN: "
              "y = norm(y + sublayer(y)) after each sub-layer"),
        (post_ln(from_memory=False), "the cross-attention must take its keys and values "
                                     "from `memory`: cross_attn(y, memory, mask=memory_mask)"),
        (post_ln(self_mask=None), "the masked self-attention ignores tgt_mask, so it "
                                  "looks at later tokens"),
        (post_ln(residual=False), "a residual connection is missing: add the sub-layer's "
                                  "input back before each norm"),
    ]


def _judge_decoder_layer(got, y, memory, layer, tgt_mask, memory_mask):
    expected = layer(y, memory, tgt_mask, memory_mask)
    return diagnose(got, expected, _decoder_mistakes(y, memory, layer, tgt_mask, memory_mask))


def perturb_norms_and_biases(module, seed):
    """Move every LayerNorm γ, β and every bias of `module` away from its initial 1 or 0
    (in place), so that an answer which leaves one of them out gives another output."""
    rng = np.random.default_rng(seed)
    state = module.state_dict()
    for name, value in state.items():
        if name.endswith(("gamma", "beta")) or ".b" in name:
            state[name] = value + 0.3 * rng.standard_normal(value.shape)
    module.load_state_dict(state)
    return module


def _random_decoder_layer(d_model, num_heads, d_ff, seed):
    layer = DecoderLayer(d_model, num_heads, d_ff, dtype=np.float64, rng=seed)
    return perturb_norms_and_biases(layer, seed + 100)


def _decoder_cases():
    rng = np.random.default_rng(60)
    src = np.array([[5, 6, 7, 2, 0], [8, 2, 0, 0, 0]])
    return [
        (rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 5, 8)),
         _random_decoder_layer(8, 2, 16, seed=1), causal_mask(4), padding_mask(src)),
        (rng.standard_normal((1, 3, 12)), rng.standard_normal((1, 2, 12)),
         _random_decoder_layer(12, 3, 24, seed=2), causal_mask(3), None),
    ]


def check_decoder_layer(fn):
    """fn(y, memory, layer, tgt_mask, memory_mask) -> the post-LN decoder layer's output,
    built from layer.self_attn, layer.norm1, layer.cross_attn, layer.norm2, layer.ffn,
    layer.norm3."""
    return run_cases("decoder_layer", fn, _decoder_cases(), _judge_decoder_layer)

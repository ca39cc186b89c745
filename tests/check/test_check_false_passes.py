"""The eight false passes the reviews found (issue 32), written as a learner would, and their
neighbours: each now fails on the case that was missing, with its hint. (The known-mistake
test runs the checker's own Mistake functions; these are independent spellings of the same
bugs.)"""

import numpy as np
import pytest
from check_solutions import SOLUTIONS

import minitf.check
from minitf import tasks
from minitf.check import EXERCISES_BY_CHECKER
from minitf.multihead import merge_heads, split_heads

# ------------------------------------------------------------------- 00 · pad


def pad_width_of_the_first(sequences, pad_id=0):
    L = len(sequences[0])
    out = np.full((len(sequences), L), pad_id)
    for i, s in enumerate(sequences):
        out[i, :len(s)] = s
    return out


# --------------------------------------------------------------- 01 · softmax

def softmax_2d_idiom(x):
    e = np.exp((x.T - x.max(-1)).T)
    return (e.T / e.sum(-1)).T


def softmax_axis_1(x):
    axis = 1 if x.ndim > 1 else 0
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_row_mean(x):
    e = np.exp(x - x.mean(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ------------------------------------------------------- 02 · qkv, attention

def qkv_v_of_width_d_k(X, W_q, W_k, W_v):
    d_k = W_q.shape[1]
    P = X @ np.concatenate([W_q, W_k, W_v], axis=1)
    return P[..., :d_k], P[..., d_k:2 * d_k], P[..., 2 * d_k:3 * d_k]


def attention_row_mean(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.mean(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def attention_row_mean_in_float32(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5  # a Python float keeps float32
    e = np.exp(scores - scores.mean(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def attention_without_keepdims(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1))
    return e / e.sum(axis=-1, keepdims=True) @ V


# -------------------------------------------------------------- 07 · beam search

def beam_search_ranked_by_log_p(step, beam_size, max_len, length_penalty):
    beam, finished = [([tasks.BOS_ID], 0.0)], []
    for _ in range(max_len):
        candidates = []
        for tokens, logp in beam:
            for token, token_logp in enumerate(step(tokens)):
                candidates.append((tokens + [token], logp + token_logp))
        candidates.sort(key=lambda c: -c[1])
        beam = []
        for tokens, logp in candidates[:beam_size - len(finished)]:
            (finished if tokens[-1] == tasks.EOS_ID else beam).append((tokens, logp))
        if not beam:
            break
    everything = sorted(finished + beam, key=lambda h: -h[1])  # raw log p decides the order
    return [(tokens[1:], logp / ((5 + len(tokens) - 1) / 6) ** length_penalty)
            for tokens, logp in everything]


def beam_search_finished_stay_in_the_beam(step, beam_size, max_len, length_penalty):
    beam = [([tasks.BOS_ID], 0.0, False)]  # (tokens, log p, finished)
    for _ in range(max_len):
        candidates = [h for h in beam if h[2]]
        for tokens, logp, done in beam:
            if not done:
                for token, token_logp in enumerate(step(tokens)):
                    candidates.append((tokens + [token], logp + token_logp,
                                       token == tasks.EOS_ID))
        beam = sorted(candidates, key=lambda h: -h[1])[:beam_size]
        if all(done for _, _, done in beam):
            break
    return sorted(((tokens[1:], logp / ((5 + len(tokens) - 1) / 6) ** length_penalty)
                   for tokens, logp, _ in beam), key=lambda h: -h[1])


# --------------------------------------------------- 03, 04 · likely mistakes with no hint

def merge_by_concatenate(x):
    return np.concatenate(x, axis=-1)


def multi_head_with_w_o_columns(x, params, num_heads):
    d_k = x.shape[-1] // num_heads
    out = params["b_o"]
    for i in range(num_heads):
        cols = slice(i * d_k, (i + 1) * d_k)
        q, k, v = (x @ params[f"W_{n}"][:, cols] + params[f"b_{n}"][cols] for n in "qkv")
        w = np.exp(q @ k.transpose(0, 2, 1) / np.sqrt(d_k))
        out = out + (w / w.sum(-1, keepdims=True)) @ v @ params["W_o"][:, cols]
    return out


def multi_head_without_qkv_biases(x, params, num_heads):
    q, k, v = (split_heads(x @ params[f"W_{n}"], num_heads) for n in "qkv")
    w = np.exp(q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1]))
    return merge_heads((w / w.sum(-1, keepdims=True)) @ v) @ params["W_o"] + params["b_o"]


def rope_in_place_through_views(x):
    L, d = x.shape[-2:]
    theta = np.arange(L)[:, None] / 10000 ** (np.arange(0, d, 2) / d)
    a, b = x[..., 0::2], x[..., 1::2]
    x[..., 0::2] = a * np.cos(theta) - b * np.sin(theta)
    x[..., 1::2] = a * np.sin(theta) + b * np.cos(theta)
    return x


# (checker, the wrong answer, the start of its hint, the case numbers that fail: the new ones)
FALSE_PASSES = [
    ("check_pad", pad_width_of_the_first, "the width is the longest sequence's length",
     [4, 5]),
    ("check_softmax", softmax_2d_idiom, "(x.T - x.max(-1)).T works for a matrix only",
     [10, 11]),
    ("check_softmax", softmax_axis_1, "axis=1 is the last axis only for a matrix", [10, 11]),
    ("check_softmax", softmax_row_mean, "subtract each row's max, not its mean", [8, 9]),
    ("check_qkv", qkv_v_of_width_d_k, "V is the last d_v columns", [3]),
    ("check_attention", attention_row_mean, "subtract each row's max, not its mean", [5]),
    ("check_attention", attention_row_mean_in_float32, "subtract each row's max, not its mean",
     [5]),
    ("check_beam_search", beam_search_ranked_by_log_p,
     "the n-best list is sorted by raw log p", [6]),
    ("check_beam_search", beam_search_finished_stay_in_the_beam,
     "finished hypotheses stayed in the beam", [6]),
]

NO_HINT_BEFORE = [
    ("check_attention", attention_without_keepdims, "scores.max(axis=-1) and the sum"),
    ("check_merge_heads", merge_by_concatenate, "np.concatenate(x, axis=-1) walks over"),
    ("check_multi_head", multi_head_with_w_o_columns, "head i's output (d_k columns) goes"),
    ("check_multi_head", multi_head_without_qkv_biases, "b_q, b_k and b_v are missing"),
    ("check_rope", rope_in_place_through_views, "x[..., 0::2] is a view"),
]


@pytest.mark.parametrize(("name", "wrong", "hint", "failing"), FALSE_PASSES,
                         ids=[f"{n}-{w.__name__}" for n, w, _, _ in FALSE_PASSES])
def test_a_false_pass_now_fails_on_the_new_case_with_its_hint(name, wrong, hint, failing):
    result = getattr(minitf.check, name)(wrong)
    assert not result, f"{wrong.__name__} passes {name}"
    assert [case.number for case in result.cases] == failing, str(result)
    assert len(result.hints) == 1 and result.hints[0].startswith(hint), str(result)


@pytest.mark.parametrize(("name", "wrong", "hint"), NO_HINT_BEFORE,
                         ids=[f"{n}-{w.__name__}" for n, w, _ in NO_HINT_BEFORE])
def test_a_likely_mistake_gets_its_hint(name, wrong, hint):
    result = getattr(minitf.check, name)(wrong)
    assert not result and len(result.hints) == 1, str(result)
    assert result.hints[0].startswith(hint), str(result)


@pytest.mark.parametrize("name", sorted({n for n, _, _, _ in FALSE_PASSES}))
def test_the_new_cases_keep_the_right_answer_passing(name):
    """No false fail: the notebook's solution passes the cases added."""
    assert getattr(minitf.check, name)(SOLUTIONS[name])


def test_softmax_cases_span_the_shapes_and_ranges_the_false_passes_missed():
    shapes, spans = set(), {}
    for case in EXERCISES_BY_CHECKER["check_softmax"].cases():
        x = np.asarray(case.args[0])
        shapes.add(x.ndim)
        spans[x.dtype] = max(spans.get(x.dtype, 0.0), np.ptp(x, axis=-1).max())
    assert shapes == {1, 2, 3, 4}
    assert spans[np.dtype(np.float64)] > 1500 and spans[np.dtype(np.float32)] > 200


def test_qkv_has_a_case_with_d_v_wider_than_d_k():
    cases = EXERCISES_BY_CHECKER["check_qkv"].cases()
    assert any(c.args[3].shape[1] > c.args[1].shape[1] for c in cases)


def test_a_beam_case_where_the_length_penalty_reverses_the_order():
    """In one case the best hypothesis by log p / lp(len) is not the best by raw log p."""
    def raw(hypothesis, alpha):
        tokens, score = hypothesis
        return score * ((5 + len(tokens)) / 6) ** alpha

    exercise, reversed_ = EXERCISES_BY_CHECKER["check_beam_search"], []
    for case in exercise.cases():
        n_best, alpha = exercise.reference(*case.args), case.args[3]
        by_raw = sorted(n_best, key=lambda h: -raw(h, alpha))
        reversed_.append(by_raw[0][0] != n_best[0][0])
    assert any(reversed_)

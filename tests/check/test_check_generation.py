"""The two checkers notebook 07 adds, beyond the four tests every checker gets: the beam
search reference (the checker's readable `_beam`) equals minitf's vectorised beam_search, on
real models and on made-up step functions, the n-best comparison is fair to ties, and the
KV-cache checker agrees with minitf's cached attention."""

import numpy as np
import pytest
from check_solutions import SOLUTIONS

from minitf import tasks
from minitf.attention import log_softmax, padding_mask, softmax
from minitf.check import check_beam_search, check_kv_cache
from minitf.check.nb07 import (
    StepFunction,
    _beam,
    _beam_cases,
    _compare_n_best,
    _recomputed_steps,
)
from minitf.generate import beam_search
from minitf.model import Transformer
from minitf.multihead import MultiHeadAttention

# ------------------------------------------------------------------ beam search

def model_step(model, src):
    """A step function from a real translator: log p(next token | prefix, src)."""
    memory, memory_mask = model.encode(src), padding_mask(src)

    def step(prefix):
        logits = model.decode(np.array([prefix]), memory, memory_mask)[0, -1].astype(np.float64)
        logits[tasks.PAD_ID] = -np.inf
        return log_softmax(logits)
    return step


@pytest.mark.parametrize(("seed", "beam_size", "alpha"), [(0, 3, 0.6), (1, 4, 0.0), (2, 2, 1.0)])
def test_the_reference_is_minitfs_beam_search_on_a_real_model(seed, beam_size, alpha):
    model = Transformer(14, 14, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8,
                        dtype=np.float64, rng=seed)
    src = np.array([[5, 9, 7, 2]])
    _, n_best = beam_search(model, src, beam_size=beam_size, max_len=6, length_penalty=alpha,
                            return_all=True)
    expected = [(ids.tolist(), float(score)) for ids, score in n_best[0]]
    step = model_step(model, src)
    assert _compare_n_best(_beam(step, beam_size, 6, alpha), expected) is None
    learner = SOLUTIONS["check_beam_search"](step, beam_size, 6, alpha)
    assert _compare_n_best(learner, expected) is None


class StepTransformer(Transformer):
    """A Transformer whose next-token log-probabilities come from a step function, so that
    minitf's beam_search can search over it (without a cache): the decoder's last position
    gives step(prefix) for every row. Only this test needs such a model."""

    def __init__(self, step, vocab_size, max_len):
        super().__init__(vocab_size, vocab_size, d_model=2, num_heads=1, num_layers=1, d_ff=2,
                         max_len=max_len, dtype=np.float64, rng=0)
        self.step = step

    def encode(self, src):
        return np.zeros((len(src), src.shape[1], 2))

    def decode(self, tgt_in, memory, memory_mask=None, *, cache=None, start=0):
        assert cache is None and start == 0
        logits = np.zeros(tgt_in.shape + (self.config.tgt_vocab_size,))  # (N, t+1, V)
        logits[:, -1] = np.stack([self.step(row) for row in tgt_in])
        return logits


@pytest.mark.parametrize("seed", range(12))
def test_beam_search_equals_the_readable_beam_on_random_step_functions(seed):
    rng = np.random.default_rng(seed)
    V = int(rng.integers(5, 10))
    step = StepFunction(V, seed, eos_growth=float(rng.uniform(-1, 1.5)),
                        twins=(3, 4) if seed % 3 == 0 else None)
    beam_size, max_len = int(rng.integers(1, 5)), int(rng.integers(1, 7))
    alpha = float(rng.choice([0.0, 0.6, 1.0]))
    model = StepTransformer(step, V, max_len)
    _, n_best = beam_search(model, np.array([[tasks.EOS_ID]]), beam_size=beam_size,
                            max_len=max_len, length_penalty=alpha, use_cache=False,
                            return_all=True)
    vectorised = [(ids.tolist(), float(score)) for ids, score in n_best[0]]
    assert _compare_n_best(vectorised, _beam(step, beam_size, max_len, alpha)) is None


def test_the_cases_cover_ties_early_eos_and_a_full_beam_at_max_len():
    n_bests = [(_beam(*c.args), c.args) for c in _beam_cases()]
    early = [n for n, args in n_bests if [tasks.EOS_ID] in [h[0] for h in n]]
    tied = [n for n, _ in n_bests if any(a[1] == b[1] for a, b in zip(n, n[1:]))]
    full = [n for n, args in n_bests if all(h[0][-1] != tasks.EOS_ID for h in n)]
    assert early and tied and full
    assert all(len({tuple(h[0]) for h in n}) == len(n) for n, _ in n_bests)


def test_tied_hypotheses_may_come_in_either_order():
    tie_case = _beam_cases()[2]
    n_best = _beam(*tie_case.args)
    assert n_best[0][1] == n_best[1][1] and n_best[0][0] != n_best[1][0]
    assert _compare_n_best(n_best[::-1], n_best) is None
    assert _compare_n_best([n_best[0], n_best[0]], n_best) == (
        "[3, 4, 7, 2] (score -1.363) appears twice")


def test_the_n_best_comparison_says_what_differs():
    n_best = [([4, 2], -1.5), ([5, 6, 2], -2.0), ([7, 2], -3.0)]
    assert _compare_n_best(n_best, n_best) is None
    assert _compare_n_best(n_best[:2], n_best) == (
        "returned 2 hypotheses, expected 3; missing [7, 2] (score -3)")
    assert _compare_n_best(n_best + [([3, 2], -4.0)], n_best) == (
        "returned 4 hypotheses, expected 3: [3, 2] (score -4) is one too many")
    assert _compare_n_best([([4, 2], -1.6)] + n_best[1:], n_best) == (
        "hypothesis 1, tokens [4, 2]: score -1.6, expected -1.5")
    assert _compare_n_best([n_best[1], n_best[0], n_best[2]], n_best) == (
        "hypothesis 1 (best first) is [5, 6, 2] (score -2); expected [4, 2] (score -1.5)")
    assert _compare_n_best([(np.array([4, 2]), np.float32(-1.5))] + n_best[1:], n_best) is None
    assert _compare_n_best({"a": 1}, n_best).startswith("returned a dict")
    assert _compare_n_best([([4.5], -1.0)], n_best).startswith("item 0: the tokens are")
    assert _compare_n_best([([4], "high")], n_best).startswith("item 0: the score is")


def test_another_correct_beam_search_passes():
    def beam_search_pruned(step, beam_size, max_len, length_penalty):
        """Keeps only each hypothesis's beam_size best tokens, and sorts (score, tokens)
        descending: ties go the other way, which the cases must not depend on."""
        beam, finished = [(0.0, [tasks.BOS_ID])], []
        for _ in range(max_len):
            candidates = []
            for logp, tokens in beam:
                next_logp = step(np.array(tokens))
                for token in np.argsort(-next_logp)[:beam_size]:
                    candidates.append((logp + next_logp[token], tokens + [int(token)]))
            candidates.sort(reverse=True)
            beam = []
            for logp, tokens in candidates[:beam_size - len(finished)]:
                (finished if tokens[-1] == tasks.EOS_ID else beam).append((logp, tokens))
            if not beam:
                break
        return sorted(((t[1:], s / ((5 + len(t) - 1) / 6) ** length_penalty)
                       for s, t in finished + beam), key=lambda h: h[1], reverse=True)

    assert check_beam_search(beam_search_pruned)


def learner_beam_search(step, beam_size, max_len, length_penalty, *, eos_in_len=True,
                        keep_live=True, stop_at_first=False):
    """The notebook's solution with one of three slips (review 07-3)."""
    beam, finished = [([tasks.BOS_ID], 0.0)], []
    for _ in range(max_len):
        candidates = []
        for tokens, logp in beam:
            for token, token_logp in enumerate(step(tokens)):
                if np.isfinite(token_logp):
                    candidates.append((tokens + [token], logp + token_logp))
        candidates.sort(key=lambda c: -c[1])
        beam = []
        for tokens, logp in candidates[:beam_size - len(finished)]:
            (finished if tokens[-1] == tasks.EOS_ID else beam).append((tokens, logp))
        if not beam or (stop_at_first and finished):
            break

    def length(tokens):  # without <bos>; without <eos> too, in the slip
        return len(tokens) - 1 - (not eos_in_len and tokens[-1] == tasks.EOS_ID)

    n_best = [(tokens[1:], logp / ((5 + length(tokens)) / 6) ** length_penalty)
              for tokens, logp in finished + (beam if keep_live else [])]
    return sorted(n_best, key=lambda h: -h[1])


@pytest.mark.parametrize(("slip", "hint"), [
    ({}, None),
    ({"eos_in_len": False}, "counts the <eos> too"),
    ({"keep_live": False}, "still in the beam after max_len steps count as finished"),
    ({"stop_at_first": True}, "stopped at the first finished hypothesis"),
])
def test_the_beam_search_slips_get_their_hints(slip, hint):
    result = check_beam_search(lambda *a: learner_beam_search(*a, **slip))
    if hint is None:
        assert result, str(result)
    else:
        assert not result and len(result.hints) == 1 and hint in result.hints[0], str(result)


def test_the_step_function_is_a_fixed_distribution_per_prefix():
    step = StepFunction(8, 1, eos_growth=0.5)
    a, b, c = step([1, 4]), step((1, 4)), step(np.array([1, 4]))
    assert np.array_equal(a, b) and np.array_equal(a, c)
    assert not np.array_equal(a, step([1, 5]))
    assert np.isclose(np.exp(a).sum(), 1.0)
    assert a[tasks.PAD_ID] == a[tasks.BOS_ID] == -np.inf and np.isfinite(a[2:]).all()
    twins = StepFunction(8, 3, twins=(3, 4))
    assert np.array_equal(twins([1, 3, 6]), twins([1, 4, 6]))
    for bad, message in [([[1, 4]], "one prefix"), ([4, 5], "starts with <bos>"),
                         ([1, 9], "must be in 0..7"), ([], "one prefix"),
                         ([1.0, 4.0], "one prefix")]:
        with pytest.raises(ValueError, match=message):
            step(bad)


def test_forgetting_bos_is_reported_in_the_step_functions_words():
    def no_bos(step, beam_size, max_len, length_penalty):
        return [([int(np.argmax(step([])))], 0.0)]

    text = str(check_beam_search(no_bos))
    assert "raised ValueError: step takes one prefix, a 1-D sequence of ids" in text


# ---------------------------------------------------------------------- KV cache

def kv_solution():
    return SOLUTIONS["check_kv_cache"]


def test_the_expected_steps_are_minitfs_cached_attention():
    """One head, no biases, W_o = I: minitf's MultiHeadAttention fed one position at a time
    with its cache gives the z_t the checker expects."""
    rng = np.random.default_rng(0)
    d = 4
    X = rng.normal(size=(2, 5, d))
    mha = MultiHeadAttention(d, 1, dtype=np.float64, rng=1)
    mha.W_o[...] = np.eye(d)
    cache = {}
    steps = _recomputed_steps(X, mha.W_q, mha.W_k, mha.W_v)
    for t, (z, k, v) in enumerate(steps):
        out = mha(X[:, t:t + 1], cache=cache)[:, 0]  # (B, d)
        np.testing.assert_allclose(out, z, atol=1e-12)
        np.testing.assert_allclose(cache["k"][:, 0], k, atol=1e-12)  # (B, t+1, d_k)
        np.testing.assert_allclose(cache["v"][:, 0], v, atol=1e-12)


def test_a_cache_that_grows_by_two_is_named():
    def appends_twice(x_t, cache, W_q, W_k, W_v):
        z, cache = kv_solution()(x_t, cache, W_q, W_k, W_v)
        cache["k"] = np.concatenate([cache["k"], cache["k"][..., -1:, :]], axis=-2)
        return z, cache

    text = str(check_kv_cache(appends_twice))
    assert "step 1 (0 positions cached before it): cache['k'] has shape (2, 4), expected " \
           "(1, 4) (one more position per step)" in text


@pytest.mark.parametrize(("answer", "message"), [
    (lambda x_t, cache, W_q, W_k, W_v: x_t @ W_v, "step 1 (0 positions cached before it): "
                                                  "returned an array of shape (3,); return "
                                                  "the pair (z_t, cache)"),
    (lambda x_t, cache, W_q, W_k, W_v: (x_t @ W_v, None), "the cache returned is None"),
    (lambda x_t, cache, W_q, W_k, W_v: (x_t @ W_v, {"k": 1}), "expected a dict with 'k' and 'v'"),
    (lambda x_t, cache, W_q, W_k, W_v: (x_t @ W_v, cache),
     "step 1 (0 positions cached before it): cache['k'] has shape (0, 4), expected (1, 4) "
     "(one more position per step)"),
])
def test_malformed_steps_are_named(answer, message):
    result = check_kv_cache(answer)
    assert not result and result.hints == [] and message in str(result), str(result)


def test_a_cache_kept_outside_the_dict_is_caught():
    def keeps_its_own_cache(x_t, cache, W_q, W_k, W_v, _seen=[]):  # noqa: B006 - on purpose
        _seen.append(x_t @ W_k)
        z, _ = kv_solution()(x_t, {"k": np.array(_seen), "v": cache["v"]}, W_q, W_k, W_v)
        return z, cache

    result = check_kv_cache(keeps_its_own_cache)
    assert not result


def test_scores_before_appending_get_the_hint_with_any_softmax():
    """With minitf's softmax, step 1 attends over no positions and gives z = 0; with a
    softmax of one's own, x.max() of no positions raises. Both get the hint (review 07-2)."""
    def scores_first(own_softmax):
        def step(x_t, cache, W_q, W_k, W_v):
            q, k, v = x_t @ W_q, x_t @ W_k, x_t @ W_v
            scores = (cache["k"] @ q[..., None])[..., 0] / np.sqrt(q.shape[-1])
            z = (own_softmax(scores)[..., None, :] @ cache["v"])[..., 0, :]
            K = np.concatenate([cache["k"], k[..., None, :]], axis=-2)
            V = np.concatenate([cache["v"], v[..., None, :]], axis=-2)
            return z, {"k": K, "v": V}
        return step

    def softmax_mine(s):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    for own in (softmax, softmax_mine):
        result = check_kv_cache(scores_first(own))
        assert not result and len(result.hints) == 1, str(result)
        assert "append k_t and v_t to the cache before computing the scores" in result.hints[0]


def test_the_z_of_every_step_is_compared():
    def wrong_at_step_3(x_t, cache, W_q, W_k, W_v):
        z, cache = kv_solution()(x_t, cache, W_q, W_k, W_v)
        return (z + 1 if cache["k"].shape[-2] == 3 else z), cache

    text = str(check_kv_cache(wrong_at_step_3))
    assert "step 3 (2 positions cached before it): z_t: " in text

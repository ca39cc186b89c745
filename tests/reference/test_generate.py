import functools
import itertools

import numpy as np
import pytest

from minitf.generate import (
    beam_search,
    greedy_decode,
    log_softmax,
    sample,
    top_k_mask,
    top_p_mask,
)
from minitf.model import Transformer

V_SRC, V_TGT = 13, 11
PAD, BOS, EOS = 0, 1, 2


def tiny_model(seed=0, norm_first=False, eos_bias=0.0, **kw):
    args = dict(d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=40, rng=seed,
                norm_first=norm_first)
    args.update(kw)
    model = Transformer(V_SRC, V_TGT, **args)
    model.generator.b[EOS] += eos_bias
    return model


def random_src(B, L=7, seed=1):
    src = np.random.default_rng(seed).integers(3, V_SRC, size=(B, L))
    src[::2, L - 2:] = PAD  # some rows are padded
    return src


def check_conventions(out, max_len, eos_id=EOS):
    """eos kept, <pad> after it, nothing after max_len; returns which rows stopped early."""
    assert out.dtype == np.int64 and out.ndim == 2 and 1 <= out.shape[1] <= max_len
    stopped = np.zeros(len(out), dtype=bool)
    for i, row in enumerate(out):
        ends = np.flatnonzero(row == eos_id) if eos_id is not None else []
        if len(ends):
            stopped[i] = True
            assert (row[ends[0] + 1:] == PAD).all()
            assert (row[:ends[0]] != PAD).all()
        else:
            assert (row != PAD).all()
    if eos_id is None:
        assert out.shape[1] == max_len
    elif out.shape[1] < max_len:
        assert stopped.all()
    return stopped


def set_mixed_eos_bias(model, src, max_len, decode=None):
    """Bisects the <eos> bias until some rows of greedy decoding stop early and others not.
    decode(model, src, max_len) -> ids; greedy_decode by default."""
    decode = decode or (lambda model, src, max_len: greedy_decode(model, src, max_len=max_len))
    low, high = -10.0, 10.0  # no row stops / every row stops
    for _ in range(30):
        model.generator.b[EOS] = (low + high) / 2
        stopped = check_conventions(decode(model, src, max_len), max_len)
        if stopped.any() and not stopped.all():
            return stopped
        low, high = (low, (low + high) / 2) if stopped.all() else ((low + high) / 2, high)
    raise AssertionError("no <eos> bias gives a mix of stopped and running rows")


@functools.cache
def _mixed_eos_bias(seed, B, norm_first, max_len):
    model = tiny_model(seed=seed, norm_first=norm_first)
    set_mixed_eos_bias(model, random_src(B, seed=seed), max_len)
    return model.generator.b[EOS]


def mixed_case(seed, B=5, norm_first=False, max_len=12):
    """A fresh model and src (B, 7) whose greedy decoding stops early in some rows only."""
    model = tiny_model(seed=seed, norm_first=norm_first)
    model.generator.b[EOS] = _mixed_eos_bias(seed, B, norm_first, max_len)
    return model, random_src(B, seed=seed)


def log_probs(model, src, tgt_in):
    """Teacher-forced next-token log-probabilities (B, L, V) in float64, <pad> excluded."""
    logits = model(src, tgt_in).astype(np.float64)
    logits[..., PAD] = -np.inf
    return log_softmax(logits)


def sequence_log_prob(model, src_row, ids):
    """log p(ids | src_row) by one teacher-forced forward pass."""
    tgt_in = np.concatenate([[BOS], ids[:-1]])[None]
    logp = log_probs(model, src_row[None], tgt_in)[0]
    return logp[np.arange(len(ids)), ids].sum()


def lp(length, alpha):
    return ((5 + length) / 6) ** alpha


# ---------------------------------------------------------------- cache == recompute


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("B", [1, 3, 5])
@pytest.mark.parametrize("eos_id", [None, EOS])
def test_greedy_cache_equals_recompute(norm_first, B, eos_id):
    model = tiny_model(seed=B, norm_first=norm_first, eos_bias=1.5)
    src = random_src(B)
    if B > 1:
        set_mixed_eos_bias(model, src, 15)
    with_cache = greedy_decode(model, src, max_len=15, eos_id=eos_id)
    without = greedy_decode(model, src, max_len=15, eos_id=eos_id, use_cache=False)
    np.testing.assert_array_equal(with_cache, without)
    stopped = check_conventions(with_cache, 15, eos_id)
    if eos_id is not None and B > 1:
        assert stopped.any() and not stopped.all()


@pytest.mark.parametrize("norm_first", [False, True])
def test_sample_and_beam_cache_equal_recompute(norm_first):
    model, src = mixed_case(seed=3, B=3, norm_first=norm_first)
    for kw in (dict(temperature=1.5, rng=0), dict(top_k=4, top_p=0.9, rng=1)):
        np.testing.assert_array_equal(sample(model, src, max_len=12, **kw),
                                      sample(model, src, max_len=12, use_cache=False, **kw))
    a, all_a = beam_search(model, src, beam_size=3, max_len=12, return_all=True)
    b, all_b = beam_search(model, src, beam_size=3, max_len=12, return_all=True,
                           use_cache=False)
    np.testing.assert_array_equal(a, b)
    for row_a, row_b in zip(all_a, all_b):
        assert [tuple(ids) for ids, _ in row_a] == [tuple(ids) for ids, _ in row_b]
        np.testing.assert_allclose([s for _, s in row_a], [s for _, s in row_b], rtol=1e-5)


# ---------------------------------------------------------------- conventions


def test_first_token_is_the_argmax_after_bos_and_bos_is_not_returned():
    model = tiny_model(seed=4)
    src = random_src(4, seed=4)
    out = greedy_decode(model, src, max_len=5, eos_id=None)
    expected = log_probs(model, src, np.full((4, 1), BOS))[:, 0].argmax(axis=-1)
    np.testing.assert_array_equal(out[:, 0], expected)
    assert out.shape == (4, 5)


def test_rows_stop_at_eos_and_pad_after():
    model, src = mixed_case(seed=5)
    for out in (greedy_decode(model, src, max_len=12),
                sample(model, src, max_len=12, rng=0, temperature=0.5),
                beam_search(model, src, beam_size=3, max_len=12)):
        check_conventions(out, 12)
    model.generator.b[EOS] = 30.0  # every row ends at once: T == 1
    for out in (greedy_decode(model, src, max_len=12), sample(model, src, max_len=12, rng=0),
                beam_search(model, src, max_len=12)):
        np.testing.assert_array_equal(out, np.full((5, 1), EOS))


def test_eos_none_never_stops():
    model = tiny_model(seed=6, eos_bias=30.0)
    src = random_src(2)
    for out in (greedy_decode(model, src, max_len=7, eos_id=None),
                sample(model, src, max_len=7, eos_id=None, rng=0),
                beam_search(model, src, max_len=7, eos_id=None)):
        assert out.shape == (2, 7) and (out == EOS).all()


def test_pad_is_never_generated():
    model = tiny_model(seed=1, eos_bias=-50.0)
    model.generator.b[PAD] += 50.0
    src = random_src(3)
    for out in (greedy_decode(model, src, max_len=6), sample(model, src, max_len=6, rng=0),
                beam_search(model, src, max_len=6)):
        assert (out != PAD).all() and out.shape == (3, 6)


def test_custom_bos_and_eos_ids():
    model = tiny_model(seed=7)
    src = random_src(3)
    free = greedy_decode(model, src, max_len=8, bos_id=5, eos_id=None)
    end = int(np.flatnonzero(free[0] == free[0, -1])[0])
    out = greedy_decode(model, src, max_len=8, bos_id=5, eos_id=int(free[0, -1]))
    np.testing.assert_array_equal(out[0, :end + 1], free[0, :end + 1])
    assert (out[0, end + 1:] == PAD).all()
    assert not (free == greedy_decode(model, src, max_len=8, eos_id=None)).all()


def test_float64_model():
    model = tiny_model(seed=8, dtype=np.float64)
    src = random_src(2)
    np.testing.assert_array_equal(greedy_decode(model, src, max_len=6),
                                  sample(model, src, max_len=6, top_k=1, rng=0))
    beam_search(model, src, max_len=6)


# ---------------------------------------------------------------- greedy as a special case


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_beam_size_1_is_greedy(norm_first, alpha):
    for seed in range(2):
        model, src = mixed_case(seed=seed, norm_first=norm_first)
        for eos_id in (EOS, None):
            np.testing.assert_array_equal(
                beam_search(model, src, beam_size=1, max_len=12, length_penalty=alpha,
                            eos_id=eos_id),
                greedy_decode(model, src, max_len=12, eos_id=eos_id))


def test_top_k_1_is_greedy():
    model, src = mixed_case(seed=9)
    greedy = greedy_decode(model, src, max_len=12)
    for temperature in (1e-30, 0.3, 1.0, 5.0):
        np.testing.assert_array_equal(
            sample(model, src, max_len=12, top_k=1, temperature=temperature, rng=1), greedy)


def test_tiny_top_p_is_greedy():
    model, src = mixed_case(seed=9)
    np.testing.assert_array_equal(sample(model, src, max_len=12, top_p=1e-6, rng=1),
                                  greedy_decode(model, src, max_len=12))


# ---------------------------------------------------------------- sampling


def test_sampling_is_reproducible_with_a_seed():
    model, src = mixed_case(seed=10)
    a = sample(model, src, max_len=12, rng=123)
    np.testing.assert_array_equal(a, sample(model, src, max_len=12, rng=123))
    np.testing.assert_array_equal(a, sample(model, src, max_len=12,
                                            rng=np.random.default_rng(123)))
    assert a.shape != sample(model, src, max_len=12, rng=124).shape or \
        (a != sample(model, src, max_len=12, rng=124)).any()
    np.testing.assert_array_equal(a, sample(model, src, max_len=12, rng=123, top_p=1.0))


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_sampled_first_tokens_follow_softmax_of_logits_over_temperature(temperature):
    n = 20_000
    model = tiny_model(seed=11)
    src = np.repeat([[5, 7]], n, axis=0)  # a short source: the encoder runs on 20,000 rows
    logits = model(src[:1], np.full((1, 1), BOS))[0, 0].astype(np.float64)
    logits[PAD] = -np.inf

    def within_5_sigma(counts, probs):
        return np.all(np.abs(counts - n * probs) <= 5 * np.sqrt(n * probs * (1 - probs)) + 1)

    first = sample(model, src, max_len=1, temperature=temperature, rng=0)[:, 0]
    counts = np.bincount(first, minlength=V_TGT)
    assert within_5_sigma(counts, np.exp(log_softmax(logits / temperature)))
    assert not within_5_sigma(counts, np.exp(log_softmax(logits)))  # the test can tell T apart


def test_sampled_first_tokens_follow_the_top_k_top_p_distribution():
    n = 20_000
    model = tiny_model(seed=12)
    src = np.repeat([[8, 4]], n, axis=0)
    logits = model(src[:1], np.full((1, 1), BOS))[0, 0].astype(np.float64)
    logits[PAD] = -np.inf
    probs = np.exp(log_softmax(logits))
    order = np.argsort(-probs)
    kept = order[:5]  # top_k=5 ...
    inside = probs[kept] / probs[kept].sum()
    kept = kept[:np.searchsorted(np.cumsum(inside), 0.6) + 1]  # ... then the 0.6 nucleus
    expected = np.zeros(V_TGT)
    expected[kept] = probs[kept] / probs[kept].sum()
    assert 1 < len(kept) < 5
    first = sample(model, src, max_len=1, top_k=5, top_p=0.6, rng=1)[:, 0]
    counts = np.bincount(first, minlength=V_TGT)
    assert counts[expected == 0].sum() == 0
    sigma = np.sqrt(n * expected * (1 - expected))
    assert np.all(np.abs(counts - n * expected) <= 5 * sigma + 1)


def test_top_k_mask():
    logits = np.array([[1.0, 3.0, 2.0, 3.0, -np.inf], [0.0, 0.0, 0.0, 0.0, 0.0]], np.float32)
    expected = {1: [[0, 1, 0, 0, 0], [1, 0, 0, 0, 0]],  # ties go to the lower id
                2: [[0, 1, 0, 1, 0], [1, 1, 0, 0, 0]],
                3: [[0, 1, 1, 1, 0], [1, 1, 1, 0, 0]],
                9: [[1, 1, 1, 1, 1], [1, 1, 1, 1, 1]]}
    for k, keep in expected.items():
        np.testing.assert_array_equal(top_k_mask(logits, k), np.array(keep, dtype=bool))


def test_top_p_mask_keeps_the_smallest_set_reaching_p():
    probs = np.array([0.125, 0.25, 0.5, 0.125, 0.0])
    cases = {1e-9: [2], 0.5: [2], 0.5001: [1, 2], 0.75: [1, 2],
             0.8: [0, 1, 2],  # 0 and 3 tie at the boundary: one of them, the lower id
             0.875: [0, 1, 2], 0.9: [0, 1, 2, 3], 1.0: [0, 1, 2, 3, 4]}
    for p, ids in cases.items():
        np.testing.assert_array_equal(np.flatnonzero(top_p_mask(probs, p)), ids, err_msg=p)
    uniform = np.full((2, 4), 0.25, dtype=np.float32)
    np.testing.assert_array_equal(top_p_mask(uniform, 0.5), [[1, 1, 0, 0]] * 2)
    np.testing.assert_array_equal(top_p_mask(uniform, 0.3), [[1, 1, 0, 0]] * 2)
    np.testing.assert_array_equal(top_p_mask(np.array([1.0, 0.0]), 0.99), [True, False])


def test_log_softmax_is_stable_and_keeps_float32():
    x = np.array([[1e4, 0.0, -np.inf], [-1e4, -1e4, -1e4]], dtype=np.float32)
    out = log_softmax(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out[0, :2], [0.0, -1e4], atol=1e-3)
    np.testing.assert_allclose(out[1], np.log([1 / 3] * 3), rtol=1e-6)
    assert out[0, 2] == -np.inf


# ---------------------------------------------------------------- beam search


def test_beam_finds_at_least_greedys_log_prob():
    wins = 0
    for seed in range(4):
        model, src = mixed_case(seed=20 + seed, B=3)
        greedy = greedy_decode(model, src, max_len=12)
        beam = beam_search(model, src, beam_size=4, max_len=12, length_penalty=0.0)
        for g, b, s in zip(greedy, beam, src):
            g_logp = sequence_log_prob(model, s, g[:1] if g[0] == EOS else g[g != PAD])
            b_logp = sequence_log_prob(model, s, b[:1] if b[0] == EOS else b[b != PAD])
            assert b_logp >= g_logp - 1e-4
            wins += b_logp > g_logp + 1e-4
    assert wins  # beam search does find better sequences than greedy


def test_beam_with_a_beam_wider_than_every_hypothesis_is_exhaustive():
    alpha, max_len = 0.6, 3
    model = tiny_model(seed=30, eos_bias=1.5)
    src = random_src(1, seed=30)
    words = [t for t in range(1, V_TGT) if t != EOS]
    hyps = ([(EOS,)] + [(a, EOS) for a in words]
            + [(a, b, c) for a, b in itertools.product(words, words) for c in words + [EOS]])
    tgt_in = np.array([(BOS,) + h[:-1] + (PAD,) * (max_len - len(h)) for h in hyps])
    logp = log_probs(model, np.repeat(src, len(hyps), axis=0), tgt_in)
    brute = {h: sum(logp[i, j, tok] for j, tok in enumerate(h)) / lp(len(h), alpha)
             for i, h in enumerate(hyps)}
    out, ranked = beam_search(model, src, beam_size=1000, max_len=max_len,
                              length_penalty=alpha, return_all=True)
    found = {tuple(ids): score for ids, score in ranked[0]}
    assert found.keys() == brute.keys()
    np.testing.assert_allclose([found[h] for h in hyps], [brute[h] for h in hyps], rtol=1e-5)
    best = max(brute, key=brute.get)
    np.testing.assert_array_equal(out[0][out[0] != PAD], best)
    scores = [score for _, score in ranked[0]]
    assert scores == sorted(scores, reverse=True)


def test_return_all_lists_the_n_best_with_their_scores():
    alpha = 0.6
    model, src = mixed_case(seed=40, B=3)
    out, ranked = beam_search(model, src, beam_size=3, max_len=12, length_penalty=alpha,
                              return_all=True)
    assert len(ranked) == 3
    for row, hyps, s in zip(out, ranked, src):
        assert 1 <= len(hyps) <= 3
        np.testing.assert_array_equal(row[:len(hyps[0][0])], hyps[0][0])
        assert (row[len(hyps[0][0]):] == PAD).all()
        scores = [score for _, score in hyps]
        assert scores == sorted(scores, reverse=True)
        for ids, score in hyps:
            assert ids.dtype == np.int64 and (ids[-1] == EOS or len(ids) == 12)
            assert EOS not in ids[:-1] and PAD not in ids
            expected = sequence_log_prob(model, s, ids) / lp(len(ids), alpha)
            np.testing.assert_allclose(score, expected, rtol=1e-4)


def test_length_penalty_favours_longer_hypotheses():
    model, src = mixed_case(seed=41, B=4)
    lengths = [(beam_search(model, src, beam_size=4, max_len=12, length_penalty=alpha)
                != PAD).sum() for alpha in (0.0, 2.0)]
    assert lengths[1] > lengths[0]


# ---------------------------------------------------------------- bad arguments


@pytest.mark.parametrize("call, message", [
    (lambda m, s: sample(m, s, max_len=3, temperature=0), "temperature"),
    (lambda m, s: sample(m, s, max_len=3, temperature=-1.0), "temperature"),
    (lambda m, s: sample(m, s, max_len=3, top_k=0), "top_k"),
    (lambda m, s: sample(m, s, max_len=3, top_p=0), "top_p"),
    (lambda m, s: sample(m, s, max_len=3, top_p=1.5), "top_p"),
    (lambda m, s: beam_search(m, s, max_len=3, beam_size=0), "beam_size"),
    (lambda m, s: beam_search(m, s, max_len=3, length_penalty=-1), "length_penalty"),
    (lambda m, s: sample(m, s, max_len=3, temperature=np.inf), "temperature"),
    (lambda m, s: greedy_decode(m, s, max_len=0), "max_len"),
    (lambda m, s: greedy_decode(m, s, max_len=41), r"max_len=41 .*0\.\.40.* 40 positions"),
    (lambda m, s: beam_search(m, s, max_len=41), "max_len=41"),
    (lambda m, s: sample(m, s, max_len=41), "max_len=41"),
    (lambda m, s: greedy_decode(m, s[0], max_len=3), r"src must have shape \(B, L\)"),
    (lambda m, s: greedy_decode(m, s[None], max_len=3), r"src must have shape \(B, L\)"),
    (lambda m, s: greedy_decode(m, s.astype(float), max_len=3), "src must be an integer array"),
])
def test_bad_arguments_are_value_errors(call, message):
    model, src = tiny_model(), random_src(2)
    with pytest.raises(ValueError, match=message):
        call(model, src)


@pytest.mark.parametrize("call, message", [
    (lambda m, s: sample(m, s, max_len=3, top_k=2.5), "top_k must be an int, got 2.5"),
    (lambda m, s: greedy_decode(m, s, max_len="3"), "max_len must be an int, got '3'"),
    (lambda m, s: sample(m, s, max_len=3, temperature="hot"), "temperature must be a number"),
])
def test_wrongly_typed_arguments_are_type_errors(call, message):
    model, src = tiny_model(), random_src(2)
    with pytest.raises(TypeError, match=message):
        call(model, src)


def test_max_len_equal_to_the_positional_table_is_allowed():
    out = greedy_decode(tiny_model(), random_src(2), max_len=40, eos_id=None)
    assert out.shape == (2, 40)

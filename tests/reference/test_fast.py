"""minitf.fast gives the reference's numbers: every mask kind, every dtype, blocks of every
shape (passed as keyword arguments), and the model's switch between the two."""

import tracemalloc

import numpy as np
import pytest

from minitf import MultiHeadAttention
from minitf.attention import causal_mask, scaled_dot_product_attention
from minitf.fast import blocked_attention, chunked_attention

L = 150


def masks(rng):
    lengths = np.array([L, 70])
    padding = (np.arange(L) < lengths[:, None])[:, None, None, :]  # (2, 1, 1, L)
    random_mask = rng.random((L, L)) < 0.3
    random_mask[:, 100:] = False  # trailing keys hidden from every query
    random_mask[5] = False  # one query sees nothing
    per_head = rng.random((2, 4, L, L)) < 0.5
    return {"none": None, "causal": causal_mask(L), "padding": padding,
            "causal+padding": causal_mask(L) & padding, "random": random_mask,
            "per head": per_head}


def qkv(dtype, seed=8):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((2, 4, L, 8)).astype(dtype) for _ in range(3))


TOLERANCE = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding", "causal+padding", "random",
                                       "per head"])
@pytest.mark.parametrize("block_rows, block_scores", [(64, 1 << 17), (7, 1), (64, 3 * 64 * 150)])
def test_blocked_equals_reference(dtype, mask_kind, block_rows, block_scores):
    # Small blocks force several blocks of queries, and heads alone or in uneven groups.
    q, k, v = qkv(dtype)
    mask = masks(np.random.default_rng(1))[mask_kind]
    out, weights = blocked_attention(q, k, v, mask, block_rows=block_rows,
                                     block_scores=block_scores)
    expected_out, expected_weights = scaled_dot_product_attention(q, k, v, mask)
    assert out.dtype == weights.dtype == dtype
    np.testing.assert_allclose(weights, expected_weights, **TOLERANCE[dtype])
    np.testing.assert_allclose(out, expected_out, **TOLERANCE[dtype])


@pytest.mark.parametrize("bound_from", [1, 1 << 14, 1 << 40])
@pytest.mark.parametrize("mask", [None, causal_mask(L)])
def test_blocked_with_scores_too_large_for_exp(bound_from, mask):
    # Logits up to about ±200 in one head and in a few rows: those blocks must subtract the
    # row max, the others may skip it; with or without the Cauchy–Schwarz bound.
    q, k, v = qkv(np.float32)
    q[1, 2] *= 25
    q[:, :, 80:90] *= 25
    out, weights = blocked_attention(q, k, v, mask, block_rows=16, bound_from=bound_from)
    expected_out, expected_weights = scaled_dot_product_attention(q.astype(np.float64), k, v,
                                                                  mask)
    assert np.isfinite(weights).all() and np.abs(weights).max() > 0.99
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out, expected_out, rtol=1e-3, atol=1e-4)


def test_blocked_broadcasts_shared_keys_and_values():
    q, k, v = qkv(np.float32)
    out, weights = blocked_attention(q, k[0, 0], v[0, 0], causal_mask(L), block_rows=10)
    expected_out, expected_weights = scaled_dot_product_attention(q, k[0, 0], v[0, 0],
                                                                  causal_mask(L))
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, expected_out, rtol=1e-5, atol=1e-6)


def test_blocked_validates_like_the_reference():
    with pytest.raises(ValueError, match="q has d_k=8 but k has d_k=16"):
        blocked_attention(np.ones((3, 8)), np.ones((4, 16)), np.ones((4, 5)))
    with pytest.raises(ValueError, match="block_rows must be an int >= 1"):
        blocked_attention(np.ones((3, 8)), np.ones((4, 8)), np.ones((4, 5)), block_rows=0)


def test_blocked_empty_batch():
    q = k = v = np.zeros((0, 2, 3, 4), dtype=np.float32)
    out, weights = blocked_attention(q, k, v, np.ones((0, 1, 1, 3), bool))
    assert out.shape == (0, 2, 3, 4) and weights.shape == (0, 2, 3, 3)


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 100])
def test_chunked_attention_equals_reference(chunk_size):
    rng = np.random.default_rng(6)
    q = rng.standard_normal((2, 3, 10, 8)).astype(np.float32)
    k = rng.standard_normal((2, 3, 12, 8)).astype(np.float32)
    v = rng.standard_normal((2, 3, 12, 5)).astype(np.float32)
    for mask in (None, np.tril(np.ones((10, 12), bool)), rng.random((2, 1, 1, 12)) < 0.7):
        expected, _ = scaled_dot_product_attention(q, k, v, mask)
        got = chunked_attention(q, k, v, mask, chunk_size=chunk_size)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="chunk_size must be an int >= 1"):
        chunked_attention(q, k, v, chunk_size=0)


def test_chunked_attention_bounds_peak_memory():
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((1024, 16)).astype(np.float32) for _ in range(3))
    score_bytes = 1024 * 1024 * 4
    tracemalloc.start()
    chunked_attention(q, k, v, chunk_size=64)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < score_bytes / 4


def test_the_switch_picks_the_kernel_and_keeps_the_numbers(monkeypatch):
    assert MultiHeadAttention.fast is False  # the reference by default
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 9, 16)).astype(np.float32)
    mha = MultiHeadAttention(16, 4, rng=0)
    mha.fast = True
    calls = []
    import minitf.multihead as multihead

    real = multihead.blocked_attention
    monkeypatch.setattr(multihead, "blocked_attention",
                        lambda *a, **kw: calls.append("fast") or real(*a, **kw))
    fast_out = mha(x, mask=causal_mask(9))
    assert calls == ["fast"]
    mha.fast = False
    ref_out = mha(x, mask=causal_mask(9))
    assert calls == ["fast"]  # the reference was used
    np.testing.assert_allclose(fast_out, ref_out, rtol=1e-5, atol=1e-6)
    assert MultiHeadAttention.fast is False  # the instance's switch, not the class's

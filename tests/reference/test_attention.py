import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitf.attention import (
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
    softmax,
)
from minitf.gradcheck import numerical_gradient, relative_error


def test_notes_worked_example():
    # The notes: q1·k1 = 112, q1·k2 = 96, d_k = 64 -> 14 and 12 -> softmax 0.88 and 0.12.
    d_k = 64
    q = np.zeros((1, d_k))
    q[0, 0] = 1.0
    k = np.zeros((2, d_k))
    k[0, 0], k[1, 0] = 112.0, 96.0
    v = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])
    scores = q @ k.T / np.sqrt(d_k)
    np.testing.assert_allclose(scores, [[14.0, 12.0]])
    out, weights = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(weights, [[0.88, 0.12]], atol=0.005)
    e = np.exp(2.0)
    np.testing.assert_allclose(weights, [[e / (e + 1), 1 / (e + 1)]], rtol=1e-12)
    np.testing.assert_allclose(out[0], weights[0, 0] * v[0] + weights[0, 1] * v[1])


def test_softmax_matches_definition_and_sums_to_one():
    x = np.random.default_rng(0).standard_normal((3, 5))
    expected = np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(softmax(x), expected, rtol=1e-12)
    np.testing.assert_allclose(softmax(x, axis=0).sum(axis=0), 1.0)


def test_softmax_huge_and_tiny_logits():
    x = np.array([[1e30, 0.0, -1e30], [-1e4, -1e4 - 1, -1e30], [1e-30, -1e-30, 0.0]])
    p = softmax(x)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p.sum(axis=-1), 1.0)
    np.testing.assert_allclose(p[0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(p[1, :2], [1 / (1 + np.exp(-1)), np.exp(-1) / (1 + np.exp(-1))])
    np.testing.assert_allclose(p[2], 1 / 3)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_softmax_is_unchanged_by_a_shift_of_any_size(dtype):
    # Small logits go straight into exp; large ones have the row max subtracted first.
    # Both roads must give the same weights, and neither may overflow.
    x = np.random.default_rng(9).standard_normal((4, 6))
    limit = np.log(np.finfo(dtype).max)
    for shift in (0.0, limit / 2 - 3, limit / 2 + 3, limit - 3, limit, -limit, 1e4, -1e4):
        shifted = (x + shift).astype(dtype)
        p = softmax(shifted)
        # the reference: the same rounded inputs, brought back to 0 in float64
        expected = softmax(shifted.astype(np.float64) - shift)
        assert p.dtype == dtype and np.isfinite(p).all()
        np.testing.assert_allclose(p, expected, rtol=0.01 if dtype == np.float16 else 1e-4,
                                   atol=1e-3 if dtype == np.float16 else 1e-6)


def test_softmax_fully_masked_row_gives_zeros():
    x = np.array([[-np.inf, -np.inf], [0.0, -np.inf]], dtype=np.float32)
    p = softmax(x)
    np.testing.assert_array_equal(p, [[0.0, 0.0], [1.0, 0.0]])
    assert p.dtype == np.float32


def test_softmax_rejects_nan():
    with pytest.raises(ValueError, match="NaN"):
        softmax(np.array([1.0, np.nan]))


def test_softmax_does_not_modify_input():
    x = np.array([1.0, 2.0])
    softmax(x)
    np.testing.assert_array_equal(x, [1.0, 2.0])


def test_loop_over_queries_equals_matrix_form():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((4, 8)), rng.standard_normal((6, 8)), rng.standard_normal((6, 3))
    out, weights = scaled_dot_product_attention(q, k, v)
    for i in range(4):
        scores = np.array([q[i] @ k[j] for j in range(6)]) / np.sqrt(8)
        alpha = np.exp(scores) / np.exp(scores).sum()
        np.testing.assert_allclose(weights[i], alpha, rtol=1e-12)
        np.testing.assert_allclose(out[i], sum(alpha[j] * v[j] for j in range(6)), rtol=1e-12)


def test_causal_and_padding_masks():
    np.testing.assert_array_equal(causal_mask(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    assert causal_mask(3).dtype == bool
    m = padding_mask(np.array([[5, 6, 0], [7, 0, 0]]))
    assert m.shape == (2, 1, 1, 3)
    np.testing.assert_array_equal(m[:, 0, 0], [[1, 1, 0], [1, 0, 0]])


def test_mask_zeroes_weights_and_fully_masked_query_gives_zero_output():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    mask = causal_mask(3)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert np.all(weights[:, ~mask] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1.0)
    mask2 = np.ones((3, 3), bool)
    mask2[1] = False
    out, weights = scaled_dot_product_attention(q, k, v, mask2)
    assert np.isfinite(out).all()
    np.testing.assert_array_equal(out[:, 1], 0.0)


def test_float32_stays_float32():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 5, 8)).astype(np.float32) for _ in range(3))
    out, weights = scaled_dot_product_attention(q, k, v, causal_mask(5))
    assert out.dtype == np.float32 and weights.dtype == np.float32
    assert softmax(q).dtype == np.float32


@pytest.mark.parametrize(
    "shapes, message",
    [
        (((3, 8), (4, 16), (4, 5)), "q has d_k=8 but k has d_k=16"),
        (((3, 8), (4, 8), (5, 5)), "k has L_k=4 positions but v has 5"),
        (((2, 3, 8), (3, 4, 8), (3, 4, 5)), "do not broadcast"),
        (((8,), (4, 8), (4, 5)), "q must have at least 2 dimensions"),
        (((3, 8), (0, 8), (0, 5)), "k has no positions"),
    ],
)
def test_bad_shapes_are_named(shapes, message):
    q, k, v = (np.ones(s) for s in shapes)
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(q, k, v)


def test_bad_masks_are_named():
    q = k = v = np.ones((2, 3, 4))
    with pytest.raises(ValueError, match=r"mask of shape \(4, 4\) does not broadcast"):
        scaled_dot_product_attention(q, k, v, np.ones((4, 4), bool))
    with pytest.raises(ValueError, match="mask must be boolean"):
        scaled_dot_product_attention(q, k, v, np.ones((3, 3)))
    with pytest.raises(ValueError, match="does not broadcast"):  # a mask may not add dims
        scaled_dot_product_attention(q, k, v, np.ones((5, 2, 3, 3), bool))


def test_attention_backward_matches_finite_differences():
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal(
        (2, 5, 3))
    mask = np.ones((2, 1, 5), bool)
    mask[1, 0, 3:] = False  # padding in the second batch row
    mask = mask & np.array([True, True, True, True, False])
    r = rng.standard_normal((2, 3, 3))

    def loss():
        return float(np.sum(scaled_dot_product_attention(q, k, v, mask)[0] * r))

    _, weights = scaled_dot_product_attention(q, k, v, mask)
    grads = scaled_dot_product_attention_backward(r, q, k, v, weights)
    for x, g in zip((q, k, v), grads, strict=True):
        assert relative_error(g, numerical_gradient(loss, x)) < 1e-7
    # masked keys get no gradient
    np.testing.assert_array_equal(grads[1][1, 3:], 0)


def test_softmax_backward_is_not_trivially_zero():
    # guards the check above: a wrong backward (e.g. dropping the Σ term) must be caught
    rng = np.random.default_rng(5)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    r = rng.standard_normal((3, 2))
    _, w = scaled_dot_product_attention(q, k, v)
    d_w = r @ v.T
    wrong_dq = (w * d_w) @ k / 2.0

    def loss():
        return float(np.sum(scaled_dot_product_attention(q, k, v)[0] * r))

    assert relative_error(wrong_dq, numerical_gradient(loss, q)) > 1e-3


@settings(max_examples=60, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    l_q=st.integers(1, 6),
    l_k=st.integers(1, 6),
    d_k=st.integers(1, 8),
    d_v=st.integers(1, 5),
    seed=st.integers(0, 2**16),
    masked=st.booleans(),
)
def test_attention_properties(batch, l_q, l_k, d_k, d_v, seed, masked):
    rng = np.random.default_rng(seed)
    batch = tuple(batch)
    q = rng.standard_normal(batch + (l_q, d_k)).astype(np.float32)
    k = rng.standard_normal(batch + (l_k, d_k)).astype(np.float32) * 10
    v = rng.standard_normal(batch + (l_k, d_v)).astype(np.float32)
    mask = rng.random((l_q, l_k)) < 0.6 if masked else None
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert out.shape == batch + (l_q, d_v) and weights.shape == batch + (l_q, l_k)
    assert out.dtype == np.float32 and np.isfinite(out).all()
    assert (weights >= 0).all()
    row_sums = weights.sum(-1)
    live = np.ones((l_q,), bool) if mask is None else mask.any(-1)
    np.testing.assert_allclose(row_sums[..., live], 1.0, rtol=1e-5)
    np.testing.assert_array_equal(row_sums[..., ~live], 0.0)
    if mask is not None:
        assert np.all(weights[..., ~mask] == 0)
    # the output is a convex combination of the values: inside their range per feature
    lo, hi = v.min(axis=-2, keepdims=True), v.max(axis=-2, keepdims=True)
    ok = out[..., live, :]
    assert np.all(ok >= lo - 1e-4) and np.all(ok <= hi + 1e-4)


def test_softmax_of_empty_arrays_is_empty():
    for shape in ((0,), (3, 0), (0, 4)):
        p = softmax(np.zeros(shape, dtype=np.float32))
        assert p.shape == shape and p.dtype == np.float32


def test_attention_with_an_empty_batch_gives_empty_results():
    q = k = v = np.zeros((0, 2, 3, 4), dtype=np.float32)
    out, weights = scaled_dot_product_attention(q, k, v, np.ones((0, 1, 1, 3), bool))
    assert out.shape == (0, 2, 3, 4) and weights.shape == (0, 2, 3, 3)


def test_reference_reads_like_the_formula():
    # The reference is the formula the notebooks teach, in a handful of lines: a learner who
    # opens attention.py must find softmax(QKᵀ/√d_k)V, not a kernel.
    import inspect

    body = inspect.getsource(scaled_dot_product_attention).split('"""')[-1]
    lines = [line for line in body.splitlines() if line.strip()]
    assert len(lines) <= 8
    assert "softmax(" in body and "np.sqrt" in body and "swapaxes(k" in body

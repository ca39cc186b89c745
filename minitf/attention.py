"""Scaled dot-product attention (缩放点积注意力), its masks, and its backward pass.

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

This is the reference the notebooks teach: notebook 01 builds one query's attention,
notebook 02 the matrix form, notebooks 05 and 06 the masks, notebook 08 the backward. The
same computation made fast lives in `minitf.fast`, tested equal to this one.

Shapes: q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v); masks are boolean,
True = may attend, broadcastable to the scores (..., L_q, L_k).
"""

import numpy as np

from .validation import all_finite, require_fits, require_float_array, require_int


def softmax(x, axis=-1):
    """exp(x − max) / Σ exp(x − max) along `axis`. Built in notebook 01 §5.

    Subtracting the row max changes nothing mathematically (softmax(x) = softmax(x − c)) but
    makes the largest term exp(0) = 1, so exp never overflows. A row that is entirely -inf
    (every position masked) gives zeros, not NaN.
    """
    x = require_float_array(x, "x")
    axis = None if axis is None else require_int(axis, "axis")  # None: over the whole array
    if x.size == 0:
        return x.copy()
    e = np.exp(x - _row_max(x, axis, "the softmax input x"))
    total = np.sum(e, axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def log_softmax(x):
    """log softmax(x) along the last axis: x − max − log Σ exp(x − max). Notebook 07 §2
    (beam scores); cross_entropy uses it (notebook 08 §1). A row that is entirely -inf
    (every class masked) stays -inf, not NaN."""
    x = _validate_log_softmax_input(x)
    shifted = x - _row_max(x, -1, "the log_softmax input x")
    total = np.exp(shifted).sum(axis=-1, keepdims=True)
    return shifted - np.log(total, out=np.zeros_like(total), where=total > 0)


def causal_mask(n):
    """(n, n) bool, True on and below the diagonal: position i may attend to 0..i.
    Built in notebook 06 §1."""
    n = require_int(n, "n", low=0)
    require_fits(2 * n * n, "two (n, n) bool arrays", n=n)
    return np.tril(np.ones((n, n), dtype=bool))


def padding_mask(tokens, pad_id=0):
    """(B, 1, 1, L) bool, False where `tokens` (B, L) is padding. Built in notebook 05 §6."""
    tokens, pad_id = np.asarray(tokens), require_int(pad_id, "pad_id")
    if tokens.ndim != 2:
        raise ValueError(f"tokens must have shape (B, L), got shape {tokens.shape}")
    return (tokens != pad_id)[:, None, None, :]


def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(q kᵀ / √d_k) v, with masked scores set to -inf before the softmax.

    q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v), mask bool (True = may attend)
    broadcastable to (..., L_q, L_k). Returns (out (..., L_q, d_v), weights (..., L_q, L_k)).
    A query whose every key is masked gets zero weights and a zero output.
    Built in notebook 01 §3–6 (one query) and notebook 02 §1 (the matrix form).
    """
    q, k, v, mask = _validate_attention_inputs(q, k, v, mask)
    _require_scores_fit(q, k, v)
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.dtype.type(d_k))  # (..., L_q, L_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)  # (..., L_q, L_k)
    return weights @ v, weights  # (..., L_q, d_v)


def scaled_dot_product_attention_backward(dout, q, k, v, weights):
    """Gradients (dq, dk, dv) of scaled_dot_product_attention given dL/d(out).
    Derived in notebook 08 §3. dout and weights have the forward's shapes, (..., L_q, d_v)
    and (..., L_q, L_k).

    With S = q kᵀ/√d_k, A = softmax(S), out = A v:
        dv = Aᵀ dout,  dA = dout vᵀ,  dS = A ⊙ (dA − Σ_j dA ⊙ A),
        dq = dS k / √d_k,  dk = dSᵀ q / √d_k.
    Masked positions have A = 0, so they receive no gradient.
    """
    dout, q, k, v, weights = _validate_backward_inputs(dout, q, k, v, weights)
    scale = weights.dtype.type(1.0 / np.sqrt(q.shape[-1]))
    dv = np.swapaxes(weights, -1, -2) @ dout  # (..., L_k, d_v)
    d_weights = dout @ np.swapaxes(v, -1, -2)  # (..., L_q, L_k)
    d_scores = weights * (d_weights - np.sum(d_weights * weights, axis=-1, keepdims=True))
    dq = (d_scores @ k) * scale  # (..., L_q, d_k)
    dk = (np.swapaxes(d_scores, -1, -2) @ q) * scale  # (..., L_k, d_k)
    return _unbroadcast(dq, q.shape), _unbroadcast(dk, k.shape), _unbroadcast(dv, v.shape)


def _unbroadcast(grad, shape):
    """Sum `grad` over the dimensions that broadcasting added to an input of `shape`."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


# Validation: below the math it guards, so the formulas above read on their own.

def _row_max(x, axis, name):
    """The max along `axis` (kept), refusing NaN and +inf; a fully masked row's max is taken
    as 0, so the row stays -inf after the shift (and exp(-inf) = 0)."""
    row_max = np.max(x, axis=axis, keepdims=True)
    if np.isnan(row_max).any() or np.isposinf(row_max).any():
        raise ValueError(f"{name} contains NaN or +inf")
    return np.where(np.isneginf(row_max), 0, row_max)


def _require_scores_fit(q, k, v):
    """The scores, their exp and the weights (three arrays of the scores' shape) fit."""
    scores = _scores_shape(q, k, v)
    require_fits(3 * q.dtype.itemsize * int(np.prod(scores, dtype=object)),
                 f"the attention scores {scores}", q=q.shape, k=k.shape, v=v.shape)


def _validate_log_softmax_input(x):
    x = require_float_array(x, "x")
    if x.ndim and x.shape[-1] == 0:
        raise ValueError(f"x has no classes (shape {x.shape}, last axis 0): log_softmax "
                         "needs at least one")
    return x


def _validate_backward_inputs(dout, q, k, v, weights):
    """The arrays as floats, with weights of the scores' shape and dout of the output's."""
    dout, q, k, v, weights = (require_float_array(a, name) for a, name in (
        (dout, "dout"), (q, "q"), (k, "k"), (v, "v"), (weights, "weights")))
    scores_shape = _scores_shape(q, k, v)  # shapes only: the forward checked the values
    for name, a, shape in (("weights", weights, scores_shape),
                           ("dout", dout, scores_shape[:-1] + v.shape[-1:])):
        if a.shape != shape:
            raise ValueError(f"{name} has shape {a.shape} but the forward's was {shape} "
                             f"(q {q.shape}, k {k.shape}, v {v.shape})")
    return dout, q, k, v, weights


def _scores_shape(q, k, v):
    """The shape (..., L_q, L_k) of the scores of q, k, v, or a ValueError naming the shapes
    that do not fit together."""
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (L, d), got shape {a.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q has d_k={q.shape[-1]} but k has d_k={k.shape[-1]}")
    if q.shape[-1] == 0:
        raise ValueError("q and k have d_k=0: attention needs at least one feature")
    if k.shape[-2] == 0:
        raise ValueError("k has no positions (L_k=0): attention needs at least one key")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k has L_k={k.shape[-2]} positions but v has {v.shape[-2]}")
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"batch dimensions of q {q.shape}, k {k.shape} and v {v.shape} do not broadcast"
        ) from None
    return batch + (q.shape[-2], k.shape[-2])


def _validate_attention_inputs(q, k, v, mask):
    """q, k, v as arrays of one float dtype (at least float32) and mask as a bool array,
    or a ValueError that names what does not fit."""
    q, k, v = (require_float_array(a, name) for a, name in ((q, "q"), (k, "k"), (v, "v")))
    scores_shape = _scores_shape(q, k, v)
    for name, a in (("q", q), ("k", k), ("v", v)):
        if not all_finite(a):
            raise ValueError(f"{name} contains NaN or inf")
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise ValueError(
                f"mask must be boolean (True = may attend), got dtype {mask.dtype}"
            )
        try:
            if np.broadcast_shapes(mask.shape, scores_shape) != scores_shape:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"mask of shape {mask.shape} does not broadcast to the scores {scores_shape}"
            ) from None
    dtype = np.result_type(q, k, v, np.float32)
    q, k, v = (a.astype(dtype, copy=False) for a in (q, k, v))
    return q, k, v, mask

"""Scaled dot-product attention (缩放点积注意力), its masks, and its backward pass.

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

This is the reference the notebooks teach: notebook 01 builds one query's attention,
notebook 02 the matrix form, notebooks 05 and 06 the masks, notebook 08 the backward. The
same computation made fast lives in `minitf.fast`, tested equal to this one.

Shapes: q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v); masks are boolean,
True = may attend, broadcastable to the scores (..., L_q, L_k).
"""

import numpy as np

from .validation import (
    require_attention_backward_inputs,
    require_attention_inputs,
    require_fits,
    require_int,
    require_log_softmax_input,
    require_no_nan_or_posinf,
    require_scores_fit,
    require_softmax_input,
)


def softmax(x, axis=-1):
    """exp(x − max) / Σ exp(x − max) along `axis`. Built in notebook 01 §5.

    Subtracting the row max changes nothing mathematically (softmax(x) = softmax(x − c)) but
    makes the largest term exp(0) = 1, so exp never overflows. A row that is entirely -inf
    (every position masked) gives zeros, not NaN.
    """
    x, axis = require_softmax_input(x, axis)  # axis None: over the whole array
    if x.size == 0:
        return x.copy()
    row_max = np.max(x, axis=axis, keepdims=True)
    require_no_nan_or_posinf(row_max, "the softmax input x")
    e = np.exp(x - np.where(np.isneginf(row_max), 0, row_max))  # a masked row: exp(-inf) = 0
    total = np.sum(e, axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def log_softmax(x):
    """log softmax(x) along the last axis: x − max − log Σ exp(x − max). Notebook 07 §2
    (beam scores); cross_entropy uses it (notebook 08 §1). A row that is entirely -inf
    (every class masked) stays -inf, not NaN."""
    x = require_log_softmax_input(x)
    row_max = np.max(x, axis=-1, keepdims=True)
    require_no_nan_or_posinf(row_max, "the log_softmax input x")
    shifted = x - np.where(np.isneginf(row_max), 0, row_max)  # a fully masked row stays -inf
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
    q, k, v, mask = require_attention_inputs(q, k, v, mask)
    require_scores_fit(q, k, v)
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
    dout, q, k, v, weights = require_attention_backward_inputs(dout, q, k, v, weights)
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

"""Scaled dot-product attention (注意力), its masks, and its backward pass.

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

Shapes: q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v); masks are boolean,
True = may attend, broadcastable to the scores (..., L_q, L_k).
"""

import numpy as np


def softmax(x, axis=-1):
    """exp(x) / Σ exp(x) along `axis`, stable for huge and tiny logits.

    A slice that is entirely -inf (every position masked) gives zeros, not NaN.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    return _softmax_inplace(x.copy(), axis=axis)


def log_softmax(x):
    """log softmax(x) along the last axis, stable: x − max − log Σ exp(x − max)."""
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _softmax_inplace(x, axis=-1):
    """softmax that overwrites the float array `x` and returns it."""
    row_max = np.max(x, axis=axis, keepdims=True)
    if not np.isfinite(row_max).all():
        if np.isnan(row_max).any() or np.isposinf(row_max).any():
            raise ValueError("softmax input contains NaN or +inf")
        # A fully masked row has max -inf; subtracting 0 keeps it -inf, and exp gives 0.
        row_max[np.isneginf(row_max)] = 0
    x -= row_max
    np.exp(x, out=x)
    total = np.sum(x, axis=axis, keepdims=True)
    # multiply by 1/total (one division per row, not per entry); 0 for fully masked rows
    inv_total = np.divide(1, total, out=np.zeros_like(total), where=total > 0)
    x *= inv_total
    return x


def causal_mask(n):
    """(n, n) bool, True on and below the diagonal: position i may attend to 0..i."""
    return np.tril(np.ones((n, n), dtype=bool))


def padding_mask(tokens, pad_id=0):
    """(B, 1, 1, L) bool, False where `tokens` (B, L) is padding."""
    tokens = np.asarray(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must have shape (B, L), got shape {tokens.shape}")
    return (tokens != pad_id)[:, None, None, :]


def _check_qkv(q, k, v, mask):
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (L, d), got shape {a.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q has d_k={q.shape[-1]} but k has d_k={k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k has L_k={k.shape[-2]} positions but v has {v.shape[-2]}")
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"batch dimensions of q {q.shape}, k {k.shape} and v {v.shape} do not broadcast"
        ) from None
    scores_shape = batch + (q.shape[-2], k.shape[-2])
    if mask is not None:
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
    return scores_shape


def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(q kᵀ / √d_k) v.

    q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v), mask bool (True = may attend)
    broadcastable to (..., L_q, L_k). Returns (out (..., L_q, d_v), weights (..., L_q, L_k)).
    A query whose every key is masked gets zero weights and a zero output.
    """
    q, k, v, mask, scores_shape = _prepare(q, k, v, mask)
    if mask is None:
        return _attend(_scaled(q, k, v), k, v, None)
    # With a mask, go a block of queries at a time and skip the keys that no query of the
    # block may see: for a causal mask that is about half of all the work.
    out = np.empty(scores_shape[:-1] + (v.shape[-1],), dtype=_dtype(q, k, v))
    weights = np.zeros(scores_shape, dtype=out.dtype)
    for rows, n_keys, out_block, weights_block in _query_blocks(q, k, v, mask, _BLOCK):
        out[..., rows, :] = out_block
        weights[..., rows, :n_keys] = weights_block
    return out, weights


_BLOCK = 64  # queries per block when a mask lets us skip keys


def _prepare(q, k, v, mask):
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    mask = None if mask is None else np.asarray(mask)
    scores_shape = _check_qkv(q, k, v, mask)
    if mask is not None:
        mask = mask.reshape((1,) * (len(scores_shape) - mask.ndim) + mask.shape)
    return q, k, v, mask, scores_shape


def _dtype(q, k, v):
    return np.result_type(q, k, v, np.float32)


def _scaled(q, k, v):
    """q / √d_k, with the scale as a dtype scalar (a numpy float64 would upcast float32)."""
    return q * _dtype(q, k, v).type(1.0 / np.sqrt(q.shape[-1]))


def _attend(q_scaled, k, v, mask):
    """The formula itself, on queries already divided by √d_k: (out, weights)."""
    scores = q_scaled @ np.swapaxes(k, -1, -2)  # (..., L_q, L_k)
    if mask is not None:
        np.copyto(scores, -np.inf, where=~mask)
    weights = _softmax_inplace(scores)
    return weights @ v, weights  # (..., L_q, d_v)


def _query_blocks(q, k, v, mask, block):
    """Attention for `block` queries at a time: yields (rows, n_keys, out, weights), where
    keys from n_keys on are masked for every query of the block and were left out."""
    q_scaled = _scaled(q, k, v)
    L_q, L_k = q.shape[-2], k.shape[-2]
    for start in range(0, L_q, block):
        rows = slice(start, min(start + block, L_q))
        block_mask, n_keys = None, L_k
        if mask is not None:
            block_mask = mask if mask.shape[-2] == 1 else mask[..., rows, :]
            visible = np.flatnonzero(block_mask.any(axis=tuple(range(block_mask.ndim - 1))))
            n_keys = int(visible[-1]) + 1 if visible.size else 1
            block_mask = block_mask[..., :n_keys]
        out, weights = _attend(q_scaled[..., rows, :], k[..., :n_keys, :], v[..., :n_keys, :],
                               block_mask)
        yield rows, n_keys, out, weights


def _unbroadcast(grad, shape):
    """Sum `grad` over the dimensions that broadcasting added to an input of `shape`."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


def scaled_dot_product_attention_backward(dout, q, k, v, weights):
    """Gradients (dq, dk, dv) of scaled_dot_product_attention given dL/d(out).

    With S = q kᵀ/√d_k, A = softmax(S), out = A v:
        dv = Aᵀ dout,  dA = dout vᵀ,  dS = A ⊙ (dA − Σ_j dA ⊙ A),
        dq = dS k / √d_k,  dk = dSᵀ q / √d_k.
    Masked positions have A = 0, so they receive no gradient.
    """
    scale = weights.dtype.type(1.0 / np.sqrt(q.shape[-1]))
    dv = np.swapaxes(weights, -1, -2) @ dout
    d_weights = dout @ np.swapaxes(v, -1, -2)  # (..., L_q, L_k)
    d_scores = weights * (d_weights - np.sum(d_weights * weights, axis=-1, keepdims=True))
    dq = (d_scores @ k) * scale
    dk = (np.swapaxes(d_scores, -1, -2) @ q) * scale
    return _unbroadcast(dq, q.shape), _unbroadcast(dk, k.shape), _unbroadcast(dv, v.shape)


def chunked_attention(q, k, v, mask=None, chunk_size=128):
    """The same output as scaled_dot_product_attention, computed for `chunk_size` queries
    at a time, so peak memory grows with chunk_size × L_k instead of L_q × L_k.

    Each query's softmax needs only its own row of scores, so the rows can be done in
    chunks. Returns the output only (the full weight matrix is what we avoid building).
    """
    q, k, v, mask, scores_shape = _prepare(q, k, v, mask)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    out = np.empty(scores_shape[:-1] + (v.shape[-1],), dtype=_dtype(q, k, v))
    for rows, _, out_block, _ in _query_blocks(q, k, v, mask, chunk_size):
        out[..., rows, :] = out_block
    return out

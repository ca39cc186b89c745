"""Scaled dot-product attention (注意力), its masks, and its backward pass.

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

Shapes: q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v); masks are boolean,
True = may attend, broadcastable to the scores (..., L_q, L_k).
"""

import math

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


def _softmax_inplace(x, axis=-1, small=False):
    """softmax that overwrites the float array `x` and returns it.

    small=True is the caller's promise that |x| <= _exp_limit(x.dtype) wherever x is not
    -inf, so there is no row max to look for.
    """
    # softmax(x) = softmax(x − c) for any c. c = the row max makes the largest term exp(0) = 1,
    # so nothing overflows. But when every row max is already near 0 (within _exp_limit),
    # exp(x) can neither overflow nor vanish, and we skip the subtraction, a pass over x.
    if not small:
        row_max = np.max(x, axis=axis, keepdims=True)
        if not np.all(np.abs(row_max) <= _exp_limit(x.dtype)):
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


def _exp_limit(dtype):
    """Half the log of the largest float (44 in float32): exp of a number no bigger than this
    in size neither overflows nor vanishes, and neither does a sum of e^44 such terms."""
    return np.log(np.finfo(dtype).max) / 2


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
    weights = np.zeros(scores_shape, dtype=_dtype(q, k, v))
    out = _blocked_attention(q, k, v, mask, scores_shape, _BLOCK_ROWS, weights)
    return out, weights


# The work goes a block at a time: up to _BLOCK_ROWS queries of a group of heads, with the
# group sized so that a block of scores (about _BLOCK_SCORES numbers, 512 KiB in float32)
# stays in the CPU's cache through the softmax's passes instead of going out to memory and
# back for each one. Blocks of queries also let a mask skip the keys that no query of the
# block may see: for a causal mask that is about half of all the work.
_BLOCK_ROWS = 64
_BLOCK_SCORES = 1 << 17
_BOUND_FROM = 1 << 14  # fewer scores than this: bounding them costs more than it saves


def _prepare(q, k, v, mask):
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    mask = None if mask is None else np.asarray(mask)
    scores_shape = _check_qkv(q, k, v, mask)
    if mask is not None:
        mask = mask.reshape((1,) * (len(scores_shape) - mask.ndim) + mask.shape)
    return q, k, v, mask, scores_shape


def _dtype(q, k, v):
    return np.result_type(q, k, v, np.float32)


def _blocked_attention(q, k, v, mask, scores_shape, block_rows, weights=None):
    """The formula a block at a time; returns out and, if `weights` is an array of the
    scores' shape, fills it. With weights=None a block's scores live in a scratch buffer,
    so memory grows with the block, not with L_q × L_k."""
    dtype = _dtype(q, k, v)
    batch, (L_q, L_k), d_v = scores_shape[:-2], scores_shape[-2:], v.shape[-1]
    # One flat batch axis for every array, so that a group of heads is a slice.
    # The scale is a dtype scalar: a numpy float64 would silently upcast float32.
    q = _flatten(q * dtype.type(1.0 / np.sqrt(q.shape[-1])), batch, dtype)  # (N, L_q, d_k)
    k = _flatten(k, batch, dtype)  # (N, L_k, d_k)
    k_t = np.swapaxes(k, -1, -2)  # (N, d_k, L_k)
    v = _flatten(v, batch, dtype)  # (N, L_k, d_v)
    n_batch = q.shape[0]
    # |q·k| <= |q| |k| (Cauchy–Schwarz). Where that bound keeps a block's scores within
    # _exp_limit, its softmax need not look for the row max: for inputs of ordinary size
    # that saves a pass over the scores, worth the bookkeeping once there are many scores.
    bounded = n_batch * L_q * L_k >= _BOUND_FROM
    if bounded:
        q_norms = np.sqrt(np.einsum("nld,nld->nl", q, q))  # (N, L_q)
        k_norm_max = np.sqrt(np.einsum("nld,nld->nl", k, k).max(axis=-1))  # (N,)
        exp_limit = _exp_limit(dtype)
    if mask is not None and any(size > 1 for size in mask.shape[:-2]):
        mask = _flatten(mask, batch, bool)  # (N, L_q or 1, L_k)
    elif mask is not None:
        mask = mask.reshape((1,) + mask.shape[-2:])  # one mask for every head

    block_rows = max(1, min(block_rows, L_q))
    group = max(1, min(n_batch, _BLOCK_SCORES // (block_rows * L_k)))
    out = np.empty((n_batch, L_q, d_v), dtype=dtype)
    if weights is None:
        scratch = np.empty((group, block_rows, L_k), dtype=dtype)
    else:
        weights = weights.reshape(n_batch, L_q, L_k)
    # Which keys a block of rows needs depends only on the mask: with one mask for every
    # head, find it once.
    shared_mask = mask is None or mask.shape[0] == 1
    plan = _row_blocks(mask, L_q, L_k, block_rows) if shared_mask else None
    for start in range(0, n_batch, group):
        heads = slice(start, min(start + group, n_batch))
        if not shared_mask:
            plan = _row_blocks(mask[heads], L_q, L_k, block_rows)
        for rows, first_hidden, n_keys, block_mask in plan:
            if weights is None:
                scores = scratch[: heads.stop - start, : rows.stop - rows.start, :n_keys]
            else:
                scores = weights[heads, rows, :n_keys]
            np.matmul(q[heads, rows], k_t[heads, :, :n_keys], out=scores)  # (g, rows, n_keys)
            if first_hidden < n_keys:
                np.copyto(scores[..., first_hidden:], -np.inf,
                          where=~block_mask[..., first_hidden:n_keys])
            small = bounded and (
                q_norms[heads, rows].max(axis=-1) * k_norm_max[heads]).max() <= exp_limit
            _softmax_inplace(scores, small=small)
            np.matmul(scores, v[heads, :n_keys], out=out[heads, rows])  # (g, rows, d_v)
    return out.reshape(batch + (L_q, d_v))


def _flatten(a, batch, dtype):
    """a (..., m, n) broadcast to batch + (m, n), as (prod(batch), m, n); copies only if it must."""
    a = a.astype(dtype, copy=False)
    if a.shape[:-2] != batch:
        a = np.broadcast_to(a, batch + a.shape[-2:])
    return a.reshape((math.prod(batch),) + a.shape[-2:])


def _row_blocks(mask, L_q, L_k, block_rows):
    """[(rows, first_hidden, n_keys, block_mask)] for each block of `block_rows` queries:
    keys from n_keys on are hidden from every query of the block (left out), keys before
    first_hidden from none of them (no masking needed)."""
    blocks = []
    for start in range(0, L_q, block_rows):
        rows = slice(start, min(start + block_rows, L_q))
        if mask is None:
            blocks.append((rows, L_k, L_k, None))
            continue
        block_mask = mask if mask.shape[-2] == 1 else mask[..., rows, :]
        seen_by_any = block_mask.any(axis=(0, 1))
        seen_by_all = block_mask.all(axis=(0, 1))
        visible = np.flatnonzero(seen_by_any)
        n_keys = int(visible[-1]) + 1 if visible.size else 1
        hidden = np.flatnonzero(~seen_by_all[:n_keys])
        first_hidden = int(hidden[0]) if hidden.size else n_keys
        blocks.append((rows, first_hidden, n_keys, block_mask))
    return blocks


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
    return _blocked_attention(q, k, v, mask, scores_shape, chunk_size)

"""Attention computed a block at a time: the numbers of `minitf.attention`, faster on long
sequences — 1.4–1.8× the reference at B=8, H=8, L=512, causal, about 3× at 8 heads × L=512
without a mask (15–24 ms against 56–71 ms) — and no faster at the course's sizes (L ≤ 16: a
training step of the translator takes the same time with either). `MultiHeadAttention.fast =
True` runs it; no notebook does.

`blocked_attention(q, k, v, mask)` returns what `scaled_dot_product_attention` returns (equal
to float rounding; tests/reference/test_fast.py checks every mask kind and dtype). It differs in how
the work is ordered, not in what is computed:

- **The scale goes on the queries**, before the product: d_k numbers per query instead of L_k
  scores. It is a scalar of the input's dtype: a numpy float64 scalar would silently turn a
  float32 computation into float64.
- **Blocks that stay in cache.** The work goes `block_rows` queries (64) of a group of heads
  at a time, the group sized to about `block_scores` numbers (2¹⁷, 512 KiB of float32), so
  the mask and the softmax's passes run over scores still in the CPU cache, in place, instead
  of going out to memory and back for each pass.
- **Masks skip work.** A block leaves out the keys no query of it may see (half the work for
  a causal mask) and masks only the keys some query of it may not see (for a causal mask, the
  diagonal square).
- **The softmax skips the row max when it can.** Subtracting the row max only guards exp
  against overflow. Where every |row max| ≤ ½ log(float max) (±44 in float32) exp can neither
  overflow nor vanish, so the subtraction is skipped; and where |q|·|k| (Cauchy–Schwarz)
  already bounds every score of a block (for blocks of at least `bound_from` scores), the
  pass that finds the row max is skipped too.

Measured (`benchmarks/attention.py`, AMD EPYC, 2 cores, numpy 2.4.6 + OpenBLAS 0.3.31 on one
thread, torch 2.13 on one thread, 2026-12-02; a shared machine, so ranges):

| case | blocked | torch SDPA |
|---|---|---|
| 8 heads × L=512 × d=64, float32, no mask | 15–24 ms | 17–27 ms |
| the same, L=2048 | 250–345 ms | 560–670 ms |
| B=8, H=8, L=512, d=64, causal | median 94–131 ms (1.23–1.45× torch's time) | best 71–76 ms |

Both functions run BLAS on one thread unless `blas_threads(n)` chose otherwise: with another
process spinning on one of the 2 cores, the causal case above took 2.0–37× torch's time on
OpenBLAS's default 2 threads and takes 0.93–1.21× on one (`benchmarks/contention.py`;
`threads.py` says why).

What is left of the gap to torch's fused kernel is numpy's float32 exp (about 2 ns a number
here) and writing the full weight matrix, which the API returns because the course draws it.
`chunked_attention` does not keep the weights: peak memory at L=4096, d=64 is 6 MiB instead
of 66 MiB.
"""

import math

import numpy as np

from ..validation import require_attention_inputs, require_fits, require_sizes
from .threads import with_chosen_threads

BLOCK_SCORES = 1 << 17  # about how many scores a block holds: 512 KiB of float32
BOUND_FROM = 1 << 14  # from how many scores the Cauchy–Schwarz bound pays for itself


@with_chosen_threads
def blocked_attention(q, k, v, mask=None, *, block_rows=64, block_scores=BLOCK_SCORES,
                      bound_from=BOUND_FROM):
    """softmax(q kᵀ / √d_k) v a block at a time -> (out (..., L_q, d_v), weights (..., L_q, L_k)).

    The same arguments and results as `minitf.attention.scaled_dot_product_attention`.
    block_rows: queries per block; block_scores: about how many scores a block of a group of
    heads holds; bound_from: from how many scores the Cauchy–Schwarz bound is used.
    No notebook uses it; benchmarks/attention.py measures it.
    """
    q, k, v, mask, scores_shape = _prepare(q, k, v, mask)
    require_sizes(block_rows=block_rows, block_scores=block_scores, bound_from=bound_from)
    require_fits(q.dtype.itemsize * math.prod(scores_shape), "the attention weights",
                 q=q.shape, k=k.shape, v=v.shape)
    weights = np.zeros(scores_shape, dtype=q.dtype)
    out = _attention_in_blocks(q, k, v, mask, scores_shape, block_rows, block_scores,
                               bound_from, weights)
    return out, weights


@with_chosen_threads
def chunked_attention(q, k, v, mask=None, chunk_size=128):
    """The output of scaled_dot_product_attention, computed for `chunk_size` queries at a
    time, so peak memory grows with chunk_size × L_k instead of L_q × L_k.

    Each query's softmax needs only its own row of scores, so the rows can be done in
    chunks. Returns the output only (the full weight matrix is what we avoid building).
    Measured by benchmarks/attention.py (peak memory); no notebook uses it.
    """
    q, k, v, mask, scores_shape = _prepare(q, k, v, mask)
    require_sizes(chunk_size=chunk_size)
    return _attention_in_blocks(q, k, v, mask, scores_shape, chunk_size, BLOCK_SCORES,
                                BOUND_FROM)


def _attention_in_blocks(q, k, v, mask, scores_shape, block_rows, block_scores, bound_from,
                         weights=None):
    """Returns out and, if `weights` is an array of the scores' shape, fills it. With
    weights=None a block's scores live in a scratch buffer, so memory grows with the block,
    not with L_q × L_k."""
    dtype = q.dtype
    batch, (L_q, L_k), d_v = scores_shape[:-2], scores_shape[-2:], v.shape[-1]
    # One flat batch axis for every array, so that a group of heads is a slice.
    q = _flatten(q * dtype.type(1.0 / np.sqrt(q.shape[-1])), batch)  # (N, L_q, d_k)
    k = _flatten(k, batch)  # (N, L_k, d_k)
    k_t = np.swapaxes(k, -1, -2)  # (N, d_k, L_k)
    v = _flatten(v, batch)  # (N, L_k, d_v)
    n_batch = q.shape[0]
    out = np.empty((n_batch, L_q, d_v), dtype=dtype)
    if n_batch == 0 or L_q == 0:
        return out.reshape(batch + (L_q, d_v))
    bounded = n_batch * L_q * L_k >= bound_from
    if bounded:
        q_norms = np.sqrt(np.einsum("nld,nld->nl", q, q))  # (N, L_q)
        k_norm_max = np.sqrt(np.einsum("nld,nld->nl", k, k).max(axis=-1))  # (N,)
        exp_limit = _exp_limit(dtype)
    if mask is not None and any(size > 1 for size in mask.shape[:-2]):
        mask = _flatten(mask, batch)  # (N, L_q or 1, L_k)
    elif mask is not None:
        mask = mask.reshape((1,) + mask.shape[-2:])  # one mask for every head

    block_rows = min(block_rows, L_q)
    group = max(1, min(n_batch, block_scores // (block_rows * L_k)))
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


def _softmax_inplace(x, small=False):
    """softmax over the last axis that overwrites the float array `x` and returns it.

    small=True is the caller's promise that |x| <= _exp_limit(x.dtype) wherever x is not
    -inf, so there is no row max to look for.
    """
    if not small:
        row_max = np.max(x, axis=-1, keepdims=True)
        if not np.all(np.abs(row_max) <= _exp_limit(x.dtype)):
            if np.isnan(row_max).any() or np.isposinf(row_max).any():
                raise ValueError("attention scores contain NaN or +inf")
            row_max[np.isneginf(row_max)] = 0  # a fully masked row stays -inf: exp gives 0
            x -= row_max
    np.exp(x, out=x)
    total = np.sum(x, axis=-1, keepdims=True)
    # multiply by 1/total (one division per row, not per entry); 0 for fully masked rows
    inv_total = np.divide(1, total, out=np.zeros_like(total), where=total > 0)
    x *= inv_total
    return x


def _exp_limit(dtype):
    """Half the log of the largest float (44 in float32): exp of a number no bigger than this
    in size neither overflows nor vanishes, and neither does a sum of e^44 such terms."""
    return np.log(np.finfo(dtype).max) / 2


def _flatten(a, batch):
    """a (..., m, n) broadcast to batch + (m, n), as (prod(batch), m, n); copies only if it must."""
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


def _prepare(q, k, v, mask):
    q, k, v, mask = require_attention_inputs(q, k, v, mask)
    scores_shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]) + (
        q.shape[-2], k.shape[-2])
    if mask is not None:
        mask = mask.reshape((1,) * (len(scores_shape) - mask.ndim) + mask.shape)
    require_fits(q.dtype.itemsize * math.prod(scores_shape[:-1]) * v.shape[-1], "the output",
                 q=q.shape, k=k.shape, v=v.shape)
    return q, k, v, mask, scores_shape


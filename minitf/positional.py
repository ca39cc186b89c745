"""Positional encoding (位置编码): attention alone ignores word order, so add where each
token stands.

Sinusoidal (the paper):  PE[pos, 2i] = sin(pos / 10000^(2i/d)),  PE[pos, 2i+1] = cos(…).
Learned: one trained vector per position. Rotary (RoPE): rotate q and k by position-dependent
angles so their dot product depends only on the offset between positions.
Built in notebook 04.
"""

import numpy as np

from .module import Module, as_rng
from .validation import (
    require_float_array,
    require_float_dtype,
    require_int,
    require_last_dim,
    require_real,
)


def sinusoidal_encoding(max_len, d_model, dtype=np.float32):
    """(max_len, d_model) table of the paper's sines and cosines.
    Notebook 04, "The sinusoidal encoding"."""
    max_len = require_int(max_len, "max_len", low=1)
    d_model = require_int(d_model, "d_model", low=1)
    dtype = require_float_dtype(dtype)
    if d_model % 2:
        raise ValueError(f"sinusoidal encoding needs an even d_model, got {d_model}")
    pos = np.arange(max_len)[:, None]  # (max_len, 1)
    freq = 1.0 / 10000 ** (np.arange(0, d_model, 2) / d_model)  # (d_model/2,)
    angles = pos * freq  # (max_len, d_model/2)
    pe = np.empty((max_len, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe.astype(dtype)


def _check_positions(x, start, max_len):
    start = require_int(start, "start", low=0)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., L, d_model), got shape {x.shape}")
    if start + x.shape[-2] > max_len:
        raise ValueError(f"positions {start}..{start + x.shape[-2] - 1} exceed "
                         f"max_len={max_len}")


class SinusoidalPositionalEncoding(Module):
    """x (..., L, d_model) -> x + PE[start:start+L]. No parameters.
    Notebook 04, "The sinusoidal encoding"."""

    def __init__(self, max_len, d_model, *, dtype=np.float32):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.table = sinusoidal_encoding(max_len, d_model, dtype)

    def forward(self, x, start=0):
        x = require_float_array(x, "x")
        require_last_dim(x, self.d_model, "x")
        _check_positions(x, start, self.max_len)
        return x + self.table[start:start + x.shape[-2]]

    def backward(self, dout):
        return dout


class LearnedPositionalEmbedding(Module):
    """x (..., L, d_model) -> x + weight[start:start+L], one trained vector per position.
    Notebook 04, "Learned positional embeddings"."""

    def __init__(self, max_len, d_model, *, dtype=np.float32, rng=None):
        super().__init__()
        self.d_model = require_int(d_model, "d_model", low=1)
        self.max_len = require_int(max_len, "max_len", low=1)
        dtype = require_float_dtype(dtype)
        weight = as_rng(rng).normal(0.0, 0.02, size=(max_len, d_model))
        self.add_param("weight", weight.astype(dtype))

    def forward(self, x, start=0):
        x = require_float_array(x, "x")
        require_last_dim(x, self.d_model, "x")
        _check_positions(x, start, self.max_len)
        self._cache = (start, x.shape[-2], x.ndim)
        return x + self.weight[start:start + x.shape[-2]]

    def backward(self, dout):
        start, length, ndim = self.saved()
        self.grads["weight"][start:start + length] += dout.sum(axis=tuple(range(ndim - 2)))
        return dout


def rope(x, positions=None, base=10000.0):
    """Rotary position embedding for x (..., L, d) with even d; positions (L,), default 0..L-1.

    Pairs (x[2i], x[2i+1]) are rotated by the angle pos / base^(2i/d), so that
    rope(q)_m · rope(k)_n depends on q, k and the offset m − n only.
    Notebook 04, "Optional: rotary encoding (RoPE)".
    """
    x = require_float_array(x, "x")
    base = require_real(base, "base", low=1, low_open=True)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., L, d), got shape {x.shape}")
    L, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(f"rope needs an even feature size, got {d}")
    positions = np.arange(L) if positions is None else require_float_array(positions, "positions")
    if positions.shape != (L,):
        raise ValueError(f"positions must have shape (L,) = ({L},), one per row of x; "
                         f"got shape {positions.shape}")
    angles = positions[:, None] / base ** (np.arange(0, d, 2) / d)  # (L, d/2)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out

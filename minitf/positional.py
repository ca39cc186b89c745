"""Positional encoding (位置编码): attention alone ignores word order, so add where each
token stands.

Sinusoidal (the paper):  PE[pos, 2i] = sin(pos / 10000^(2i/d)),  PE[pos, 2i+1] = cos(…).
Learned: one trained vector per position. Rotary (RoPE): rotate q and k by position-dependent
angles so their dot product depends only on the offset between positions.
Built in notebook 04.
"""

import numpy as np

from .layers import Embedding
from .module import Module, as_rng
from .validation import (
    all_finite,
    require_fits,
    require_float_array,
    require_float_dtype,
    require_int,
    require_last_dim,
    require_positions,
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
    require_fits(8 * max_len * d_model, "a (max_len, d_model) float64 table",
                 max_len=max_len, d_model=d_model)
    pos = np.arange(max_len)[:, None]  # (max_len, 1)
    freq = 1.0 / 10000 ** (np.arange(0, d_model, 2) / d_model)  # (d_model/2,)
    angles = pos * freq  # (max_len, d_model/2)
    pe = np.empty((max_len, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe.astype(dtype)


class SinusoidalPositionalEncoding(Module):
    """x (..., L, d_model) -> x + PE[start:start+L]. No parameters.
    No notebook uses it by name: notebook 04 adds the table itself."""

    def __init__(self, max_len, d_model, *, dtype=np.float32):
        super().__init__()
        self.table = sinusoidal_encoding(max_len, d_model, dtype)
        self.max_len, self.d_model = self.table.shape  # ints, whatever kind of int was given

    def forward(self, x, start=0):
        x = require_float_array(x, "x")
        require_last_dim(x, self.d_model, "x")
        start = require_positions(x, start, self.max_len)
        self.save_for_backward(x.shape)  # nothing to keep but that there was a forward
        return x + self.table[start:start + x.shape[-2]]

    def backward(self, dout):
        self.saved_for_backward(dout)
        return dout


class LearnedPositionalEmbedding(Module):
    """x (..., L, d_model) -> x + weight[start:start+L], one trained vector per position.
    Notebook 04, "Learned positional embeddings"."""

    def __init__(self, max_len, d_model, *, dtype=np.float32, rng=None):
        super().__init__()
        self.d_model = require_int(d_model, "d_model", low=1)
        self.max_len = require_int(max_len, "max_len", low=1)
        dtype = require_float_dtype(dtype)
        require_fits((8 + 2 * dtype.itemsize) * self.max_len * self.d_model,
                     "a (max_len, d_model) table, its gradient and its float64 draw",
                     max_len=self.max_len, d_model=self.d_model)
        weight = as_rng(rng).normal(0.0, 0.02, size=(max_len, d_model))
        self.add_param("weight", weight.astype(dtype))

    def forward(self, x, start=0):
        x = require_float_array(x, "x")
        require_last_dim(x, self.d_model, "x")
        start = require_positions(x, start, self.max_len)
        self.save_for_backward((start, x.shape[-2], x.ndim))
        return x + self.weight[start:start + x.shape[-2]]

    def backward(self, dout):
        start, length, ndim = self.saved_for_backward(dout)
        self.grads["weight"][start:start + length] += dout.sum(axis=tuple(range(ndim - 2)))
        return dout


class EmbeddingWithPositions(Embedding):
    """tokens (B, L) ids, start -> (B, L, d_model): the model's input,

        x = weight[tokens] · √d_model + PE[start : start + L],

    a token's vector scaled up to the size of the sinusoidal encoding, plus that encoding.
    Parameters as Embedding's (`weight`); `pe` is a fixed table, not a parameter. Every model
    of the course starts with it (`model.src_embed`, `model.tgt_embed`); notebook 06 §6
    writes out what it computes. No notebook uses it by name.
    """

    def __init__(self, vocab_size, d_model, max_len, *, dtype=np.float32, rng=None):
        super().__init__(vocab_size, d_model, dtype=dtype, rng=rng)
        self.max_len = require_int(max_len, "max_len", low=1)
        self.pe = sinusoidal_encoding(max_len, d_model, dtype)  # (max_len, d_model)
        self.scale = self.pe.dtype.type(np.sqrt(d_model))

    def forward(self, tokens, start=0):
        start = require_int(start, "start", low=0)
        length = np.shape(tokens)[-1] if np.ndim(tokens) else 0
        if start + length > self.max_len:
            raise ValueError(f"tokens reach position {start + length}, longer than "
                             f"max_len={self.max_len}")
        return super().forward(tokens) * self.scale + self.pe[start:start + length]

    def backward(self, dout):
        return super().backward(dout * self.scale)


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
    if not all_finite(positions):
        raise ValueError("positions contain NaN or inf")
    angles = positions[:, None] / base ** (np.arange(0, d, 2) / d)  # (L, d/2)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out

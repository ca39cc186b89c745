"""The encoder: a stack of identical layers, each self-attention then a feed-forward network,
each wrapped in a residual connection (残差连接) and LayerNorm (层归一化).

Post-LN (the paper):  x = norm1(x + self_attn(x));  x = norm2(x + ffn(x))
Pre-LN  (norm_first): x = x + self_attn(norm1(x)); x = x + ffn(norm2(x)); a final norm
after the stack.
Built in notebook 05. Under a causal mask the same layers are the blocks of a decoder-only
model (minitf.gpt): there they take a KV cache for generation, as the decoder's layers do.
"""

import numpy as np

from .layers import FeedForward, LayerNorm
from .module import Module, ModuleList, as_rng
from .multihead import MultiHeadAttention
from .validation import (
    require_bool,
    require_cache,
    require_fits,
    require_float_dtype,
    require_sizes,
)

_LAYER_OBJECTS = 1 << 14  # the Python objects of one encoder layer, about 15 KiB


class EncoderLayer(Module):
    """One encoder layer (编码器层): self-attention and a feed-forward network, each with a
    residual connection and LayerNorm. Notebook 05 §4 (post-LN) and §5 (pre-LN)."""

    def __init__(self, d_model, num_heads, d_ff, norm_first=False, activation="relu", *,
                 dtype=np.float32, rng=None):
        super().__init__()
        d_model, num_heads, d_ff = require_sizes(d_model=d_model, num_heads=num_heads, d_ff=d_ff)
        rng = as_rng(rng)
        self.norm_first = require_bool(norm_first, "norm_first")
        self.self_attn = MultiHeadAttention(d_model, num_heads, dtype=dtype, rng=rng)
        self.norm1 = LayerNorm(d_model, dtype=dtype)
        self.ffn = FeedForward(d_model, d_ff, activation, dtype=dtype, rng=rng)
        self.norm2 = LayerNorm(d_model, dtype=dtype)

    def forward(self, x, mask=None, cache=None):
        """x (B, L, d_model) -> (B, L, d_model); mask broadcastable to (B, h, L, L).

        cache: None, or a dict that keeps this layer's keys and values during generation
        (a decoder-only model's block; as in DecoderLayer).
        """
        self.save_for_backward(True)  # its sub-layers keep what backward needs
        self_cache = None if cache is None else require_cache(cache).setdefault("self_attn", {})
        if self.norm_first:
            x = x + self.self_attn(self.norm1(x), mask=mask, cache=self_cache)
            return x + self.ffn(self.norm2(x))
        x = self.norm1(x + self.self_attn(x, mask=mask, cache=self_cache))
        return self.norm2(x + self.ffn(x))

    def backward(self, dout):
        self.saved_for_backward(dout)
        if self.norm_first:
            dh = dout + self.norm2.backward(self.ffn.backward(dout))
            return dh + self.norm1.backward(self.self_attn.backward(dh))
        dh = self.norm2.backward(dout)
        dh = dh + self.ffn.backward(dh)
        dx = self.norm1.backward(dh)
        return dx + self.self_attn.backward(dx)


class Encoder(Module):
    """The encoder (编码器): `num_layers` EncoderLayers, plus a final LayerNorm when pre-LN.
    Notebook 05 §6."""

    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False,
                 activation="relu", *, dtype=np.float32, rng=None):
        super().__init__()
        num_layers, d_model, num_heads, d_ff = require_sizes(
            num_layers=num_layers, d_model=d_model, num_heads=num_heads, d_ff=d_ff)
        norm_first = require_bool(norm_first, "norm_first")
        # each layer: four (d_model, d_model) and two (d_model, d_ff) weights, and gradients
        weights = 4 * d_model * d_model + 2 * d_model * d_ff
        require_fits(num_layers * (2 * require_float_dtype(dtype).itemsize * weights
                                   + _LAYER_OBJECTS), "the layers' weights and gradients",
                     num_layers=num_layers, d_model=d_model, d_ff=d_ff)
        rng = as_rng(rng)
        self.layers = ModuleList([
            EncoderLayer(d_model, num_heads, d_ff, norm_first, activation, dtype=dtype, rng=rng)
            for _ in range(num_layers)
        ])
        if norm_first:
            self.norm = LayerNorm(d_model, dtype=dtype)
        self.norm_first = norm_first

    def forward(self, x, mask=None, cache=None):
        """cache: None, or a list with one dict per layer (see EncoderLayer)."""
        self.save_for_backward(True)  # its sub-layers keep what backward needs
        if cache is not None:
            require_cache(cache, layers=len(self.layers))
        for i, layer in enumerate(self.layers):
            x = layer(x, mask=mask, cache=None if cache is None else cache[i])
        return self.norm(x) if self.norm_first else x

    def backward(self, dout):
        self.saved_for_backward(dout)
        if self.norm_first:
            dout = self.norm.backward(dout)
        for layer in reversed(list(self.layers)):
            dout = layer.backward(dout)
        return dout

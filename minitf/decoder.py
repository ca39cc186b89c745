"""The decoder: each layer has masked self-attention (it may look only at earlier target
tokens: 掩码), cross-attention (交叉注意力) whose keys and values come from the encoder
output ("memory"), and a feed-forward network; each with a residual connection and LayerNorm.

Post-LN:  y = norm1(y + self_attn(y)); y = norm2(y + cross_attn(y, memory)); y = norm3(y + ffn(y))
Pre-LN:   y = y + self_attn(norm1(y)); y = y + cross_attn(norm2(y), memory); y = y + ffn(norm3(y))
Built in notebook 06.
"""

import numpy as np

from .layers import FeedForward, LayerNorm
from .module import Module, ModuleList, as_rng
from .multihead import MultiHeadAttention
from .validation import (
    require_bool,
    require_cache,
    require_fits,
    require_float_array,
    require_float_dtype,
    require_sizes,
)

_LAYER_OBJECTS = 1 << 15  # the Python objects of one decoder layer, about 20 KiB


class DecoderLayer(Module):
    """One decoder layer (解码器层): masked self-attention, cross-attention to the memory and a
    feed-forward network, each with a residual connection and LayerNorm. Notebook 06 §5."""

    def __init__(self, d_model, num_heads, d_ff, norm_first=False, activation="relu", *,
                 dtype=np.float32, rng=None):
        super().__init__()
        d_model, num_heads, d_ff = require_sizes(d_model=d_model, num_heads=num_heads, d_ff=d_ff)
        rng = as_rng(rng)
        self.norm_first = require_bool(norm_first, "norm_first")
        self.self_attn = MultiHeadAttention(d_model, num_heads, dtype=dtype, rng=rng)
        self.norm1 = LayerNorm(d_model, dtype=dtype)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dtype=dtype, rng=rng)
        self.norm2 = LayerNorm(d_model, dtype=dtype)
        self.ffn = FeedForward(d_model, d_ff, activation, dtype=dtype, rng=rng)
        self.norm3 = LayerNorm(d_model, dtype=dtype)

    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        """y (B, L_t, d_model), memory (B, L_s, d_model) -> (B, L_t, d_model).

        cache: None, or a dict that keeps this layer's keys and values during generation.
        """
        self.save_for_backward(True)  # its sub-layers keep what backward needs
        y, memory = require_float_array(y, "y"), require_float_array(memory, "memory")
        self_cache = cross_cache = None
        if cache is not None:
            self_cache = require_cache(cache).setdefault("self_attn", {})
            cross_cache = cache.setdefault("cross_attn", {})
        if self.norm_first:
            y = y + self.self_attn(self.norm1(y), mask=tgt_mask, cache=self_cache)
            y = y + self.cross_attn(self.norm2(y), memory, mask=memory_mask, cache=cross_cache)
            return y + self.ffn(self.norm3(y))
        y = self.norm1(y + self.self_attn(y, mask=tgt_mask, cache=self_cache))
        y = self.norm2(y + self.cross_attn(y, memory, mask=memory_mask, cache=cross_cache))
        return self.norm3(y + self.ffn(y))

    def backward(self, dout):
        """Returns (dy, d_memory)."""
        self.saved_for_backward(dout)
        if self.norm_first:
            dh = dout + self.norm3.backward(self.ffn.backward(dout))
            d_query, d_memory = self.cross_attn.backward(dh)
            dh = dh + self.norm2.backward(d_query)
            return dh + self.norm1.backward(self.self_attn.backward(dh)), d_memory
        dh = self.norm3.backward(dout)
        dh = dh + self.ffn.backward(dh)
        dh = self.norm2.backward(dh)
        d_query, d_memory = self.cross_attn.backward(dh)
        dh = self.norm1.backward(dh + d_query)
        return dh + self.self_attn.backward(dh), d_memory


class Decoder(Module):
    """The decoder (解码器): `num_layers` DecoderLayers, plus a final LayerNorm when pre-LN.
    Notebook 06 §5."""

    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False,
                 activation="relu", *, dtype=np.float32, rng=None):
        super().__init__()
        num_layers, d_model, num_heads, d_ff = require_sizes(
            num_layers=num_layers, d_model=d_model, num_heads=num_heads, d_ff=d_ff)
        norm_first = require_bool(norm_first, "norm_first")
        # each layer: eight (d_model, d_model) and two (d_model, d_ff) weights, and gradients
        weights = 8 * d_model * d_model + 2 * d_model * d_ff
        require_fits(num_layers * (2 * require_float_dtype(dtype).itemsize * weights
                                   + _LAYER_OBJECTS), "the layers' weights and gradients",
                     num_layers=num_layers, d_model=d_model, d_ff=d_ff)
        rng = as_rng(rng)
        self.layers = ModuleList([
            DecoderLayer(d_model, num_heads, d_ff, norm_first, activation, dtype=dtype, rng=rng)
            for _ in range(num_layers)
        ])
        if norm_first:
            self.norm = LayerNorm(d_model, dtype=dtype)
        self.norm_first = norm_first

    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        """cache: None, or a list with one dict per layer (see DecoderLayer)."""
        self.save_for_backward(True)  # its sub-layers keep what backward needs
        if cache is not None:
            require_cache(cache, layers=len(self.layers))
        for i, layer in enumerate(self.layers):
            y = layer(y, memory, tgt_mask, memory_mask, None if cache is None else cache[i])
        return self.norm(y) if self.norm_first else y

    def backward(self, dout):
        """Returns (dy, d_memory); d_memory sums every layer's cross-attention gradient."""
        self.saved_for_backward(dout)
        if self.norm_first:
            dout = self.norm.backward(dout)
        d_memory = 0
        for layer in reversed(list(self.layers)):
            dout, dm = layer.backward(dout)
            d_memory = d_memory + dm
        return dout, d_memory

"""Multi-head attention (多头注意力).

Each head i has its own projections — columns i*d_k:(i+1)*d_k of W_q, W_k, W_v — and attends
on its own; the heads' outputs are concatenated and mixed by W_o:

    head_i = Attention(X W_q^i, C W_k^i, C W_v^i),   MHA = Concat(head_1..head_h) W_o

with C = X for self-attention (自注意力) and C = the encoder output for cross-attention
(交叉注意力).
Built in notebook 03.
"""

import numpy as np

from .attention import scaled_dot_product_attention, scaled_dot_product_attention_backward
from .fast import blocked_attention
from .layers import glorot_uniform, matmul_rows
from .module import Module, as_rng
from .validation import (
    require_cache,
    require_fits,
    require_float_array,
    require_float_dtype,
    require_int,
    require_last_dim,
)


def split_heads(x, num_heads):
    """(B, L, d_model) -> (B, h, L, d_k); d_model must be a multiple of num_heads.
    Notebook 03, "One big projection, split into heads"."""
    x = require_float_array(x, "x", ndim=3)
    num_heads = require_int(num_heads, "num_heads", low=1)
    B, L, d_model = x.shape
    if d_model % num_heads:
        raise ValueError(f"x has d_model={d_model}, not divisible by num_heads={num_heads}")
    return x.reshape(B, L, num_heads, d_model // num_heads).transpose(0, 2, 1, 3)


def merge_heads(x):
    """(B, h, L, d_k) -> (B, L, h * d_k): the heads side by side (concatenation).
    Notebook 03, "One big projection, split into heads"."""
    x = require_float_array(x, "x", ndim=4)
    B, h, L, d_k = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, L, h * d_k)


class MultiHeadAttention(Module):
    """Multi-head attention (多头注意力), built in notebook 03; used as self-attention in the
    encoder (05), masked self-attention and cross-attention in the decoder (06).

    `fast` picks the attention kernel: the reference
    `minitf.attention.scaled_dot_product_attention` (False, the default: the formula of
    notebooks 01–02, what a reader steps into) or `minitf.fast.blocked_attention` (True); the
    numbers are the same to float rounding. The blocked kernel pays off on long sequences
    (1.4–1.8× at 8 heads × 512 positions, causal) and not at the course's sizes (a training
    step of the translator: the same time). Set it on an instance (`mha.fast = True`) or on
    the class; `python -m minitf train` leaves it off.
    """

    fast = False

    def __init__(self, d_model, num_heads, *, dtype=np.float32, rng=None):
        super().__init__()
        d_model = require_int(d_model, "d_model", low=1)
        num_heads = require_int(num_heads, "num_heads", low=1)
        dtype = require_float_dtype(dtype)
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        require_fits(32 * d_model * d_model, "four (d_model, d_model) float64 matrices",
                     d_model=d_model)
        rng = as_rng(rng)
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        for name in ("q", "k", "v", "o"):
            self.add_param(f"W_{name}", glorot_uniform(rng, d_model, d_model, dtype))
            self.add_param(f"b_{name}", np.zeros(d_model, dtype=dtype))
        self.attn_weights = None

    def _require_input(self, x, name):
        x = require_float_array(x, name)
        if x.ndim != 3:
            raise ValueError(f"{name} must have shape (B, L, d_model), got shape {x.shape}")
        require_last_dim(x, self.d_model, name)
        return x

    def forward(self, x, context=None, mask=None, cache=None):
        """x (B, L_q, d_model) -> (B, L_q, d_model).

        context (B, L_k, d_model) gives the keys and values (cross-attention); None means x
        (self-attention). mask is bool, True = may attend, broadcastable to (B, h, L_q, L_k).

        cache (a dict, for generation) keeps keys and values between calls: for
        self-attention the new positions' keys and values are appended to it; for
        cross-attention they are computed from `context` once and then reused. A forward
        with a cache cannot be followed by backward.
        """
        x = self._require_input(x, "x")
        if cache is not None:
            require_cache(cache)
        is_self = context is None
        if not is_self:
            context = self._require_input(context, "context")
            if context.shape[0] != x.shape[0]:
                raise ValueError(f"x has batch size {x.shape[0]} but context has "
                                 f"{context.shape[0]}")
        q = split_heads(matmul_rows(x, self.W_q) + self.b_q, self.num_heads)  # (B, h, L_q, d_k)
        if cache is not None and not is_self and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            source = x if is_self else context
            k = split_heads(matmul_rows(source, self.W_k) + self.b_k,
                            self.num_heads)  # (B, h, L_k, d_k)
            v = split_heads(matmul_rows(source, self.W_v) + self.b_v, self.num_heads)
            if cache is not None and is_self and "k" in cache:
                k = np.concatenate([cache["k"], k], axis=2)
                v = np.concatenate([cache["v"], v], axis=2)
        if cache is not None:
            cache["k"], cache["v"] = k, v
        attention = blocked_attention if self.fast else scaled_dot_product_attention
        heads, weights = attention(q, k, v, mask)  # (B, h, L_q, d_k)
        concat = merge_heads(heads)  # (B, L_q, d_model)
        self.attn_weights = weights
        self.save_for_backward("kv-cache" if cache is not None
                               else (x, context, q, k, v, weights, concat))
        return matmul_rows(concat, self.W_o) + self.b_o

    def backward(self, dout):
        """Returns dx for self-attention, (dx, d_context) for cross-attention."""
        saved = self.saved_for_backward(dout)
        if saved == "kv-cache":
            raise RuntimeError("MultiHeadAttention.backward() needs a forward without a KV cache")
        x, context, q, k, v, weights, concat = saved
        d = self.d_model
        dout2 = dout.reshape(-1, d)
        self.grads["W_o"] += concat.reshape(-1, d).T @ dout2
        self.grads["b_o"] += dout2.sum(axis=0)
        d_heads = split_heads(matmul_rows(dout, self.W_o.T), self.num_heads)
        dq, dk, dv = scaled_dot_product_attention_backward(d_heads, q, k, v, weights)
        dq, dk, dv = merge_heads(dq), merge_heads(dk), merge_heads(dv)  # (B, L, d_model)
        source = x if context is None else context
        for name, inp, grad in (("q", x, dq), ("k", source, dk), ("v", source, dv)):
            grad2 = grad.reshape(-1, d)
            self.grads[f"W_{name}"] += inp.reshape(-1, d).T @ grad2
            self.grads[f"b_{name}"] += grad2.sum(axis=0)
        dx = matmul_rows(dq, self.W_q.T)
        d_source = matmul_rows(dk, self.W_k.T) + matmul_rows(dv, self.W_v.T)
        if context is None:
            return dx + d_source
        return dx, d_source

"""The basic layers: Linear, Embedding, LayerNorm (层归一化), activations, FeedForward.

Row-vector convention: y = x @ W + b with W of shape (d_in, d_out).
Built in notebooks 00 (Embedding), 05 (LayerNorm, FeedForward) and 08 (Linear's backward).
"""

import numpy as np

from .module import Module, as_rng
from .validation import (
    require_fits,
    require_float_array,
    require_float_dtype,
    require_instance,
    require_int,
    require_last_dim,
    require_real,
    require_token_ids,
)


def glorot_uniform(rng, d_in, d_out, dtype):
    """Glorot/Xavier uniform initialisation, U(±√(6 / (d_in + d_out))), shape (d_in, d_out).
    Used by every layer with weights; no notebook calls it by name."""
    rng = require_instance(rng, np.random.Generator, "rng")
    d_in, d_out = require_int(d_in, "d_in", low=1), require_int(d_out, "d_out", low=1)
    dtype = require_float_dtype(dtype)
    require_fits((8 + dtype.itemsize) * d_in * d_out, "a (d_in, d_out) matrix drawn in float64",
                 d_in=d_in, d_out=d_out)
    limit = np.sqrt(6.0 / (d_in + d_out))
    return rng.uniform(-limit, limit, size=(d_in, d_out)).astype(dtype)


def matmul_rows(x, W):
    """x (..., d_in) @ W (d_in, d_out) -> (..., d_out), as one 2-D matrix product.

    The same product as `x @ W`, faster: numpy runs a 3-D @ 2-D product as a loop of small
    products, one per batch row; flattening the rows first makes it a single BLAS call.
    With it (and Embedding's one-hot backward) a training step of the translator went from
    47 to 36 ms, 1.07× to 0.78× PyTorch's. One of the two speed-ups the reference keeps in
    place (CONTRIBUTING.md); Linear, FeedForward and MultiHeadAttention use it, no notebook
    calls it by name.
    """
    return (x.reshape(-1, x.shape[-1]) @ W).reshape(*x.shape[:-1], W.shape[-1])


def _peak_bytes(entries, dtype):
    """The most memory a layer's `entries` weights take while it is built: the weights and
    their gradients in `dtype`, and one float64 draw of them. Python ints: no wraparound."""
    return (8 + 2 * require_float_dtype(dtype).itemsize) * int(entries)


class Linear(Module):
    """y = x W + b; x (..., d_in) -> y (..., d_out).
    Notebook 03 (the projections W^Q, W^K, W^V, W^O); its backward in notebook 08 §3."""

    def __init__(self, d_in, d_out, *, dtype=np.float32, rng=None):
        super().__init__()
        self.d_in = require_int(d_in, "d_in", low=1)
        self.d_out = require_int(d_out, "d_out", low=1)
        require_fits(_peak_bytes(self.d_in * self.d_out, dtype), "a (d_in, d_out) matrix, its "
                     "gradient and its float64 draw", d_in=self.d_in, d_out=self.d_out)
        self.add_param("W", glorot_uniform(as_rng(rng), d_in, d_out, dtype))
        self.add_param("b", np.zeros(d_out, dtype=dtype))

    def forward(self, x):
        x = require_float_array(x, "x")
        require_last_dim(x, self.d_in, "x", what="d_in")
        self.save_for_backward(x)
        return matmul_rows(x, self.W) + self.b

    def backward(self, dout):
        x2 = self.saved_for_backward(dout).reshape(-1, self.d_in)
        dout2 = dout.reshape(-1, self.d_out)
        self.grads["W"] += x2.T @ dout2
        self.grads["b"] += dout2.sum(axis=0)
        return matmul_rows(dout, self.W.T)


_ONE_HOT_LIMIT = 1 << 22  # larger (tokens × vocabulary) one-hot matrices cost too much memory


class Embedding(Module):
    """A lookup table: token ids (...) -> vectors (..., d_model).
    Notebook 00 §3."""

    def __init__(self, vocab_size, d_model, *, dtype=np.float32, rng=None):
        super().__init__()
        self.vocab_size = require_int(vocab_size, "vocab_size", low=1)
        self.d_model = require_int(d_model, "d_model", low=1)
        require_fits(_peak_bytes(self.vocab_size * self.d_model, dtype), "a (vocab_size, "
                     "d_model) table, its gradient and its float64 draw",
                     vocab_size=self.vocab_size, d_model=self.d_model)
        dtype = require_float_dtype(dtype)
        # std 1/√d_model: after the model's ×√d_model the vectors have entries of size ~1.
        weight = as_rng(rng).normal(0.0, d_model ** -0.5, size=(vocab_size, d_model))
        self.add_param("weight", weight.astype(dtype))

    def forward(self, tokens):
        tokens = require_token_ids(tokens, self.vocab_size)
        self.save_for_backward(tokens)
        return self.weight[tokens]

    def backward(self, dout):
        """Token ids have no gradient: returns None, accumulates into grads["weight"]."""
        tokens = self.saved_for_backward(dout).reshape(-1)  # (N,)
        rows = dout.reshape(-1, self.d_model)  # (N, d_model)
        if tokens.size * self.vocab_size > _ONE_HOT_LIMIT:
            np.add.at(self.grads["weight"], tokens, rows)  # each row into its token's row
            return None
        # the same sum as one matrix product, several times faster than np.add.at's loop
        one_hot = tokens[:, None] == np.arange(self.vocab_size)  # (N, vocab_size)
        self.grads["weight"] += one_hot.T.astype(rows.dtype) @ rows
        return None


class LayerNorm(Module):
    """Normalise each vector over its last axis, then scale and shift:

        y = γ ⊙ (x − μ) / √(σ² + ε) + β,  σ² the biased variance.
    Notebook 05 §2.
    """

    def __init__(self, d_model, eps=1e-5, *, dtype=np.float32):
        super().__init__()
        self.d_model = require_int(d_model, "d_model", low=1)
        self.eps = require_real(eps, "eps", low=0, low_open=True)
        dtype = require_float_dtype(dtype)
        require_fits(4 * dtype.itemsize * self.d_model, "gamma, beta and their gradients",
                     d_model=self.d_model)
        self.add_param("gamma", np.ones(d_model, dtype=dtype))
        self.add_param("beta", np.zeros(d_model, dtype=dtype))

    def forward(self, x):
        x = require_float_array(x, "x")
        require_last_dim(x, self.d_model, "x")
        centered = x - x.mean(axis=-1, keepdims=True)  # x − μ
        inv_std = _inv_std(centered, self.eps)  # 1 / √(σ² + ε), (..., 1)
        x_hat = centered * inv_std
        self.save_for_backward((x_hat, inv_std))
        return self.gamma * x_hat + self.beta

    def backward(self, dout):
        x_hat, inv_std = self.saved_for_backward(dout)
        self.grads["gamma"] += np.sum(dout * x_hat, axis=tuple(range(dout.ndim - 1)))
        self.grads["beta"] += np.sum(dout, axis=tuple(range(dout.ndim - 1)))
        d_x_hat = dout * self.gamma
        # dx = (1/σ) (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂))
        return inv_std * (d_x_hat
                          - d_x_hat.mean(axis=-1, keepdims=True)
                          - x_hat * np.mean(d_x_hat * x_hat, axis=-1, keepdims=True))


def _inv_std(centered, eps):
    """1 / √(σ² + ε) (..., 1) in centered's dtype, σ² = mean(centered²) over the last axis,
    summed in float64 (squares of float32 entries above ~1e19 would overflow float32)."""
    var = np.einsum("...i,...i->...", centered, centered, dtype=np.float64) / centered.shape[-1]
    if not np.isfinite(var).all():  # NaN or inf in x, or float64 entries above ~1e154
        return _inv_std_of_large_rows(centered, eps)
    return (1 / np.sqrt(var + eps)).astype(centered.dtype)[..., None]


def _inv_std_of_large_rows(centered, eps):
    """LayerNorm's 1/√(σ² + ε) (..., 1) when σ² overflows float64: each row divided first by
    s, the largest power of two ≤ its largest |entry| (exact, so the numbers are the ones the
    plain formula would give), σ² = s² · mean((x − μ)/s)². NaN or inf in x is refused."""
    _, exponent = np.frexp(np.abs(centered).max(axis=-1))  # max = m · 2^exponent, m in [½, 1)
    s = np.ldexp(1.0, np.maximum(exponent - 1, 0))  # (...,)
    scaled = centered / s[..., None]
    var_s = np.einsum("...i,...i->...", scaled, scaled, dtype=np.float64) / centered.shape[-1]
    if not np.isfinite(var_s).all():
        raise ValueError("x contains NaN or inf")
    return (1 / (s * np.sqrt(var_s + eps / s / s))).astype(centered.dtype)[..., None]


class Dropout(Module):
    """Dropout (随机失活): in training, each entry is zeroed with probability p and the rest
    are scaled by 1/(1 − p), so the expected output is x; in evaluation (`eval()`) it is the
    identity. Notebook 05 §4 explains where the paper uses it (p = 0.1) and why the course's
    models keep p = 0: with no randomness in training, every stored output is reproducible.
    """

    def __init__(self, p=0.1, *, rng=None):
        super().__init__()
        self.p = require_real(p, "p", 0, 1, high_open=True)
        self.rng = as_rng(rng)

    def forward(self, x):
        x = require_float_array(x, "x")
        if not self.training or self.p == 0:
            self.save_for_backward(np.ones((), dtype=x.dtype))  # backward passes dout through
            return x
        keep = self.rng.random(x.shape) >= self.p
        scale = keep / x.dtype.type(1 - self.p)  # (…) 0 or 1/(1 − p)
        self.save_for_backward(scale)
        return x * scale

    def backward(self, dout):
        return dout * self.saved_for_backward(dout)


def relu(x):
    """ReLU, max(x, 0): the feed-forward network's activation (notebook 05 §3)."""
    return np.maximum(require_float_array(x, "x"), 0)


def relu_backward(dout, x):
    """dL/dx of relu given dL/d(relu(x)) and x; notebook 10 compares it with autograd."""
    return dout * (x > 0)


_GELU_C = np.sqrt(2 / np.pi)


def gelu(x):
    """GELU, tanh approximation: ½ x (1 + tanh(√(2/π) (x + 0.044715 x³))).
    Notebook 05 §3 (the activation many newer models use)."""
    x = require_float_array(x, "x")
    c = x.dtype.type(_GELU_C)
    return 0.5 * x * (1 + np.tanh(c * (x + x.dtype.type(0.044715) * x**3)))


def gelu_backward(dout, x):
    """dL/dx of gelu given dL/d(gelu(x)) and x; FeedForward.backward uses it. No notebook
    calls it by name."""
    c = x.dtype.type(_GELU_C)
    t = np.tanh(c * (x + x.dtype.type(0.044715) * x**3))
    dt = (1 - t * t) * c * (1 + x.dtype.type(3 * 0.044715) * x * x)
    return dout * (0.5 * (1 + t) + 0.5 * x * dt)


ACTIVATIONS = {"relu": (relu, relu_backward), "gelu": (gelu, gelu_backward)}


class FeedForward(Module):
    """Position-wise feed-forward network: FFN(x) = act(x W₁ + b₁) W₂ + b₂, applied to
    each position separately; x (..., d_model) -> (..., d_model), hidden size d_ff.
    Notebook 05 §3."""

    def __init__(self, d_model, d_ff, activation="relu", *, dtype=np.float32, rng=None):
        super().__init__()
        if not isinstance(activation, str) or activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        rng = as_rng(rng)
        self.d_model = require_int(d_model, "d_model", low=1)
        self.d_ff = require_int(d_ff, "d_ff", low=1)
        require_fits(_peak_bytes(2 * self.d_model * self.d_ff, dtype), "two (d_model, d_ff) "
                     "matrices and their gradients", d_model=self.d_model, d_ff=self.d_ff)
        self.activation = activation
        self.add_param("W_1", glorot_uniform(rng, d_model, d_ff, dtype))
        self.add_param("b_1", np.zeros(d_ff, dtype=dtype))
        self.add_param("W_2", glorot_uniform(rng, d_ff, d_model, dtype))
        self.add_param("b_2", np.zeros(d_model, dtype=dtype))

    def forward(self, x):
        x = require_float_array(x, "x")
        require_last_dim(x, self.d_model, "x")
        act, _ = ACTIVATIONS[self.activation]
        pre = matmul_rows(x, self.W_1) + self.b_1  # (..., d_ff)
        hidden = act(pre)
        self.save_for_backward((x, pre, hidden))
        return matmul_rows(hidden, self.W_2) + self.b_2  # (..., d_model)

    def backward(self, dout):
        x, pre, hidden = self.saved_for_backward(dout)
        _, act_backward = ACTIVATIONS[self.activation]
        dout2 = dout.reshape(-1, self.d_model)
        self.grads["W_2"] += hidden.reshape(-1, self.d_ff).T @ dout2
        self.grads["b_2"] += dout2.sum(axis=0)
        d_pre = act_backward(matmul_rows(dout, self.W_2.T), pre)
        d_pre2 = d_pre.reshape(-1, self.d_ff)
        self.grads["W_1"] += x.reshape(-1, self.d_model).T @ d_pre2
        self.grads["b_1"] += d_pre2.sum(axis=0)
        return matmul_rows(d_pre, self.W_1.T)

"""Checkers for the exercises of notebook 05: LayerNorm, the post-LN encoder layer and the
pre-LN encoder layer.

Like those of notebook 06, they compare with minitf and, for a wrong answer, name the usual
mistake it reproduces (the unbiased variance, the wrong axis, the other LN order, ...).
"""

import numpy as np

from ..attention import padding_mask
from ..encoder import EncoderLayer
from ..layers import LayerNorm
from .nb06 import diagnose, perturb_norms_and_biases, run_cases

__all__ = ["check_layer_norm", "check_encoder_layer", "check_pre_ln_encoder_layer"]


# ------------------------------------------------------------------- LayerNorm

def _normalise(x, gamma, beta, axis=-1, ddof=0, eps=1e-5, eps_inside=True):
    """LayerNorm with the knobs that the usual mistakes turn."""
    mean = x.mean(axis=axis, keepdims=True)
    var = x.var(axis=axis, ddof=ddof, keepdims=True)
    std = np.sqrt(var + eps) if eps_inside else np.sqrt(var) + eps
    return gamma * (x - mean) / std + beta


def _judge_layer_norm(got, x, gamma, beta):
    norm = LayerNorm(x.shape[-1], dtype=x.dtype)
    norm.load_state_dict({"gamma": gamma, "beta": beta})
    with np.errstate(all="ignore"):
        mistakes = [
            (_normalise(x, gamma, beta, ddof=1),
             "that is the unbiased variance (÷ (d − 1)); LayerNorm divides by d, "
             "as np.var does by default"),
            (_normalise(x, gamma, beta, axis=0),
             "normalised over the batch (axis 0); LayerNorm normalises each position "
             "over its features, the last axis"),
            (_normalise(x, gamma, beta, axis=None),
             "normalised over the whole array; each position gets its own mean and "
             "variance, over the last axis (axis=-1, keepdims=True)"),
            (_normalise(x, 1.0, 0.0), "γ and β are not applied: return γ · x̂ + β"),
            (_normalise(x, gamma, beta, eps=0.0),
             "ε is missing: divide by √(σ² + ε) with ε = 1e-5"),
            (_normalise(x, gamma, beta, eps_inside=False),
             "ε belongs inside the square root: √(σ² + ε), not √σ² + ε"),
        ]
    return diagnose(got, norm(x), mistakes)


def _layer_norm_cases():
    rng = np.random.default_rng(5)
    d = 6
    return [
        (3 * rng.standard_normal((4, d)) + 2, rng.standard_normal(d), rng.standard_normal(d)),
        (rng.standard_normal((2, 3, d)), 1 + 0.5 * rng.standard_normal(d),
         rng.standard_normal(d)),
        # Nearly constant vectors (variance ~1e-6): here ε matters.
        (1e-3 * rng.standard_normal((3, d)) + 5, rng.standard_normal(d),
         rng.standard_normal(d)),
    ]


def check_layer_norm(fn):
    """fn(x, gamma, beta) -> LayerNorm of x over its last axis, ε = 1e-5 (fn's default)."""
    return run_cases("layer_norm", fn, _layer_norm_cases(), _judge_layer_norm)


# ------------------------------------------------------------- encoder layers

def _post_ln(x, layer, mask, residual=True, use_mask=True, ffn_on_input=False):
    keep = 1.0 if residual else 0.0
    h = layer.norm1(keep * x + layer.self_attn(x, mask=mask if use_mask else None))
    return layer.norm2(keep * h + layer.ffn(x if ffn_on_input else h))


def _pre_ln(x, layer, mask, use_mask=True, add_normed=False, final_norm=False):
    a = layer.norm1(x)
    h = (a if add_normed else x) + layer.self_attn(a, mask=mask if use_mask else None)
    b = layer.norm2(h)
    out = (b if add_normed else h) + layer.ffn(b)
    return layer.norm2(out) if final_norm else out


def _encoder_cases(norm_first):
    rng = np.random.default_rng(50)
    src = np.array([[5, 6, 7, 2, 0], [8, 2, 0, 0, 0]])
    layers = [perturb_norms_and_biases(
        EncoderLayer(d, h, 2 * d, norm_first=norm_first, dtype=np.float64, rng=seed), seed + 100)
        for d, h, seed in ((8, 2, 3), (12, 3, 4))]
    return [
        (rng.standard_normal((2, 5, 8)), layers[0], padding_mask(src)),
        (rng.standard_normal((1, 4, 12)), layers[1], None),
    ]


def _judge_post_ln(got, x, layer, mask):
    mistakes = [
        (_pre_ln(x, layer, mask), "that is the pre-LN order; post-LN adds first and then "
                                  "normalises: x = norm1(x + self_attn(x))"),
        (_post_ln(x, layer, mask, residual=False),
         "a residual connection is missing: norm1(x + self_attn(x)), not norm1(self_attn(x))"),
        (_post_ln(x, layer, mask, ffn_on_input=True),
         "the FFN must read the output of the first Add & Norm, not the layer's input"),
    ]
    if mask is not None:
        mistakes.append((_post_ln(x, layer, mask, use_mask=False),
                         "the self-attention ignores the padding mask: pass mask=mask"))
    return diagnose(got, layer(x, mask), mistakes)


def check_encoder_layer(fn):
    """fn(x, layer, mask) -> the post-LN encoder layer built from layer.self_attn,
    layer.norm1, layer.ffn, layer.norm2."""
    return run_cases("encoder_layer", fn, _encoder_cases(norm_first=False), _judge_post_ln)


def _judge_pre_ln(got, x, layer, mask):
    mistakes = [
        (_post_ln(x, layer, mask), "that is the post-LN order; pre-LN normalises the "
                                   "sub-layer's input: x = x + self_attn(norm1(x))"),
        (_pre_ln(x, layer, mask, add_normed=True),
         "the residual adds the normalised x; add the un-normalised x: x + self_attn(norm1(x))"),
        (_pre_ln(x, layer, mask, final_norm=True),
         "the output was normalised again; in pre-LN the layer's output is not normalised "
         "(the final LayerNorm belongs to the stack, Encoder.norm)"),
    ]
    if mask is not None:
        mistakes.append((_pre_ln(x, layer, mask, use_mask=False),
                         "the self-attention ignores the padding mask: pass mask=mask"))
    return diagnose(got, layer(x, mask), mistakes)


def check_pre_ln_encoder_layer(fn):
    """fn(x, layer, mask) -> the pre-LN encoder layer built from layer.norm1,
    layer.self_attn, layer.norm2, layer.ffn (no final LayerNorm: that is the stack's)."""
    return run_cases("pre_ln_encoder_layer", fn, _encoder_cases(norm_first=True),
                     _judge_pre_ln)

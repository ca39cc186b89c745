"""Exercises of notebook 05: LayerNorm, the post-LN encoder layer and the pre-LN encoder
layer (cases, references, known mistakes)."""

import numpy as np

from ..attention import padding_mask
from ..encoder import EncoderLayer
from ..layers import LayerNorm
from .core import Case, Exercise, Mistake
from .shared import perturb_norms_and_biases

__all__ = ["check_layer_norm", "check_encoder_layer", "check_pre_ln_encoder_layer"]


# ------------------------------------------------------------------- LayerNorm

def _normalise(x, gamma, beta, axis=-1, ddof=0, eps=1e-5, eps_inside=True):
    """LayerNorm with the knobs that the usual mistakes turn."""
    mean = x.mean(axis=axis, keepdims=True)
    var = x.var(axis=axis, ddof=ddof, keepdims=True)
    std = np.sqrt(var + eps) if eps_inside else np.sqrt(var) + eps
    return gamma * (x - mean) / std + beta


def _reference_layer_norm(x, gamma, beta):
    norm = LayerNorm(x.shape[-1], dtype=x.dtype)
    norm.load_state_dict({"gamma": gamma, "beta": beta})
    return norm(x)


def _layer_norm_cases():
    rng = np.random.default_rng(5)
    d = 6
    return [
        Case((3 * rng.standard_normal((4, d)) + 2, rng.standard_normal(d),
              rng.standard_normal(d)), "4 positions"),
        Case((rng.standard_normal((2, 3, d)), 1 + 0.5 * rng.standard_normal(d),
              rng.standard_normal(d)), "a batch (B, L, d)"),
        Case((1e-3 * rng.standard_normal((3, d)) + 5, rng.standard_normal(d),
              rng.standard_normal(d)), "nearly constant rows (variance ~1e-6)"),
    ]


LAYER_NORM = Exercise(
    name="layer_norm", checker="check_layer_norm", args=("x", "gamma", "beta"),
    task="γ · (x − mean) / √(var + ε) + β over the last axis of x, ε = 1e-5",
    cases=_layer_norm_cases, reference=_reference_layer_norm,
    mistakes=(
        Mistake("that is the unbiased variance (÷ (d − 1)); LayerNorm divides by d, as np.var "
                "does by default", lambda x, g, b: _normalise(x, g, b, ddof=1)),
        Mistake("normalised over the batch (axis 0); LayerNorm normalises each position over "
                "its features, the last axis", lambda x, g, b: _normalise(x, g, b, axis=0)),
        Mistake("normalised over the whole array; each position gets its own mean and "
                "variance, over the last axis (axis=-1, keepdims=True)",
                lambda x, g, b: _normalise(x, g, b, axis=None)),
        Mistake("γ and β are not applied: return γ · x̂ + β",
                lambda x, g, b: _normalise(x, 1.0, 0.0)),
        Mistake("ε is missing: divide by √(σ² + ε) with ε = 1e-5",
                lambda x, g, b: _normalise(x, g, b, eps=0.0)),
        Mistake("ε belongs inside the square root: √(σ² + ε), not √σ² + ε",
                lambda x, g, b: _normalise(x, g, b, eps_inside=False)),
    ))


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
        Case((rng.standard_normal((2, 5, 8)), layers[0], padding_mask(src)),
             "a padded batch of 2 (d_model = 8, 2 heads)"),
        Case((rng.standard_normal((1, 4, 12)), layers[1], None),
             "one sentence, no mask (d_model = 12, 3 heads)"),
    ]


ENCODER_LAYER = Exercise(
    name="encoder_layer", checker="check_encoder_layer", args=("x", "layer", "mask"),
    task="the post-LN layer: x = norm1(x + self_attn(x, mask)); norm2(x + ffn(x))",
    cases=lambda: _encoder_cases(norm_first=False),
    reference=lambda x, layer, mask: layer(x, mask),
    mistakes=(
        Mistake("that is the pre-LN order; post-LN adds first and then normalises: "
                "x = norm1(x + self_attn(x))", _pre_ln),
        Mistake("a residual connection is missing: norm1(x + self_attn(x)), not "
                "norm1(self_attn(x))", lambda x, layer, mask: _post_ln(x, layer, mask, False)),
        Mistake("the FFN must read the output of the first Add & Norm, not the layer's input",
                lambda x, layer, mask: _post_ln(x, layer, mask, ffn_on_input=True)),
        Mistake("the self-attention ignores the padding mask: pass mask=mask",
                lambda x, layer, mask: _post_ln(x, layer, mask, use_mask=False)),
    ))

PRE_LN_ENCODER_LAYER = Exercise(
    name="pre_ln_encoder_layer", checker="check_pre_ln_encoder_layer",
    args=("x", "layer", "mask"),
    task="the pre-LN layer: x = x + self_attn(norm1(x), mask); x + ffn(norm2(x))",
    cases=lambda: _encoder_cases(norm_first=True),
    reference=lambda x, layer, mask: layer(x, mask),
    mistakes=(
        Mistake("that is the post-LN order; pre-LN normalises the sub-layer's input: "
                "x = x + self_attn(norm1(x))", _post_ln),
        Mistake("the residual adds the normalised x; add the un-normalised x: "
                "x + self_attn(norm1(x))",
                lambda x, layer, mask: _pre_ln(x, layer, mask, add_normed=True)),
        Mistake("the output was normalised again; in pre-LN the layer's output is not "
                "normalised (the final LayerNorm belongs to the stack, Encoder.norm)",
                lambda x, layer, mask: _pre_ln(x, layer, mask, final_norm=True)),
        Mistake("the self-attention ignores the padding mask: pass mask=mask",
                lambda x, layer, mask: _pre_ln(x, layer, mask, use_mask=False)),
    ))


def check_layer_norm(fn):
    """fn(x, gamma, beta) -> LayerNorm of x over its last axis, ε = 1e-5 (fn's default).
    An exercise of notebook 05."""
    return LAYER_NORM.check(fn)


def check_encoder_layer(fn):
    """fn(x, layer, mask) -> the post-LN encoder layer built from layer.self_attn,
    layer.norm1, layer.ffn, layer.norm2. An exercise of notebook 05."""
    return ENCODER_LAYER.check(fn)


def check_pre_ln_encoder_layer(fn):
    """fn(x, layer, mask) -> the pre-LN encoder layer built from layer.norm1,
    layer.self_attn, layer.norm2, layer.ffn (no final LayerNorm: that is the stack's).
    An exercise of notebook 05."""
    return PRE_LN_ENCODER_LAYER.check(fn)


EXERCISES = [LAYER_NORM, ENCODER_LAYER, PRE_LN_ENCODER_LAYER]

"""Exercises of notebook 05: a LayerNorm bug to fix, RMSNorm, and the pre-LN encoder layer
(cases, references, known mistakes)."""

import numpy as np

from ..attention import padding_mask
from ..encoder import EncoderLayer
from ..layers import LayerNorm
from .core import Case, Exercise, Mistake
from .shared import perturb_norms_and_biases

__all__ = ["check_layer_norm", "check_rms_norm", "check_pre_ln_encoder_layer"]


# ------------------------------------------------------------------- LayerNorm

def _normalise(x, gamma, beta, axis=-1, ddof=0, eps=1e-5, eps_inside=True):
    """LayerNorm with the knobs that the usual mistakes turn."""
    mean = x.mean(axis=axis, keepdims=True)
    var = x.var(axis=axis, ddof=ddof, keepdims=True)
    std = np.sqrt(var + eps) if eps_inside else np.sqrt(var) + eps
    return gamma * (x - mean) / std + beta


def _without_keepdims(x, gamma, beta, eps=1e-5):
    mean, var = x.mean(axis=-1), x.var(axis=-1)  # (...,): cannot meet x (..., d)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def _reference_layer_norm(x, gamma, beta):
    norm = LayerNorm(x.shape[-1], dtype=x.dtype)
    norm.load_state_dict({"gamma": gamma, "beta": beta})
    return norm(x)


def _layer_norm_cases():
    rng = np.random.default_rng(5)
    d = 6
    return [
        Case((3 * rng.standard_normal((4, d)) + 2, rng.standard_normal(d),
              rng.standard_normal(d)), "one sentence of 4 positions"),
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
        Mistake("normalised over axis 0: the positions of one sentence, or the sentences of a "
                "batch; LayerNorm normalises each position over its features, the last axis",
                lambda x, g, b: _normalise(x, g, b, axis=0)),
        Mistake("normalised over the whole array; each position gets its own mean and "
                "variance, over the last axis (axis=-1, keepdims=True)",
                lambda x, g, b: _normalise(x, g, b, axis=None)),
        Mistake("x.mean(axis=-1) has shape (...,) and cannot be subtracted from x (..., d): "
                "keep the axis with keepdims=True, giving (..., 1)", _without_keepdims),
        Mistake("γ and β are not applied: return γ · x̂ + β",
                lambda x, g, b: _normalise(x, 1.0, 0.0)),
        Mistake("ε is missing: divide by √(σ² + ε) with ε = 1e-5",
                lambda x, g, b: _normalise(x, g, b, eps=0.0)),
        Mistake("ε belongs inside the square root: √(σ² + ε), not √σ² + ε",
                lambda x, g, b: _normalise(x, g, b, eps_inside=False)),
    ))


# --------------------------------------------------------------------- RMSNorm

def _rms(x, gamma, eps=1e-5, *, centre=False, over_d=True, root=True, eps_inside=True,
         axis=-1):
    """RMSNorm with the knobs that the usual mistakes turn."""
    if centre:
        x = x - x.mean(axis=axis, keepdims=True)
    square = (x ** 2).sum(axis=axis, keepdims=True)
    if over_d:
        square = square / x.shape[axis]
    if not root:
        return gamma * x / (square + eps)
    return gamma * x / (np.sqrt(square + eps) if eps_inside else np.sqrt(square) + eps)


def _rms_norm_cases():
    rng = np.random.default_rng(15)
    d = 6
    return [
        Case((3 * rng.standard_normal((4, d)) + 2, rng.standard_normal(d)),
             "4 positions, mean far from 0"),
        Case((rng.standard_normal((2, 3, d)), 1 + 0.5 * rng.standard_normal(d)),
             "a batch (B, L, d)"),
        Case((1e-3 * rng.standard_normal((3, d)), rng.standard_normal(d)),
             "tiny rows (mean square ~1e-6)"),
    ]


RMS_NORM = Exercise(
    name="rms_norm", checker="check_rms_norm", args=("x", "gamma"),
    task="γ · x / √(mean(x²) + ε) over the last axis of x, ε = 1e-5 (no mean subtracted, "
         "no β)",
    cases=_rms_norm_cases, reference=lambda x, gamma: _rms(x, gamma),
    mistakes=(
        Mistake("the mean was subtracted first: RMSNorm divides x itself by its root mean "
                "square, without centring (that is the step it saves)",
                lambda x, g: _rms(x, g, centre=True)),
        Mistake("that divides by the standard deviation, which subtracts the mean inside; "
                "RMSNorm uses the mean of x² itself: √(mean(x²) + ε)",
                lambda x, g: g * x / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)),
        Mistake("that divides by √(Σ x²), the length of x; RMSNorm divides by the root of "
                "the *mean* square, √(Σ x² / d + ε)", lambda x, g: _rms(x, g, over_d=False)),
        Mistake("the square root is missing: divide by √(mean(x²) + ε), the root mean square",
                lambda x, g: _rms(x, g, root=False)),
        Mistake("normalised over axis 0; each position is divided by its own root mean square, "
                "over the last axis (axis=-1, keepdims=True)", lambda x, g: _rms(x, g, axis=0)),
        Mistake("γ is not applied: return γ · x / rms", lambda x, g: _rms(x, 1.0)),
        Mistake("ε is missing: √(mean(x²) + ε) with ε = 1e-5", lambda x, g: _rms(x, g, eps=0.0)),
        Mistake("ε belongs inside the square root: √(mean(x²) + ε)",
                lambda x, g: _rms(x, g, eps_inside=False)),
    ))


# ------------------------------------------------------------- encoder layers

def _post_ln(x, layer, mask):
    h = layer.norm1(x + layer.self_attn(x, mask=mask))
    return layer.norm2(h + layer.ffn(h))


def _pre_ln(x, layer, mask, use_mask=True, add_normed=False, final_norm=False,
            positional=False):
    a = layer.norm1(x)
    attended = layer.self_attn(a, mask) if positional else layer.self_attn(
        a, mask=mask if use_mask else None)  # the second positional argument is `context`
    h = (a if add_normed else x) + attended
    b = layer.norm2(h)
    out = (b if add_normed else h) + layer.ffn(b)
    return layer.norm2(out) if final_norm else out


def _encoder_cases():
    rng = np.random.default_rng(50)
    src = np.array([[5, 6, 7, 2, 0], [8, 2, 0, 0, 0]])
    layers = [perturb_norms_and_biases(
        EncoderLayer(d, h, 2 * d, norm_first=True, dtype=np.float64, rng=seed), seed + 100)
        for d, h, seed in ((8, 2, 3), (12, 3, 4))]
    return [
        Case((rng.standard_normal((2, 5, 8)), layers[0], padding_mask(src)),
             "a padded batch of 2 (d_model = 8, 2 heads)"),
        Case((rng.standard_normal((1, 4, 12)), layers[1], None),
             "one sentence, no mask (d_model = 12, 3 heads)"),
    ]


PRE_LN_ENCODER_LAYER = Exercise(
    name="pre_ln_encoder_layer", checker="check_pre_ln_encoder_layer",
    args=("x", "layer", "mask"),
    task="the pre-LN layer: x = x + self_attn(norm1(x), mask=mask); x + ffn(norm2(x))",
    cases=_encoder_cases,
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
        Mistake("the mask went in as `context`, the second positional argument of self_attn "
                "(the cross-attention of notebook 06): pass it by keyword, "
                "self_attn(..., mask=mask)",
                lambda x, layer, mask: _pre_ln(x, layer, mask, positional=True)),
    ))


def check_layer_norm(fn):
    """fn(x, gamma, beta) -> LayerNorm of x over its last axis, ε = 1e-5 (fn's default).
    An exercise of notebook 05 §2 (a bug to fix)."""
    return LAYER_NORM.check(fn)


def check_rms_norm(fn):
    """fn(x, gamma) -> RMSNorm of x over its last axis: γ · x / √(mean(x²) + ε), ε = 1e-5
    (fn's default). An exercise of notebook 05 §2."""
    return RMS_NORM.check(fn)


def check_pre_ln_encoder_layer(fn):
    """fn(x, layer, mask) -> the pre-LN encoder layer built from layer.norm1,
    layer.self_attn, layer.norm2, layer.ffn (no final LayerNorm: that is the stack's).
    An exercise of notebook 05 §5."""
    return PRE_LN_ENCODER_LAYER.check(fn)


EXERCISES = [LAYER_NORM, RMS_NORM, PRE_LN_ENCODER_LAYER]

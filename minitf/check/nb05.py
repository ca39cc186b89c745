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

def _normalise(x, gamma, beta, axis=-1, ddof=0, eps=1e-5, eps_inside=True, root=True):
    """LayerNorm with the knobs that the usual mistakes turn."""
    mean = x.mean(axis=axis, keepdims=True)
    var = x.var(axis=axis, ddof=ddof, keepdims=True)
    if not root:
        return gamma * (x - mean) / (var + eps) + beta
    std = np.sqrt(var + eps) if eps_inside else np.sqrt(var) + eps
    return gamma * (x - mean) / std + beta


def _without_keepdims(x, gamma, beta, eps=1e-5):
    mean, var = x.mean(axis=-1), x.var(axis=-1)  # (...,): cannot meet x (..., d)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def _reference_layer_norm(x, gamma, beta):
    norm = LayerNorm(x.shape[-1], dtype=x.dtype)
    norm.load_state_dict({"gamma": gamma, "beta": beta})
    return norm(x)


BATCH = {"en": "a batch (B, L, d)", "zh": "一个批次 (B, L, d)"}


def _layer_norm_cases():
    rng = np.random.default_rng(5)
    d = 6
    return [
        Case((3 * rng.standard_normal((4, d)) + 2, rng.standard_normal(d),
              rng.standard_normal(d)), {"en": "one sentence of 4 positions",
                                        "zh": "一个 4 个位置的句子"}),
        Case((rng.standard_normal((2, 3, d)), 1 + 0.5 * rng.standard_normal(d),
              rng.standard_normal(d)), BATCH),
        Case((1e-3 * rng.standard_normal((3, d)) + 5, rng.standard_normal(d),
              rng.standard_normal(d)), {"en": "nearly constant rows (variance ~1e-6)",
                                        "zh": "几乎不变的行（方差约为 1e-6）"}),
    ]


LAYER_NORM = Exercise(
    name="layer_norm", checker="check_layer_norm", args=("x", "gamma", "beta"),
    task={"en": "γ · (x − mean) / √(var + ε) + β over the last axis of x, ε = 1e-5",
          "zh": "沿 x 的最后一个轴计算 γ · (x − mean) / √(var + ε) + β，ε = 1e-5"},
    cases=_layer_norm_cases, reference=_reference_layer_norm,
    mistakes=(
        Mistake({"en": "that is the unbiased variance (÷ (d − 1)); LayerNorm divides by d, as "
                       "np.var does by default",
                 "zh": "这是无偏方差（÷ (d − 1)）；LayerNorm 除以 d，np.var 默认就是这样"},
                lambda x, g, b: _normalise(x, g, b, ddof=1)),
        Mistake({"en": "normalised over axis 0: the positions of one sentence, or the "
                       "sentences of a batch; LayerNorm normalises each position over its "
                       "features, the last axis",
                 "zh": "沿 axis 0 做了归一化，也就是跨一个句子的各个位置，或跨一个批次的各个句子；"
                       "LayerNorm 是对每个位置在它自己的特征上（最后一个轴）做归一化"},
                lambda x, g, b: _normalise(x, g, b, axis=0)),
        Mistake({"en": "normalised over the whole array; each position gets its own mean and "
                       "variance, over the last axis (axis=-1, keepdims=True)",
                 "zh": "对整个数组做了归一化；每个位置应当沿最后一个轴有自己的均值和方差"
                       "（axis=-1, keepdims=True）"},
                lambda x, g, b: _normalise(x, g, b, axis=None)),
        Mistake({"en": "x.mean(axis=-1) has shape (...,) and cannot be subtracted from "
                       "x (..., d): keep the axis with keepdims=True, giving (..., 1)",
                 "zh": "x.mean(axis=-1) 的形状是 (...,)，不能从 x (..., d) 中减去：用 "
                       "keepdims=True 保留这个轴，得到 (..., 1)"}, _without_keepdims),
        Mistake({"en": "γ and β are not applied: return γ · x̂ + β",
                 "zh": "没有用上 γ 和 β：要返回 γ · x̂ + β"},
                lambda x, g, b: _normalise(x, 1.0, 0.0)),
        Mistake({"en": "ε is missing: divide by √(σ² + ε) with ε = 1e-5",
                 "zh": "少了 ε：要除以 √(σ² + ε)，ε = 1e-5"},
                lambda x, g, b: _normalise(x, g, b, eps=0.0)),
        Mistake({"en": "ε belongs inside the square root: √(σ² + ε), not √σ² + ε",
                 "zh": "ε 应当在平方根里面：√(σ² + ε)，而不是 √σ² + ε"},
                lambda x, g, b: _normalise(x, g, b, eps_inside=False)),
        Mistake({"en": "ε is 1e-5 (the function's default eps); with nearly constant rows "
                       "its size shows",
                 "zh": "ε 是 1e-5（函数的默认参数 eps）；几乎不变的行会让它的大小显现出来"},
                lambda x, g, b: _normalise(x, g, b, eps=1e-6)),
        Mistake({"en": "γ and β are swapped: γ multiplies, β is added, γ · x̂ + β",
                 "zh": "γ 和 β 弄反了：γ 用来乘，β 用来加，γ · x̂ + β"},
                lambda x, g, b: _normalise(x, b, g)),
        Mistake({"en": "that divides by the variance; divide by the standard deviation, "
                       "√(σ² + ε)",
                 "zh": "这是除以方差；要除以标准差 √(σ² + ε)"},
                lambda x, g, b: _normalise(x, g, b, root=False)),
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
             {"en": "4 positions, mean far from 0", "zh": "4 个位置，均值远离 0"}),
        Case((rng.standard_normal((2, 3, d)), 1 + 0.5 * rng.standard_normal(d)), BATCH),
        Case((1e-3 * rng.standard_normal((3, d)), rng.standard_normal(d)),
             {"en": "tiny rows (mean square ~1e-6)", "zh": "很小的行（均方约为 1e-6）"}),
    ]


RMS_NORM = Exercise(
    name="rms_norm", checker="check_rms_norm", args=("x", "gamma"),
    task={"en": "γ · x / √(mean(x²) + ε) over the last axis of x, ε = 1e-5 (no mean "
                "subtracted, no β)",
          "zh": "沿 x 的最后一个轴计算 γ · x / √(mean(x²) + ε)，ε = 1e-5（不减均值，没有 β）"},
    cases=_rms_norm_cases, reference=lambda x, gamma: _rms(x, gamma),
    mistakes=(
        Mistake({"en": "the mean was subtracted first: RMSNorm divides x itself by its root "
                       "mean square, without centring (that is the step it saves)",
                 "zh": "先减去了均值：RMSNorm 直接用 x 除以它自己的均方根，不做中心化（省掉的"
                       "正是这一步）"},
                lambda x, g: _rms(x, g, centre=True)),
        Mistake({"en": "that divides by the standard deviation, which subtracts the mean "
                       "inside; RMSNorm uses the mean of x² itself: √(mean(x²) + ε)",
                 "zh": "这是除以标准差，而标准差内部减去了均值；RMSNorm 用的是 x² 本身的均值："
                       "√(mean(x²) + ε)"},
                lambda x, g: g * x / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)),
        Mistake({"en": "that divides by √(Σ x²), the length of x; RMSNorm divides by the root "
                       "of the *mean* square, √(Σ x² / d + ε)",
                 "zh": "这是除以 √(Σ x²)，也就是 x 的长度；RMSNorm 除以的是*均方*的平方根 "
                       "√(Σ x² / d + ε)"},
                lambda x, g: _rms(x, g, over_d=False)),
        Mistake({"en": "the square root is missing: divide by √(mean(x²) + ε), the root mean "
                       "square",
                 "zh": "少了平方根：要除以均方根 √(mean(x²) + ε)"},
                lambda x, g: _rms(x, g, root=False)),
        Mistake({"en": "normalised over axis 0; each position is divided by its own root mean "
                       "square, over the last axis (axis=-1, keepdims=True)",
                 "zh": "沿 axis 0 做了归一化；每个位置应当除以它自己沿最后一个轴的均方根"
                       "（axis=-1, keepdims=True）"},
                lambda x, g: _rms(x, g, axis=0)),
        Mistake({"en": "γ is not applied: return γ · x / rms",
                 "zh": "没有用上 γ：要返回 γ · x / rms"}, lambda x, g: _rms(x, 1.0)),
        Mistake({"en": "ε is missing: √(mean(x²) + ε) with ε = 1e-5",
                 "zh": "少了 ε：√(mean(x²) + ε)，ε = 1e-5"}, lambda x, g: _rms(x, g, eps=0.0)),
        Mistake({"en": "ε belongs inside the square root: √(mean(x²) + ε)",
                 "zh": "ε 应当在平方根里面：√(mean(x²) + ε)"},
                lambda x, g: _rms(x, g, eps_inside=False)),
        Mistake({"en": "that divides by the mean of |x|; RMSNorm divides by the ROOT of the "
                       "MEAN of the SQUARES, √(mean(x²) + ε)",
                 "zh": "这是除以 |x| 的均值；RMSNorm 除以的是*平方*的*均值*的*平方根*，"
                       "√(mean(x²) + ε)"},
                lambda x, g: g * x / (np.abs(x).mean(axis=-1, keepdims=True) + 1e-5)),
    ))


# ------------------------------------------------------------- encoder layers

def _post_ln(x, layer, mask):
    h = layer.norm1(x + layer.self_attn(x, mask=mask))
    return layer.norm2(h + layer.ffn(h))


def _pre_ln(x, layer, mask, use_mask=True, add_normed=False, final_norm=False,
            positional=False, norms=("norm1", "norm2"), ffn_normed=True):
    first, second = (getattr(layer, name) for name in norms)
    a = first(x)
    attended = layer.self_attn(a, mask) if positional else layer.self_attn(
        a, mask=mask if use_mask else None)  # the second positional argument is `context`
    h = (a if add_normed else x) + attended
    b = second(h) if ffn_normed else h
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
             {"en": "a padded batch of 2 (d_model = 8, 2 heads)",
              "zh": "含 2 个句子、带填充的批次（d_model = 8，2 个头）"}),
        Case((rng.standard_normal((1, 4, 12)), layers[1], None),
             {"en": "one sentence, no mask (d_model = 12, 3 heads)",
              "zh": "一个句子，没有掩码（d_model = 12，3 个头）"}),
    ]


PRE_LN_ENCODER_LAYER = Exercise(
    name="pre_ln_encoder_layer", checker="check_pre_ln_encoder_layer",
    args=("x", "layer", "mask"),
    task={"en": "the pre-LN layer: x = x + self_attn(norm1(x), mask=mask); "
                "x + ffn(norm2(x))",
          "zh": "前置层归一化（pre-LN）的层：x = x + self_attn(norm1(x), mask=mask)；"
                "再 x + ffn(norm2(x))"},
    cases=_encoder_cases,
    reference=lambda x, layer, mask: layer(x, mask),
    mistakes=(
        Mistake({"en": "that is the post-LN order; pre-LN normalises the sub-layer's input: "
                       "x = x + self_attn(norm1(x))",
                 "zh": "这是后置层归一化（post-LN）的顺序；pre-LN 归一化的是子层的输入："
                       "x = x + self_attn(norm1(x))"}, _post_ln),
        Mistake({"en": "the residual adds the normalised x; add the un-normalised x: "
                       "x + self_attn(norm1(x))",
                 "zh": "残差加上的是归一化后的 x；应当加上没有归一化的 x：x + self_attn(norm1(x))"},
                lambda x, layer, mask: _pre_ln(x, layer, mask, add_normed=True)),
        Mistake({"en": "the output was normalised again; in pre-LN the layer's output is not "
                       "normalised (the final LayerNorm belongs to the stack, Encoder.norm)",
                 "zh": "输出又做了一次归一化；pre-LN 的层不对输出做归一化（最后那个 LayerNorm "
                       "属于整个堆叠，即 Encoder.norm）"},
                lambda x, layer, mask: _pre_ln(x, layer, mask, final_norm=True)),
        Mistake({"en": "the self-attention ignores the padding mask: pass mask=mask",
                 "zh": "自注意力没有用上填充掩码：传入 mask=mask"},
                lambda x, layer, mask: _pre_ln(x, layer, mask, use_mask=False)),
        Mistake({"en": "the mask went in as `context`, the second positional argument of "
                       "self_attn (the cross-attention of notebook 06): pass it by keyword, "
                       "self_attn(..., mask=mask)",
                 "zh": "掩码被当成了 `context` 传进去，那是 self_attn 的第二个位置参数（笔记本 06 "
                       "的交叉注意力要用它）：请用关键字传入，self_attn(..., mask=mask)"},
                lambda x, layer, mask: _pre_ln(x, layer, mask, positional=True)),
        Mistake({"en": "norm1 and norm2 are swapped: norm1 goes before the self-attention, "
                       "norm2 before the FFN",
                 "zh": "norm1 和 norm2 弄反了：norm1 在自注意力之前，norm2 在前馈网络之前"},
                lambda x, layer, mask: _pre_ln(x, layer, mask, norms=("norm2", "norm1"))),
        Mistake({"en": "norm1 was used twice; each sub-layer has its own LayerNorm: norm2 "
                       "before the FFN",
                 "zh": "norm1 用了两次；每个子层有自己的 LayerNorm：前馈网络之前用 norm2"},
                lambda x, layer, mask: _pre_ln(x, layer, mask, norms=("norm1", "norm1"))),
        Mistake({"en": "the FFN read the un-normalised stream; pre-LN normalises its input "
                       "too: x + ffn(norm2(x))",
                 "zh": "前馈网络读的是没有归一化的残差流；pre-LN 也要归一化它的输入："
                       "x + ffn(norm2(x))"},
                lambda x, layer, mask: _pre_ln(x, layer, mask, ffn_normed=False)),
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

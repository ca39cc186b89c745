"""The checkers of notebook 05 pass right answers, name the usual mistakes, and never raise."""

import numpy as np

from minitf.check import check_encoder_layer, check_layer_norm, check_pre_ln_encoder_layer


def not_written(*args):
    raise NotImplementedError  # your code here


# ------------------------------------------------------------------- LayerNorm

def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def test_layer_norm_right_answer_passes():
    result = check_layer_norm(layer_norm)
    assert result and "✓ layer_norm: pass" in str(result) and "3 cases agree" in str(result)


def test_layer_norm_not_written():
    result = check_layer_norm(not_written)
    assert not result and "not written yet" in str(result)


def test_layer_norm_names_the_mistake():
    def normalise(x, gamma, beta, axis=-1, ddof=0, eps=1e-5, inside=True):
        mean = x.mean(axis=axis, keepdims=True)
        var = x.var(axis=axis, ddof=ddof, keepdims=True)
        return gamma * (x - mean) / (np.sqrt(var + eps) if inside else np.sqrt(var) + eps) + beta

    cases = {
        "unbiased variance": lambda x, g, b: normalise(x, g, b, ddof=1),
        "over the batch": lambda x, g, b: normalise(x, g, b, axis=0),
        "whole array": lambda x, g, b: normalise(x, g, b, axis=None),
        "γ and β are not applied": lambda x, g, b: normalise(x, 1.0, 0.0),
        "ε is missing": lambda x, g, b: normalise(x, g, b, eps=0.0),
        "inside the square root": lambda x, g, b: normalise(x, g, b, inside=False),
        "forget `return`": lambda x, g, b: None,
        "shape (4, 1)": lambda x, g, b: x.mean(axis=-1, keepdims=True),
    }
    for hint, fn in cases.items():
        result = check_layer_norm(fn)
        assert not result and hint in str(result), (hint, str(result))


def test_layer_norm_reports_a_crash():
    result = check_layer_norm(lambda x, g, b: (x - x.mean(axis=-1)) * g + b)
    assert not result and "raised ValueError" in str(result)


# ------------------------------------------------------------- post-LN layer

def post_ln(x, layer, mask):
    x = layer.norm1(x + layer.self_attn(x, mask=mask))
    return layer.norm2(x + layer.ffn(x))


def pre_ln(x, layer, mask):
    x = x + layer.self_attn(layer.norm1(x), mask=mask)
    return x + layer.ffn(layer.norm2(x))


def test_encoder_layer_right_answer_passes():
    result = check_encoder_layer(post_ln)
    assert result and "2 cases agree" in str(result)


def test_encoder_layer_not_written():
    assert "not written yet" in str(check_encoder_layer(not_written))


def test_encoder_layer_names_the_mistake():
    def no_residual(x, layer, mask):
        x = layer.norm1(layer.self_attn(x, mask=mask))
        return layer.norm2(layer.ffn(x))

    def ffn_on_input(x, layer, mask):
        h = layer.norm1(x + layer.self_attn(x, mask=mask))
        return layer.norm2(h + layer.ffn(x))

    def unmasked(x, layer, mask):
        return post_ln(x, layer, None)

    def swapped_norms(x, layer, mask):
        x = layer.norm2(x + layer.self_attn(x, mask=mask))
        return layer.norm1(x + layer.ffn(x))

    cases = {
        pre_ln: "pre-LN order",
        no_residual: "residual connection is missing",
        ffn_on_input: "the FFN must read",
        unmasked: "ignores the padding mask",
        swapped_norms: "entries differ",
    }
    for fn, hint in cases.items():
        result = check_encoder_layer(fn)
        assert not result and hint in str(result), (hint, str(result))


# -------------------------------------------------------------- pre-LN layer

def test_pre_ln_encoder_layer_right_answer_passes():
    result = check_pre_ln_encoder_layer(pre_ln)
    assert result and "✓ pre_ln_encoder_layer: pass" in str(result)


def test_pre_ln_encoder_layer_not_written():
    assert "not written yet" in str(check_pre_ln_encoder_layer(not_written))


def test_pre_ln_encoder_layer_names_the_mistake():
    def add_normed(x, layer, mask):
        a = layer.norm1(x)
        x = a + layer.self_attn(a, mask=mask)
        b = layer.norm2(x)
        return b + layer.ffn(b)

    def normalised_again(x, layer, mask):
        return layer.norm2(pre_ln(x, layer, mask))

    def unmasked(x, layer, mask):
        return pre_ln(x, layer, None)

    cases = {
        post_ln: "post-LN order",
        add_normed: "adds the normalised x",
        normalised_again: "belongs to the stack",
        unmasked: "ignores the padding mask",
        (lambda x, layer, mask: pre_ln(x, layer, mask)[0]): "shape",
    }
    for fn, hint in cases.items():
        result = check_pre_ln_encoder_layer(fn)
        assert not result and hint in str(result), (hint, str(result))

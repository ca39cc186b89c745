"""The checkers of notebook 06 pass right answers, name the usual mistakes, and never raise."""

import numpy as np

from minitf.attention import softmax
from minitf.check import check_causal_mask, check_decoder_layer, check_masked_attention


def not_written(*args):
    raise NotImplementedError  # your code here


# ---------------------------------------------------------------- causal mask

def test_causal_mask_right_answer_passes():
    result = check_causal_mask(lambda n: np.tril(np.ones((n, n), dtype=bool)))
    assert result and "✓ causal_mask: pass" in str(result)


def test_causal_mask_not_written():
    result = check_causal_mask(not_written)
    assert not result and "not written yet" in str(result)


def test_causal_mask_names_the_mistake():
    cases = {
        "transpose": lambda n: np.triu(np.ones((n, n), dtype=bool)),
        "swapped": lambda n: ~np.tril(np.ones((n, n), dtype=bool)),
        "diagonal is False": lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1),
        "dtype float64": lambda n: np.tril(np.ones((n, n))),
        "shape (5, 4)": lambda n: np.tril(np.ones((n, n - 1), dtype=bool)),
        "forget `return`": lambda n: None,
    }
    for hint, fn in cases.items():
        result = check_causal_mask(fn)
        assert not result and hint in str(result), (hint, str(result))


def test_causal_mask_reports_a_crash():
    result = check_causal_mask(lambda n: np.tril(np.ones((n, n), dtype=bool))[n])
    assert not result and "raised IndexError" in str(result)


# ------------------------------------------------------------ masked attention

def masked_attention(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    weights = softmax(np.where(mask, scores, -np.inf))
    return weights @ v, weights


def test_masked_attention_right_answer_passes():
    result = check_masked_attention(masked_attention)
    assert result and "3 cases agree" in str(result)


def test_masked_attention_not_written():
    assert "not written yet" in str(check_masked_attention(not_written))


def test_masked_attention_names_the_mistake():
    def after_softmax(q, k, v, mask):
        weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])) * mask
        return weights @ v, weights

    def zero_scores(q, k, v, mask):
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        weights = softmax(np.where(mask, scores, 0.0))
        return weights @ v, weights

    def no_mask(q, k, v, mask):
        weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
        return weights @ v, weights

    def no_scale(q, k, v, mask):
        weights = softmax(np.where(mask, q @ np.swapaxes(k, -1, -2), -np.inf))
        return weights @ v, weights

    def wrong_out(q, k, v, mask):
        out, weights = masked_attention(q, k, v, mask)
        return out + 1, weights

    cases = {
        after_softmax: "before the softmax",
        zero_scores: "exp(0) = 1",
        no_mask: "the mask was not applied",
        no_scale: "√d_k",
        wrong_out: "out: ",
        (lambda q, k, v, mask: masked_attention(q, k, v, mask)[0]): "return the pair",
    }
    for fn, hint in cases.items():
        result = check_masked_attention(fn)
        assert not result and hint in str(result), (hint, str(result))


# --------------------------------------------------------------- decoder layer

def decoder_layer(y, memory, layer, tgt_mask, memory_mask):
    y = layer.norm1(y + layer.self_attn(y, mask=tgt_mask))
    y = layer.norm2(y + layer.cross_attn(y, memory, mask=memory_mask))
    return layer.norm3(y + layer.ffn(y))


def test_decoder_layer_right_answer_passes():
    result = check_decoder_layer(decoder_layer)
    assert result and "2 cases agree" in str(result)


def test_decoder_layer_not_written():
    assert "not written yet" in str(check_decoder_layer(not_written))


def test_decoder_layer_names_the_mistake():
    def pre_ln(y, memory, layer, tgt_mask, memory_mask):
        y = y + layer.self_attn(layer.norm1(y), mask=tgt_mask)
        y = y + layer.cross_attn(layer.norm2(y), memory, mask=memory_mask)
        return y + layer.ffn(layer.norm3(y))

    def self_instead_of_cross(y, memory, layer, tgt_mask, memory_mask):
        y = layer.norm1(y + layer.self_attn(y, mask=tgt_mask))
        y = layer.norm2(y + layer.cross_attn(y))
        return layer.norm3(y + layer.ffn(y))

    def unmasked(y, memory, layer, tgt_mask, memory_mask):
        return decoder_layer(y, memory, layer, None, memory_mask)

    def no_residual(y, memory, layer, tgt_mask, memory_mask):
        y = layer.norm1(layer.self_attn(y, mask=tgt_mask))
        y = layer.norm2(layer.cross_attn(y, memory, mask=memory_mask))
        return layer.norm3(layer.ffn(y))

    def no_last_norm(y, memory, layer, tgt_mask, memory_mask):
        y = layer.norm1(y + layer.self_attn(y, mask=tgt_mask))
        y = layer.norm2(y + layer.cross_attn(y, memory, mask=memory_mask))
        return y + layer.ffn(y)

    cases = {
        pre_ln: "pre-LN order",
        self_instead_of_cross: "from `memory`",
        unmasked: "ignores tgt_mask",
        no_residual: "residual connection is missing",
        no_last_norm: "entries differ",
    }
    for fn, hint in cases.items():
        result = check_decoder_layer(fn)
        assert not result and hint in str(result), (hint, str(result))
    # Passing the padding mask to the self-attention is reported as the error it raises.
    crash = check_decoder_layer(lambda y, m, layer, t, mm: decoder_layer(y, m, layer, mm, t))
    assert not crash and "raised ValueError" in str(crash)

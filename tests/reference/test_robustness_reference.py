"""Hostile input to the reference package (minitf/*.py and minitf/fast): each test is a
reproducer from the robustness review (root causes N1–N24) and pins the clear error, or the
right result, that replaced a crash, a NaN or a numpy message naming no argument."""

import numpy as np
import pytest

from minitf import fast
from minitf.attention import (
    causal_mask,
    log_softmax,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
    softmax,
)
from minitf.decoder import Decoder, DecoderLayer
from minitf.encoder import Encoder, EncoderLayer
from minitf.generate import beam_search, greedy_decode, sample, top_p_mask
from minitf.gradcheck import gradient_check, numerical_gradient
from minitf.layers import Dropout, Embedding, FeedForward, LayerNorm, Linear
from minitf.model import Transformer, TransformerConfig
from minitf.multihead import MultiHeadAttention
from minitf.positional import (
    EmbeddingWithPositions,
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    rope,
    sinusoidal_encoding,
)
from minitf.train import cross_entropy
from minitf.validation import require_fits

RNG = np.random.default_rng(0)
SRC = np.array([[4, 5, 6], [7, 8, 0]])
TGT = np.array([[1, 4, 5], [1, 6, 0]])


def tiny_model(**changes):
    shape = dict(d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=16) | changes
    return Transformer(10, 12, **shape, rng=0)


# N1: a row whose logits are all -inf


def test_log_softmax_of_a_fully_masked_row_is_minus_inf_not_nan():
    with np.errstate(all="raise"):  # no 'invalid value' warning either
        out = log_softmax(np.array([[-np.inf, -np.inf], [0.0, 0.0]]))
    assert np.isneginf(out[0]).all()
    np.testing.assert_allclose(out[1], np.log([0.5, 0.5]))


def test_cross_entropy_gradient_of_an_ignored_fully_masked_row_is_zero():
    logits = np.array([[-np.inf, -np.inf], [0.0, 1.0]])
    loss, d = cross_entropy(logits, np.array([0, 1]))  # row 0's target is <pad>: ignored
    assert np.isfinite(d).all() and (d[0] == 0).all()
    np.testing.assert_allclose(loss, -log_softmax(logits[1])[1])
    np.testing.assert_allclose(d[1], softmax(logits[1]) - [0, 1])


def test_cross_entropy_refuses_a_scored_row_whose_target_has_probability_zero():
    with pytest.raises(ValueError, match=r"target at \(0,\) has logit -inf"):
        cross_entropy(np.array([[-np.inf, -np.inf], [0.0, 1.0]]), np.array([1, 1]))
    with pytest.raises(ValueError, match=r"target at \(1,\) has logit -inf"):
        cross_entropy(np.array([[0.0, 1.0], [0.0, -np.inf]]), np.array([1, 1]))


# N5: numerical_gradient on views, integer arrays and bad indices; gradient_check(None)


def test_numerical_gradient_of_a_transposed_view_is_right():
    x = RNG.standard_normal((4, 3)).T  # a view, as a learner may pass W.T
    g = numerical_gradient(lambda: float((x ** 2).sum()), x)
    np.testing.assert_allclose(g, 2 * x, atol=1e-6)
    some = numerical_gradient(lambda: float((x ** 2).sum()), x, indices=[1, 5])
    np.testing.assert_allclose(some.reshape(-1)[[1, 5]], 2 * x.reshape(-1)[[1, 5]], atol=1e-6)


def test_numerical_gradient_refuses_integers_read_only_arrays_and_bad_indices():
    xi = np.arange(6).reshape(2, 3)
    with pytest.raises(ValueError, match="x must be a float array, got dtype int64"):
        numerical_gradient(lambda: float((xi ** 2).sum()), xi)
    x = np.ones(12)
    with pytest.raises(ValueError, match=r"indices must be flat positions in 0\.\.11, got 100"):
        numerical_gradient(lambda: float(x.sum()), x, indices=[100])
    with pytest.raises(ValueError, match="got -1"):
        numerical_gradient(lambda: float(x.sum()), x, indices=[-1])
    with pytest.raises(ValueError, match="indices must be integers"):
        numerical_gradient(lambda: float(x.sum()), x, indices=[1.5])
    x.flags.writeable = False
    with pytest.raises(ValueError, match="x is read-only"):
        numerical_gradient(lambda: float(x.sum()), x)
    with pytest.raises(TypeError, match="x must be a numpy array"):
        numerical_gradient(lambda: 0.0, [1.0, 2.0])


# P9: float16 and an f that raises


def test_numerical_gradient_refuses_float16_rather_than_returning_zeros():
    x = np.array([1.0, 2.0, 3.0], np.float16)  # 1 ± 1e-5 rounds back to 1 in float16
    with pytest.raises(ValueError, match="x must be float32 or float64.*got dtype float16"):
        numerical_gradient(lambda: float(np.sum(x.astype(np.float64) ** 2)), x)
    x32 = x.astype(np.float32)  # float32 still works (roughly: float64 is for checks)
    g = numerical_gradient(lambda: float(np.sum(x32.astype(np.float64) ** 2)), x32, eps=1e-3)
    np.testing.assert_allclose(g, [2, 4, 6], rtol=1e-3)


@pytest.mark.parametrize("fails_on", [1, 2])  # the + nudge or the − nudge
def test_numerical_gradient_restores_x_when_f_raises(fails_on):
    x = np.array([1.0, 2.0, 3.0])
    calls = []

    def f():
        calls.append(1)
        if len(calls) == fails_on:
            raise KeyboardInterrupt  # Ctrl-C in a long check
        return float(x.sum())

    with pytest.raises(KeyboardInterrupt):
        numerical_gradient(f, x)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def test_check_module_refuses_what_is_not_a_module():
    with pytest.raises(TypeError, match="module must be a Module, got None"):
        gradient_check(None, [np.ones((2, 3))])


# N7: softmax of a scalar


@pytest.mark.parametrize("x", [3.0, np.float64(3.0), np.array(3.0), -np.inf])
def test_softmax_of_a_scalar_is_one(x):
    out = softmax(x)
    assert np.shape(out) == () and float(out) == (0.0 if np.isneginf(x) else 1.0)


# N11: length-0 sequences are named; T24: start is named


def test_empty_src_or_tgt_in_is_named():
    model = tiny_model()
    empty = np.zeros((2, 0), dtype=np.int64)
    with pytest.raises(ValueError, match=r"src has no positions \(shape \(2, 0\)\)"):
        model(empty, TGT)
    with pytest.raises(ValueError, match="tgt_in has no positions"):
        model(SRC, empty)
    with pytest.raises(ValueError, match="src has no positions"):
        model.encode(empty)
    with pytest.raises(ValueError, match="tgt_in has no positions"):
        model.decode(empty, model.encode(SRC))
    for decode in (greedy_decode, beam_search, sample):
        with pytest.raises(ValueError, match="src has no positions"):
            decode(model, empty, max_len=3)


def test_cached_decode_checks_start_against_the_cache():
    model = tiny_model()
    memory = model.encode(SRC)
    with pytest.raises(ValueError, match="start must be an int >= 0, got -1"):
        model.decode(TGT[:, :1], memory, cache=model.new_cache(), start=-1)
    with pytest.raises(ValueError, match="start=3, but the cache holds 0 positions"):
        model.decode(TGT[:, :1], memory, cache=model.new_cache(), start=3)
    cache = model.new_cache()
    model.decode(TGT[:, :2], memory, cache=cache)
    with pytest.raises(ValueError, match="start=1, but the cache holds 2 positions"):
        model.decode(TGT[:, 2:], memory, cache=cache, start=1)


# N12: backward with a gradient of the wrong shape


def _called(module, *args):
    out = module(*args)
    return module, out.shape


def _layers():
    x = RNG.standard_normal((2, 3, 8))
    return {
        "Linear": _called(Linear(8, 4, dtype=np.float64, rng=0), x),
        "Embedding": _called(Embedding(10, 8, rng=0), SRC),
        "LayerNorm": _called(LayerNorm(8, dtype=np.float64), x),
        "FeedForward": _called(FeedForward(8, 16, dtype=np.float64, rng=0), x),
        "Dropout": _called(Dropout(0.5, rng=0), x),
        "MultiHeadAttention": _called(MultiHeadAttention(8, 2, dtype=np.float64, rng=0), x),
        "EncoderLayer": _called(EncoderLayer(8, 2, 16, dtype=np.float64, rng=0), x),
        "Encoder": _called(Encoder(1, 8, 2, 16, norm_first=True, dtype=np.float64, rng=0), x),
        "DecoderLayer": _called(DecoderLayer(8, 2, 16, dtype=np.float64, rng=0), x, x),
        "Decoder": _called(Decoder(1, 8, 2, 16, dtype=np.float64, rng=0), x, x),
        "Transformer": _called(tiny_model(), SRC, TGT),
        "SinusoidalPositionalEncoding": _called(SinusoidalPositionalEncoding(16, 8), x),
        "LearnedPositionalEmbedding": _called(LearnedPositionalEmbedding(16, 8, rng=0), x),
        "EmbeddingWithPositions": _called(EmbeddingWithPositions(10, 8, 16, rng=0), SRC),
    }


@pytest.mark.parametrize("name", list(_layers()))
def test_backward_refuses_a_dout_of_the_wrong_shape_naming_both(name):
    module, shape = _layers()[name]
    wrong = shape[:-1] + (shape[-1] + 1,)
    with pytest.raises(ValueError, match=(rf"{name}\.backward: dout has shape "
                                          rf"{_pattern(wrong)} but forward returned shape "
                                          rf"{_pattern(shape)}")):
        module.backward(np.ones(wrong))
    module.backward(np.ones(shape))  # the right one still works after the refusal


def _pattern(shape):
    return str(shape).replace("(", r"\(").replace(")", r"\)")


def test_backward_after_a_direct_forward_call_is_not_refused():
    lin = Linear(4, 3, dtype=np.float64, rng=0)
    lin(np.ones((2, 4)))
    lin.backward(np.ones((2, 3)))
    lin.forward(np.ones((5, 4)))  # not through __call__: the old shape must not be kept
    assert lin.backward(np.ones((5, 3))).shape == (5, 4)


def test_attention_backward_refuses_dout_and_weights_of_the_wrong_shape():
    q, k, v = (RNG.standard_normal((2, 3, 6)) for _ in range(3))
    _, weights = scaled_dot_product_attention(q, k, v)
    with pytest.raises(ValueError, match=r"dout has shape \(2, 3, 7\) but the forward's was "
                                         r"\(2, 3, 6\)"):
        scaled_dot_product_attention_backward(np.ones((2, 3, 7)), q, k, v, weights)
    with pytest.raises(ValueError, match=r"weights has shape \(2, 3, 5\) but the forward's "
                                         r"was \(2, 3, 3\)"):
        scaled_dot_product_attention_backward(np.ones((2, 3, 6)), q, k, v, np.ones((2, 3, 5)))


# N13: zero classes


def test_log_softmax_and_cross_entropy_refuse_zero_classes():
    with pytest.raises(ValueError, match=r"x has no classes \(shape \(2, 0\)"):
        log_softmax(np.zeros((2, 0)))
    with pytest.raises(ValueError, match=r"logits have no classes \(shape \(2, 0\), V=0\)"):
        cross_entropy(np.zeros((2, 0)), np.array([0, 0]))
    assert log_softmax(np.zeros((0, 3))).shape == (0, 3)  # no rows is fine


# N14: eos_id and bos_id outside the target vocabulary


@pytest.mark.parametrize("decode", [greedy_decode, beam_search, sample])
@pytest.mark.parametrize("name", ["eos_id", "bos_id"])
def test_decoding_refuses_ids_outside_the_target_vocabulary(decode, name):
    with pytest.raises(ValueError, match=rf"{name} must be an int in 0\.\.11, got 999"):
        decode(tiny_model(), SRC, max_len=3, **{name: 999})


# N15: the cache argument


def test_a_cache_of_the_wrong_kind_is_named():
    x = np.ones((1, 2, 8))
    with pytest.raises(TypeError, match="cache must be a dict"):
        MultiHeadAttention(8, 2, rng=0)(x, cache=[])
    with pytest.raises(TypeError, match="cache must be a dict"):
        DecoderLayer(8, 2, 16, rng=0)(x, x, cache=[])
    model = tiny_model()
    memory = model.encode(SRC)
    with pytest.raises(TypeError, match="cache must be a list of 1 dicts, one per decoder "
                                        "layer: use model.new_cache"):
        model.decode(TGT[:, :1], memory, cache=[])
    with pytest.raises(TypeError, match="cache must be a list of 1 dicts"):
        model.decoder(np.ones((2, 1, 8)), memory, cache={})


# N16: NaN positions and probabilities


def test_rope_refuses_non_finite_positions():
    with pytest.raises(ValueError, match="positions contain NaN or inf"):
        rope(np.ones((3, 4)), positions=np.array([0, np.nan, 2]))


@pytest.mark.parametrize("probs", [[np.nan, 0.5, 0.5], [-1.0, 0.5, 0.7], [np.inf, 0.0, 0.0]])
def test_top_p_mask_refuses_what_is_not_a_probability(probs):
    with pytest.raises(ValueError, match="probs must be probabilities: finite and >= 0"):
        top_p_mask(np.array(probs), 0.9)


# N17: d_k = 0


@pytest.mark.parametrize("attention", [scaled_dot_product_attention, fast.blocked_attention,
                                       fast.chunked_attention])
def test_attention_refuses_zero_features(attention):
    with pytest.raises(ValueError, match="q and k have d_k=0: attention needs at least one "
                                         "feature"):
        attention(np.ones((2, 3, 0)), np.ones((2, 4, 0)), np.ones((2, 4, 5)))


# N18: LayerNorm of large finite values


@pytest.mark.parametrize("big", [1e200, 1e300])
def test_layer_norm_normalises_large_finite_float64(big):
    x = np.array([[big, -big, big, -big], [3 * big, -big, 0.0, big]])
    out = LayerNorm(4, dtype=np.float64)(x)
    expected = LayerNorm(4, eps=1e-200, dtype=np.float64)(x / big)  # eps is nothing beside σ²
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_layer_norm_is_unchanged_for_ordinary_inputs():
    # the old computation, without the power-of-two scale: bit for bit the same numbers
    for dtype in (np.float32, np.float64):
        x = (RNG.standard_normal((4, 5, 16)) * 30).astype(dtype)
        centered = x - x.mean(axis=-1, keepdims=True)
        var = np.einsum("...i,...i->...", centered, centered, dtype=np.float64) / 16
        old = centered * (1 / np.sqrt(var + 1e-5)).astype(dtype)[..., None]
        np.testing.assert_array_equal(LayerNorm(16, dtype=dtype)(x), old)


def test_layer_norm_still_refuses_nan():
    with pytest.raises(ValueError, match="x contains NaN or inf"):
        LayerNorm(2, dtype=np.float64)(np.array([[np.nan, 1.0]]))


# N23: absurd sizes are refused before anything is allocated


@pytest.mark.parametrize("build, named", [
    (lambda: causal_mask(10**12), "n=1000000000000"),
    (lambda: Embedding(10**12, 4), "vocab_size=1000000000000, d_model=4 would need 58.2 TiB"),
    (lambda: Linear(10**12, 10**12), "d_in=1000000000000, d_out=1000000000000"),
    (lambda: LayerNorm(10**12), "d_model=1000000000000 would need 14.6 TiB"),
    (lambda: FeedForward(8, 10**12), "d_model=8, d_ff=1000000000000"),
    (lambda: MultiHeadAttention(10**12, 1), "d_model=1000000000000"),
    (lambda: sinusoidal_encoding(10**12, 64), "max_len=1000000000000, d_model=64"),
    (lambda: sinusoidal_encoding(6, 10**12), "max_len=6, d_model=1000000000000"),
    (lambda: LearnedPositionalEmbedding(10**12, 8), "max_len=1000000000000, d_model=8"),
    (lambda: tiny_model(d_model=10**12, num_heads=1), "d_model=1000000000000"),
    (lambda: tiny_model(max_len=10**12), "max_len=1000000000000"),
    (lambda: tiny_model(num_layers=10**9), "num_layers=1000000000"),
    (lambda: TransformerConfig(10, 10, d_model=8, num_heads=2, num_layers=10**9),
     "num_layers=1000000000"),
    (lambda: beam_search(tiny_model(), SRC, beam_size=10**12, max_len=3),
     "beam_size=1000000000000, batch_size=2"),
])
def test_absurd_sizes_are_refused_naming_the_argument(build, named):
    with pytest.raises(ValueError, match=named) as refused:
        build()
    assert "would need" in str(refused.value) and "more than this machine's" in str(refused.value)


def test_require_fits_says_what_and_how_much():
    with pytest.raises(ValueError, match=r"^d_model=1000000000000 would need 29\.1 TiB for a "
                                         r"table, more than this machine's .* of memory$"):
        require_fits(32 * 10**12, "a table", d_model=10**12)
    assert require_fits(1000, "a small array", n=10) == 1000


# N24: load_state_dict(None), from_config('x')


def test_load_state_dict_refuses_what_is_not_a_dict():
    with pytest.raises(TypeError, match="state must be a dict of arrays by parameter name"):
        Linear(2, 2).load_state_dict(None)


def test_from_config_refuses_what_is_not_a_config():
    with pytest.raises(TypeError, match="config must be a TransformerConfig, got 'x'"):
        Transformer.from_config("x")

"""Every backward pass against central finite differences, in float64."""

import numpy as np
import pytest

from minitf.attention import causal_mask, padding_mask
from minitf.decoder import Decoder, DecoderLayer
from minitf.encoder import Encoder, EncoderLayer
from minitf.gpt import GPT
from minitf.gradcheck import gradient_check, numerical_gradient, relative_error
from minitf.layers import Embedding, FeedForward, LayerNorm, Linear
from minitf.model import Transformer
from minitf.multihead import MultiHeadAttention
from minitf.positional import LearnedPositionalEmbedding

F64 = dict(dtype=np.float64)
TOL = 1e-6  # typical errors here are 1e-9 .. 1e-11


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def assert_all_close(errors):
    bad = {name: err for name, err in errors.items() if not err < TOL}
    assert not bad, f"gradient mismatch: {bad}"


def test_linear():
    assert_all_close(gradient_check(Linear(5, 3, rng=0, **F64), [randn(2, 4, 5)]))


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_feedforward(activation):
    ffn = FeedForward(6, 10, activation, rng=1, **F64)
    assert_all_close(gradient_check(ffn, [randn(2, 3, 6)]))


def test_layernorm():
    norm = LayerNorm(6, **F64)
    rng = np.random.default_rng(2)
    norm.gamma[:] = rng.standard_normal(6)
    norm.beta[:] = rng.standard_normal(6)
    assert_all_close(gradient_check(norm, [randn(2, 3, 6) * 3 + 1]))


def test_embedding():
    emb = Embedding(7, 4, rng=3, **F64)
    tokens = np.array([[1, 2, 2, 6], [0, 6, 3, 3]])
    errors = gradient_check(emb, [], forward=lambda: emb.forward(tokens))
    assert set(errors) == {"weight"}
    assert_all_close(errors)


def test_learned_positional_embedding():
    pos = LearnedPositionalEmbedding(10, 4, rng=4, **F64)
    assert_all_close(gradient_check(pos, [randn(2, 3, 4)], forward=lambda x: pos(x, start=2)))


def test_self_attention_with_mask():
    mha = MultiHeadAttention(8, 2, rng=5, **F64)
    mask = causal_mask(4) & padding_mask(np.array([[4, 5, 6, 0], [4, 5, 6, 7]]))
    errors = gradient_check(mha, [randn(2, 4, 8)], forward=lambda x: mha(x, mask=mask))
    assert set(errors) == {"input0"} | {f"{w}_{n}" for w in "Wb" for n in "qkvo"}
    assert_all_close(errors)


def test_cross_attention_with_memory_mask():
    mha = MultiHeadAttention(8, 4, rng=6, **F64)
    mask = padding_mask(np.array([[4, 5, 0, 0, 0], [4, 5, 6, 7, 8]]))
    errors = gradient_check(mha, [randn(2, 3, 8), randn(2, 5, 8, seed=1)],
                          forward=lambda y, m: mha(y, m, mask=mask))
    assert {"input0", "input1"} <= set(errors)
    assert_all_close(errors)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_and_stack(norm_first):
    mask = padding_mask(np.array([[4, 5, 6, 0], [4, 5, 6, 7]]))
    layer = EncoderLayer(8, 2, 12, norm_first, rng=7, **F64)
    assert_all_close(gradient_check(layer, [randn(2, 4, 8)], forward=lambda x: layer(x, mask)))
    stack = Encoder(2, 8, 2, 12, norm_first, rng=8, **F64)
    assert_all_close(gradient_check(stack, [randn(2, 4, 8)], forward=lambda x: stack(x, mask)))


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_and_stack(norm_first):
    tgt_mask = causal_mask(3)
    mem_mask = padding_mask(np.array([[4, 5, 6, 0], [4, 5, 6, 7]]))
    y, memory = randn(2, 3, 8), randn(2, 4, 8, seed=1)
    layer = DecoderLayer(8, 2, 12, norm_first, rng=9, **F64)
    errors = gradient_check(layer, [y, memory],
                          forward=lambda y, m: layer(y, m, tgt_mask, mem_mask))
    assert {"input0", "input1"} <= set(errors)
    assert_all_close(errors)
    stack = Decoder(2, 8, 2, 12, norm_first, rng=10, **F64)
    assert_all_close(gradient_check(stack, [y, memory],
                                  forward=lambda y, m: stack(y, m, tgt_mask, mem_mask)))


@pytest.mark.parametrize("norm_first", [False, True])
def test_whole_transformer(norm_first):
    model = Transformer(9, 8, d_model=8, num_heads=2, num_layers=2, d_ff=12, max_len=10,
                        norm_first=norm_first, rng=11, **F64)
    src = np.array([[4, 5, 6, 2, 0], [7, 8, 4, 5, 2]])
    tgt_in = np.array([[1, 4, 5, 0], [1, 6, 7, 3]])
    errors = gradient_check(model, [], forward=lambda: model(src, tgt_in), max_entries=8)
    assert len(errors) == len(model.state_dict())
    assert_all_close(errors)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_only_block_and_whole_gpt(norm_first):
    # a GPT block is an encoder layer under the causal mask (and padding after a row's end)
    tokens = np.array([[1, 4, 5, 6, 7], [1, 8, 4, 0, 0]])
    mask = causal_mask(5) & padding_mask(tokens)
    block = EncoderLayer(8, 2, 12, norm_first, rng=13, **F64)
    assert_all_close(gradient_check(block, [randn(2, 5, 8)], forward=lambda x: block(x, mask)))
    model = GPT(9, d_model=8, num_heads=2, num_layers=2, d_ff=12, max_len=10,
                norm_first=norm_first, rng=14, **F64)
    errors = gradient_check(model, [], forward=lambda: model(tokens), max_entries=8)
    assert len(errors) == len(model.state_dict())
    assert_all_close(errors)


def test_check_catches_a_wrong_backward():
    # the checker itself must be able to fail
    layer = Linear(3, 2, rng=0, **F64)
    layer.backward = lambda dout: dout @ (2 * layer.W.T)
    errors = gradient_check(layer, [randn(4, 3)])
    assert errors["input0"] > 1e-2


def test_key_bias_gradient_is_exactly_zero():
    # softmax(s + c) = softmax(s): a bias shared by every key cannot change attention
    mha = MultiHeadAttention(8, 2, rng=12, **F64)
    mha(randn(2, 4, 8))
    mha.backward(randn(2, 4, 8, seed=1))
    np.testing.assert_allclose(mha.grads["b_k"], 0, atol=1e-12)
    assert np.abs(mha.grads["b_q"]).max() > 1e-3


def test_dropout_zeroes_p_of_the_entries_and_keeps_the_mean():
    from minitf.layers import Dropout

    x = np.ones((200, 500))
    drop = Dropout(0.3, rng=0)
    y = drop(x)
    assert abs((y == 0).mean() - 0.3) < 0.01
    assert abs(y.mean() - 1.0) < 0.02
    np.testing.assert_allclose(y[y != 0], 1 / 0.7)
    drop.backward(np.ones_like(x))  # that call's backward, before the next call
    drop.eval()
    np.testing.assert_array_equal(drop(x), x)
    np.testing.assert_array_equal(drop.backward(np.full_like(x, 2.0)), 2.0)


def test_dropout_backward_matches_finite_differences():
    from minitf.layers import Dropout

    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6))
    drop = Dropout(0.5, rng=1)
    out = drop(x)
    keep = out != 0
    r = rng.standard_normal(x.shape)
    dx = drop.backward(r)

    def loss():  # the same mask: dropout is linear in x once the mask is drawn
        return float(np.sum(x * keep / 0.5 * r))

    assert relative_error(dx, numerical_gradient(loss, x)) < 1e-8
    assert np.all(dx[~keep] == 0)
    with pytest.raises(ValueError, match="p must be"):
        Dropout(1.0)

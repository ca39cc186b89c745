"""The Module protocol keeps PyTorch's habits where minitf has the same concept."""

import numpy as np
import pytest

from minitf import (
    Decoder,
    DecoderLayer,
    Embedding,
    Encoder,
    EncoderLayer,
    FeedForward,
    LayerNorm,
    Linear,
    MultiHeadAttention,
    Transformer,
)


def test_named_parameters_and_grads_are_pairs_in_the_same_order():
    layer = EncoderLayer(8, 2, 16, rng=0)
    params, grads = list(layer.named_parameters()), list(layer.named_grads())
    assert all(len(pair) == 2 for pair in params + grads)
    assert [n for n, _ in params] == [n for n, _ in grads]
    assert params[0][0] == "self_attn.W_q"
    for (_, p), (_, g) in zip(params, grads):
        assert p.shape == g.shape and p is not g
    assert layer.num_parameters() == sum(p.size for _, p in params)


def test_children_and_named_children():
    layer = DecoderLayer(8, 2, 16, rng=0)
    names = [name for name, _ in layer.named_children()]
    assert names == ["self_attn", "norm1", "cross_attn", "norm2", "ffn", "norm3"]
    assert list(layer.children()) == [child for _, child in layer.named_children()]
    assert isinstance(next(iter(layer.children())), MultiHeadAttention)


def test_zero_grad_clears_every_gradient():
    model = Transformer(7, 9, d_model=8, num_heads=2, num_layers=1, d_ff=16, rng=0)
    for _, g in model.named_grads():
        g += 1
    model.zero_grad()
    assert all(not g.any() for _, g in model.named_grads())


MODULES = {
    "Linear": (lambda: Linear(4, 3, rng=0), (np.ones((2, 4)),)),
    "Embedding": (lambda: Embedding(5, 4, rng=0), (np.array([[1, 2]]),)),
    "LayerNorm": (lambda: LayerNorm(4), (np.ones((2, 4)),)),
    "FeedForward": (lambda: FeedForward(4, 8, rng=0), (np.ones((2, 4)),)),
    "MultiHeadAttention": (lambda: MultiHeadAttention(4, 2, rng=0), (np.ones((1, 3, 4)),)),
    "EncoderLayer": (lambda: EncoderLayer(4, 2, 8, rng=0), (np.ones((1, 3, 4)),)),
    "Encoder": (lambda: Encoder(2, 4, 2, 8, rng=0), (np.ones((1, 3, 4)),)),
    "DecoderLayer": (lambda: DecoderLayer(4, 2, 8, rng=0),
                     (np.ones((1, 3, 4)), np.ones((1, 2, 4)))),
    "Decoder": (lambda: Decoder(1, 4, 2, 8, rng=0), (np.ones((1, 3, 4)), np.ones((1, 2, 4)))),
    "Transformer": (lambda: Transformer(5, 6, d_model=4, num_heads=2, num_layers=1, d_ff=8,
                                        rng=0), (np.array([[1, 2]]), np.array([[1, 3, 4]]))),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_backward_before_forward_names_the_module(name):
    make, inputs = MODULES[name]
    module = make()
    with pytest.raises(RuntimeError, match=rf"^{name}\.backward\(\) was called before forward"):
        module.backward(np.ones((1, 3, 4)))
    out = module(*(np.asarray(x, np.float32) if x.dtype.kind == "f" else x for x in inputs))
    module.backward(np.ones_like(out))  # after a forward it works


def test_backward_gives_one_gradient_per_array_input():
    rng = np.random.default_rng(0)
    x, ctx = rng.standard_normal((1, 3, 4)), rng.standard_normal((1, 2, 4))
    mha = MultiHeadAttention(4, 2, dtype=np.float64, rng=0)
    out = mha(x)
    assert isinstance(mha.backward(np.ones_like(out)), np.ndarray)  # self-attention: dx
    out = mha(x, ctx)
    dx, d_ctx = mha.backward(np.ones_like(out))  # cross-attention: (dx, d_context)
    assert dx.shape == x.shape and d_ctx.shape == ctx.shape
    layer = DecoderLayer(4, 2, 8, dtype=np.float64, rng=0)
    out = layer(x, ctx)
    dy, d_memory = layer.backward(np.ones_like(out))
    assert dy.shape == x.shape and d_memory.shape == ctx.shape


def test_backward_after_a_cached_forward_is_refused():
    mha = MultiHeadAttention(4, 2, rng=0)
    mha(np.ones((1, 1, 4), np.float32), cache={})
    with pytest.raises(RuntimeError, match="without a KV cache"):
        mha.backward(np.ones((1, 1, 4), np.float32))


def test_train_and_eval_reach_every_module():
    model = Transformer(7, 9, d_model=8, num_heads=2, num_layers=1, d_ff=16, rng=0)
    assert model.eval() is model
    assert not model.training and not model.encoder.layers[0].ffn.training
    model.train()
    assert model.decoder.layers[0].cross_attn.training
    with pytest.raises(TypeError, match="mode must be True or False"):
        model.train("no")


# One forward, one backward: a layer used twice before one backward refuses, never returning
# the gradient of the last call alone.

def test_a_layer_used_twice_before_backward_refuses():
    from minitf.layers import Linear

    lin = Linear(3, 2, rng=0)
    x1, x2 = np.ones((1, 3)), np.full((1, 3), 2.0)
    y = lin(x1) + lin(x2)
    with pytest.raises(RuntimeError, match=r"Linear was called 2 times before this backward"):
        lin.backward(np.ones_like(y))
    assert not lin.grads["W"].any()  # nothing was added


def test_one_layer_per_call_or_a_backward_per_forward_gives_both_gradients():
    from minitf.layers import Linear

    x1, x2, g = np.ones((1, 3)), np.full((1, 3), 2.0), np.ones((1, 2))
    lin = Linear(3, 2, rng=0)
    for x in (x1, x2):  # forward, backward, forward, backward: gradients accumulate
        lin(x)
        lin.backward(g)
    np.testing.assert_allclose(lin.grads["W"], (x1 + x2).T @ g)  # 3 in every entry


def test_calling_again_on_the_same_input_or_under_no_grad_is_not_a_second_use():
    from minitf.layers import Linear
    from minitf.module import no_grad

    lin = Linear(3, 2, rng=0)
    x, other, g = np.ones((1, 3)), np.full((1, 3), 5.0), np.ones((1, 2))
    lin(x)
    lin(x.copy())  # a notebook cell run twice
    with no_grad(lin):
        lin(other)  # looking at another output keeps nothing
    assert lin._keeps  # restored after the block
    lin.backward(g)
    np.testing.assert_allclose(lin.grads["W"], x.T @ g)


def test_a_model_used_twice_refuses_in_every_layer_it_reaches():
    from minitf import tasks
    from minitf.translator import new_model

    model = new_model(0, d_model=8, num_heads=2, num_layers=1, d_ff=16)
    a, b = tasks.make_batch([12]), tasks.make_batch([305])
    model(*a[:2])
    model(*b[:2])
    with pytest.raises(RuntimeError, match="called 2 times"):
        model.backward(np.ones((1, b[1].shape[1], len(tasks.TARGET_VOCAB))))

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

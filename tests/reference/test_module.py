"""The Module protocol keeps PyTorch's habits where minitf has the same concept."""

import numpy as np
import pytest

from minitf import (
    Decoder,
    DecoderLayer,
    Dropout,
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


# One forward, one backward: a module used twice before one backward refuses, never returning
# the gradient of the last call alone; equal inputs are no exception (`lin(x) + lin(x)`).

def every_module():
    """name -> (a new module, a forward of it returning its output) for every Module of the
    package: the reference's layers and the rooms'."""
    from minitf.gpt import GPT
    from minitf.positional import (
        EmbeddingWithPositions,
        LearnedPositionalEmbedding,
        SinusoidalPositionalEncoding,
    )
    from minitf.tasks import referent

    x = np.ones((1, 3, 4))
    tokens, it, _ = referent.make_batch(referent.sentences(0, 2))
    cases = {name: (make, lambda m, inputs=inputs: m(*inputs))
             for name, (make, inputs) in MODULES.items()}
    cases.update({
        "Dropout": (lambda: Dropout(0.5, rng=0), lambda m: m(x)),
        "SinusoidalPositionalEncoding": (lambda: SinusoidalPositionalEncoding(8, 4),
                                         lambda m: m(x)),
        "LearnedPositionalEmbedding": (lambda: LearnedPositionalEmbedding(8, 4, rng=0),
                                       lambda m: m(x)),
        "EmbeddingWithPositions": (lambda: EmbeddingWithPositions(5, 4, 8, rng=0),
                                   lambda m: m(np.array([[1, 2]]))),
        "PointerHead": (lambda: referent.PointerHead(4, rng=0), lambda m: m(x, np.array([1]))),
        "ReferentModel": (lambda: referent.ReferentModel(d_model=8, num_heads=2, num_layers=1,
                                                         d_ff=16, rng=0),
                          lambda m: m(tokens, it)),
        "GPT": (lambda: GPT(6, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=8, rng=0),
                lambda m: m(np.array([[1, 4, 5]]))),
    })
    return cases


EVERY_MODULE = every_module()


def test_every_module_of_the_package_is_in_the_twice_call_tests():
    import importlib
    import inspect
    import pkgutil

    import minitf
    from minitf.module import Module, ModuleList

    found = set()
    for info in pkgutil.walk_packages(minitf.__path__, "minitf."):
        if info.name.startswith(("minitf.pytorch", "minitf.__main__")):
            continue
        for name, obj in vars(importlib.import_module(info.name)).items():
            if inspect.isclass(obj) and issubclass(obj, Module) and obj not in (Module,
                                                                                 ModuleList):
                found.add(name)
    assert found == set(EVERY_MODULE), found ^ set(EVERY_MODULE)


@pytest.mark.parametrize("name", sorted(EVERY_MODULE))
def test_every_module_refuses_a_second_call_on_equal_inputs(name):
    make, call = EVERY_MODULE[name]
    module = make()
    call(module)
    out = call(module)  # the same inputs: `lin(x) + lin(x)`, or a cell run twice
    with pytest.raises(RuntimeError, match=rf"^{name} was called 2 times before this backward"):
        module.backward(np.ones_like(out))
    assert all(not g.any() for _, g in module.named_grads())  # nothing was added
    out = call(module)  # running the forward again, once, starts afresh
    module.backward(np.ones_like(out))


@pytest.mark.parametrize("name", sorted(EVERY_MODULE))
def test_every_module_refuses_a_second_backward_after_one_forward(name):
    make, call = EVERY_MODULE[name]
    module = make()
    out = call(module)
    module.backward(np.ones_like(out))
    grads = {n: g.copy() for n, g in module.named_grads()}
    with pytest.raises(RuntimeError, match=rf"^{name}\.backward\(\) was called a second time "
                                           "after one forward"):
        module.backward(np.ones_like(out))
    assert all(np.array_equal(g, grads[n]) for n, g in module.named_grads())


def test_a_layer_used_twice_before_backward_refuses():
    lin = Linear(3, 2, rng=0)
    x1, x2 = np.ones((1, 3)), np.full((1, 3), 2.0)
    y = lin(x1) + lin(x2)
    with pytest.raises(RuntimeError, match=r"Linear was called 2 times before this backward"):
        lin.backward(np.ones_like(y))
    assert not lin.grads["W"].any()  # nothing was added


def test_equal_inputs_are_no_exception_never_half_the_gradient():
    lin = Linear(3, 2, rng=0)
    x = np.ones((1, 3))
    y = lin(x) + lin(x)
    with pytest.raises(RuntimeError, match="called 2 times"):
        lin.backward(np.ones_like(y))
    assert not lin.grads["W"].any()  # not dW[:, 0] = 1 where the true gradient is 2


def test_learned_positions_used_twice_refuse_rather_than_half_the_gradient():
    from minitf.positional import LearnedPositionalEmbedding

    lpe = LearnedPositionalEmbedding(8, 4, dtype=np.float64, rng=0)
    a, b = np.zeros((1, 3, 4)), np.ones((1, 3, 4))
    y = lpe(a) + lpe(b)  # its saved values are the same for any two inputs of one shape
    with pytest.raises(RuntimeError, match="LearnedPositionalEmbedding was called 2 times"):
        lpe.backward(np.ones_like(y))


def test_a_cell_run_twice_is_refused_with_the_way_out_then_works():
    """Forward, the same forward again (a notebook cell re-run), then backward."""
    lin = Linear(3, 2, rng=0)
    x, g = np.ones((1, 3)), np.ones((1, 2))
    lin(x)
    lin(x)
    with pytest.raises(RuntimeError) as error:
        lin.backward(g)
    message = str(error.value)
    assert "run it once more, then backward" in message and "with no_grad():" in message
    lin(x)  # the forward cell, run again once
    lin.backward(g)
    np.testing.assert_allclose(lin.grads["W"], x.T @ g)


def test_one_layer_per_call_or_a_backward_per_forward_gives_both_gradients():
    x1, x2, g = np.ones((1, 3)), np.full((1, 3), 2.0), np.ones((1, 2))
    lin = Linear(3, 2, rng=0)
    for x in (x1, x2):  # forward, backward, forward, backward: gradients accumulate
        lin(x)
        lin.backward(g)
    np.testing.assert_allclose(lin.grads["W"], (x1 + x2).T @ g)  # 3 in every entry


def test_a_call_under_no_grad_keeps_and_counts_nothing():
    from minitf.module import is_grad_enabled, no_grad

    lin = Linear(3, 2, rng=0)
    x, other, g = np.ones((1, 3)), np.full((1, 3), 5.0), np.ones((1, 2))
    lin(x)
    with no_grad():
        lin(other)  # looking at another output keeps nothing
        with no_grad():
            assert not is_grad_enabled()
        assert not is_grad_enabled()  # still inside the outer block
    assert is_grad_enabled()  # restored after the block
    lin.backward(g)
    np.testing.assert_allclose(lin.grads["W"], x.T @ g)
    with pytest.raises(KeyError), no_grad():
        raise KeyError("inside the block")
    assert is_grad_enabled()  # restored after an exception too
    fresh = Linear(3, 2, rng=0)
    with no_grad():
        fresh(x)
    with pytest.raises(RuntimeError, match=r"called before forward\(\) \(or after a forward "
                                           "under no_grad"):
        fresh.backward(g)


def test_no_grad_is_torchs_form_and_a_decorator():
    from minitf.module import is_grad_enabled, no_grad

    lin = Linear(3, 2, rng=0)
    with pytest.raises(TypeError, match=r"no_grad\(\) takes no argument, as torch\.no_grad"
                                        r"\(\) takes none: write `with no_grad\(\):`"):
        no_grad(lin)

    @no_grad()
    def look(x):
        assert not is_grad_enabled()
        return lin(x)

    look(np.ones((1, 3)))
    look(np.ones((1, 3)))
    assert is_grad_enabled()
    with pytest.raises(RuntimeError, match="called before forward"):
        lin.backward(np.ones((1, 2)))


def test_no_grad_in_one_thread_leaves_the_others_alone():
    """P6: four threads generating (under no_grad) at once, then a training step."""
    import threading

    from minitf import tasks
    from minitf.generate import greedy_decode
    from minitf.module import is_grad_enabled, no_grad
    from minitf.translator import new_model

    model = new_model(3, d_model=8, num_heads=2, num_layers=1, d_ff=16)
    src, tgt_in, _ = tasks.make_batch([5, 12, 1005])
    errors = []

    def work():
        try:
            for _ in range(20):
                greedy_decode(model, src, max_len=4)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    out = model(src, tgt_in)  # keeps, in this thread
    model.backward(np.ones_like(out))

    inside, outside = threading.Event(), threading.Event()
    seen = []

    def other():
        inside.wait()
        seen.append(is_grad_enabled())  # while the main thread is inside no_grad
        outside.set()

    t = threading.Thread(target=other)
    t.start()
    with no_grad():
        inside.set()
        outside.wait(5)
    t.join()
    assert seen == [True]


def test_a_look_in_eval_mode_between_training_steps_is_not_a_second_use():
    """P7: model.eval(); model(val); model.train(); then a training forward and backward."""
    model = Transformer(7, 9, d_model=8, num_heads=2, num_layers=1, d_ff=16, rng=0)
    src, tgt = np.array([[3, 4, 2]]), np.array([[1, 5, 6]])
    val_src, val_tgt = np.array([[5, 6, 2], [3, 2, 0]]), np.array([[1, 4, 2], [1, 3, 0]])
    model.eval()
    model(val_src, val_tgt)
    model(val_src, val_tgt)  # looks, as many as wanted
    model.train()
    out = model(src, tgt)
    model.backward(np.ones_like(out))
    expected = Transformer(7, 9, d_model=8, num_heads=2, num_layers=1, d_ff=16, rng=0)
    out = expected(src, tgt)
    expected.backward(np.ones_like(out))
    for (_, g), (_, e) in zip(model.named_grads(), expected.named_grads()):
        np.testing.assert_array_equal(g, e)  # the training forward's gradient, exactly


def test_backward_after_a_forward_in_eval_mode_works_as_in_torch():
    lin = Linear(3, 2, rng=0).eval()
    x = np.ones((1, 3))
    lin.backward(np.ones_like(lin(x)))
    np.testing.assert_allclose(lin.grads["W"], x.T @ np.ones((1, 2)))
    lin(x)
    lin(x)  # two uses in eval mode are still two uses
    with pytest.raises(RuntimeError, match="called 2 times"):
        lin.backward(np.ones((1, 2)))


def test_a_look_in_eval_mode_after_a_training_forward_is_a_second_use():
    lin = Linear(3, 2, rng=0)
    lin(np.ones((1, 3)))  # training
    lin.eval()(np.full((1, 3), 2.0))  # would replace what the training forward kept
    lin.train()
    with pytest.raises(RuntimeError, match="called 2 times"):
        lin.backward(np.ones((1, 2)))


def test_a_forward_that_raised_keeps_nothing():
    """P7: model(src, bad_tgt) raises after the encoder ran; the corrected call trains."""
    model = Transformer(7, 9, d_model=8, num_heads=2, num_layers=1, d_ff=16, rng=0)
    src, tgt = np.array([[3, 4, 2]]), np.array([[1, 5, 6]])
    with pytest.raises(ValueError, match="id 999"):
        model(src, np.array([[1, 999, 6]]))
    assert all(m._forwards == 0 for m in model.modules())  # the encoder's calls are undone
    out = model(src, tgt)
    model.backward(np.ones_like(out))
    lin = Linear(3, 2, rng=0)
    x = np.ones((1, 3))
    lin(x)
    with pytest.raises(ValueError, match="d_in"):
        lin(np.ones((1, 4)))
    lin.backward(np.ones((1, 2)))  # the good call before the failed one is still there
    np.testing.assert_allclose(lin.grads["W"], x.T @ np.ones((1, 2)))


def test_modules_includes_the_module_itself_as_torchs_does():
    layer = EncoderLayer(8, 2, 16, rng=0)
    modules = list(layer.modules())
    assert modules[0] is layer
    assert modules[1:] == [layer.self_attn, layer.norm1, layer.ffn, layer.norm2]
    shared = Linear(2, 2, rng=0)
    from minitf.module import ModuleList

    twice = ModuleList([shared, shared])
    assert list(twice.modules()) == [twice, shared]  # each once, as torch's


def test_a_model_used_twice_refuses_in_every_layer_it_reaches():
    from minitf import tasks
    from minitf.translator import new_model

    model = new_model(0, d_model=8, num_heads=2, num_layers=1, d_ff=16)
    a, b = tasks.make_batch([12]), tasks.make_batch([305])
    model(*a[:2])
    model(*b[:2])
    with pytest.raises(RuntimeError, match="called 2 times"):
        model.backward(np.ones((1, b[1].shape[1], len(tasks.TARGET_VOCAB))))

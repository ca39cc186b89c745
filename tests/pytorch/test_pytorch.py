"""minitf.pytorch: torch's Transformer layers give minitf's logits, the weights go there and
back bit for bit, autograd's gradients equal minitf's hand-written backward, and the shipped
translator translates the same in torch.

Needs torch: tests/conftest.py leaves this file out when torch is not installed.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import minitf.pytorch as bridge
from minitf import tasks
from minitf.generate import greedy_decode, translate_ids
from minitf.model import Transformer
from minitf.pytorch import (
    from_torch,
    mapping_table,
    minitf_grads,
    parameter_map,
    to_torch,
    torch_grads,
)
from minitf.train import cross_entropy
from minitf.translator import load_translator

SRC_VOCAB, TGT_VOCAB = 11, 13


def small_model(norm_first=False, dtype=np.float64, seed=1, **config):
    config = {**dict(d_model=16, num_heads=4, num_layers=2, d_ff=32, max_len=10), **config}
    return Transformer(SRC_VOCAB, TGT_VOCAB, norm_first=norm_first, dtype=dtype, rng=seed,
                       **config)


def padded_batch(seed=0):
    """src (3, 7), tgt_in (3, 6), tgt_out (3, 6) ids, with padding in some rows."""
    rng = np.random.default_rng(seed)
    src = rng.integers(3, SRC_VOCAB, (3, 7))
    tgt = rng.integers(3, TGT_VOCAB, (3, 7))
    tgt[:, 0] = tasks.BOS_ID
    src[0, 4:] = 0
    src[1, 6:] = 0
    tgt[0, 4:] = 0
    tgt[2, 6:] = 0
    return src, tgt[:, :-1], tgt[:, 1:]


def torch_logits(module, src, tgt_in, mode):
    """Logits by one of torch's three routes: training mode with autograd, training mode
    without, and eval mode without (the inference fast path)."""
    module.train(mode != "eval")
    with torch.set_grad_enabled(mode == "grad"):
        return module(torch.from_numpy(src), torch.from_numpy(tgt_in)).detach().numpy()


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-9), (np.float32, 1e-4)],
                         ids=["float64", "float32"])
@pytest.mark.parametrize("mode", ["grad", "no_grad", "eval"])
def test_same_logits_as_minitf_padding_included(norm_first, dtype, tol, mode):
    model = small_model(norm_first, dtype)
    module = to_torch(model)
    src, tgt_in, _ = padded_batch()
    want = model.forward(src, tgt_in)
    got = torch_logits(module, src, tgt_in, mode)
    assert got.dtype == want.dtype == dtype
    assert got.shape == want.shape == (3, 6, TGT_VOCAB)
    assert np.abs(got - want).max() <= tol * max(1.0, np.abs(want).max())


def test_rows_that_may_look_at_nothing_match_too():
    """An all-padding source and a target starting with padding: minitf's softmax gives
    zero weights; torch's inference fast path would give NaN, so it is turned off."""
    model = small_model(dtype=np.float64, num_layers=1)
    module = to_torch(model)
    src = np.array([[5, 6, 0], [0, 0, 0], [7, 0, 0]])
    tgt_in = np.array([[1, 4, 0], [1, 5, 0], [0, 5, 0]])
    want = model.forward(src, tgt_in)
    for mode in ("grad", "no_grad", "eval"):
        got = torch_logits(module, src, tgt_in, mode)
        assert np.isfinite(got).all(), mode
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=mode)
    assert torch.backends.mha.get_fastpath_enabled(), "the fast path switch was not restored"


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_trip_is_exact(norm_first, dtype):
    model = small_model(norm_first, dtype, seed=3)
    module = to_torch(model)
    assert all(p.dtype == bridge.torch_dtype(dtype) for p in module.parameters())
    back = from_torch(module)
    want, got = model.state_dict(), back.state_dict()
    assert list(got) == list(want)
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        assert got[name].tobytes() == want[name].tobytes(), name
    assert back.config == model.config


def test_the_copies_are_independent():
    model = small_model()
    module = to_torch(model)
    before = model.state_dict()
    with torch.no_grad():
        module.decoder.layers[0].multihead_attn.in_proj_weight.add_(1.0)
    assert all(np.array_equal(v, before[k]) for k, v in model.state_dict().items())
    back = from_torch(module)
    with torch.no_grad():
        module.generator.weight.zero_()
    assert np.abs(back.generator.W).max() > 0
    np.testing.assert_array_equal(back.decoder.layers[0].cross_attn.W_q,
                                  before["decoder.layers.0.cross_attn.W_q"] + 1.0)


def test_torch_transposes_and_stacks_as_the_table_says():
    model = small_model()
    module = to_torch(model)
    attn = module.encoder.layers[1].self_attn
    mine = model.encoder.layers[1].self_attn
    d = model.d_model
    np.testing.assert_array_equal(attn.in_proj_weight[d:2 * d].detach().numpy(), mine.W_k.T)
    np.testing.assert_array_equal(attn.in_proj_bias[2 * d:].detach().numpy(), mine.b_v)
    np.testing.assert_array_equal(module.decoder.layers[0].linear2.weight.detach().numpy(),
                                  model.decoder.layers[0].ffn.W_2.T)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_the_map_covers_every_torch_parameter_once(norm_first):
    model = small_model(norm_first)
    module = to_torch(model)
    rows = list(parameter_map(model))
    assert [name for name, _, _ in rows] == list(model.state_dict())
    torch_params = dict(module.named_parameters())
    assert {tname for _, tname, _ in rows} == set(torch_params)
    sizes = {}
    for name, tname, _ in rows:
        sizes[tname] = sizes.get(tname, 0) + model.state_dict()[name].size
    assert sizes == {k: p.numel() for k, p in torch_params.items()}


def test_docstring_table_is_the_generated_one():
    table = mapping_table(small_model(norm_first=True))
    assert table in bridge.__doc__
    assert "| encoder.layers.{i}.self_attn.W_q | encoder.layers.{i}.self_attn.in_proj_weight | " \
           "rows 0:d, transposed |" in table


def test_bad_input_is_refused_clearly():
    model = small_model()
    module = to_torch(model)
    src, tgt_in, _ = padded_batch()
    with pytest.raises(ValueError, match="integer array of token ids"):
        module(torch.from_numpy(src).double(), torch.from_numpy(tgt_in))
    with pytest.raises(ValueError, match=r"src contain id 999, outside the vocabulary"):
        module(torch.full((1, 3), 999), torch.from_numpy(tgt_in[:1]))  # the numpy side's check
    with pytest.raises(ValueError, match="longer than max_len=10"):
        module(torch.ones(1, 11, dtype=torch.long), torch.ones(1, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="batch sizes 3, 2 and 3"):
        module(torch.from_numpy(src), torch.from_numpy(tgt_in[:2]))
    with pytest.raises(ValueError, match="expected a TorchTransformer"):
        from_torch(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="minitf Transformer"):
        to_torch(module)


def test_batch_0_gives_empty_results_as_minitf_does():
    model = small_model()
    module = to_torch(model)
    src, tgt_in = np.zeros((0, 3), np.int64), np.zeros((0, 2), np.int64)
    logits = module(torch.from_numpy(src), torch.from_numpy(tgt_in))
    assert tuple(logits.shape) == model(src, tgt_in).shape == (0, 2, TGT_VOCAB)
    ids = bridge.greedy_decode(module, torch.from_numpy(src), max_len=4)
    assert tuple(ids.shape) == greedy_decode(model, src, max_len=4).shape == (0, 1)


@pytest.mark.parametrize(("options", "error", "match"), [
    (dict(max_len=0), ValueError, "max_len must be an int >= 1, got 0"),
    (dict(max_len=2.5), TypeError, "max_len must be an int"),
    (dict(max_len=11), ValueError, "max_len=11 would feed the decoder positions 0..10"),
    (dict(max_len=3, eos_id=99), ValueError, r"eos_id must be an int in 0\.\.12"),
    (dict(max_len=3, bos_id=-1), ValueError, r"bos_id must be an int in 0\.\.12"),
])
def test_greedy_decode_checks_its_options_as_minitf_does(options, error, match):
    module = to_torch(small_model())
    with pytest.raises(error, match=match):
        bridge.greedy_decode(module, torch.tensor([[4, 2]]), **options)


def test_greedy_decode_of_a_minitf_model_names_module():
    with pytest.raises(ValueError, match="module: expected a TorchTransformer"):
        bridge.greedy_decode(small_model(), torch.tensor([[4, 2]]), max_len=3)


def test_greedy_decode_without_eos_runs_to_max_len():
    module = to_torch(small_model())
    assert tuple(bridge.greedy_decode(module, torch.tensor([[4, 2]]), max_len=5,
                                      eos_id=None).shape) == (1, 5)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_autograd_agrees_with_minitf_backward(norm_first):
    """The same loss through both, in float64; every parameter's gradient, by name."""
    model = small_model(norm_first, np.float64, seed=5)
    module = to_torch(model)
    src, tgt_in, tgt_out = padded_batch(seed=6)
    smoothing = 0.1

    logits = model.forward(src, tgt_in)
    loss, dlogits = cross_entropy(logits, tgt_out, ignore_index=0, label_smoothing=smoothing)
    model.zero_grad()
    model.backward(dlogits)

    torch_out = module(torch.from_numpy(src), torch.from_numpy(tgt_in))
    torch_loss = F.cross_entropy(torch_out.flatten(0, 1), torch.from_numpy(tgt_out).flatten(),
                                 ignore_index=0, label_smoothing=smoothing)
    torch_loss.backward()
    assert abs(torch_loss.item() - loss) <= 1e-12 * loss

    want, got = minitf_grads(model), torch_grads(module)
    assert list(got) == list(want)
    scale = max(np.abs(g).max() for g in want.values())
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-9, atol=1e-12 * scale,
                                   err_msg=name)
    # Not vacuous: padding rows give nothing, real ones do.
    assert np.abs(want["generator.W"]).max() > 1e-3
    assert not want["src_embed.weight"][0].any() and not got["src_embed.weight"][0].any()


def test_the_shipped_translator_translates_the_same_in_torch():
    model, meta = load_translator()
    module = to_torch(model).eval()
    numbers = np.random.default_rng(10).choice(tasks.MAX_NUMBER + 1, 400, replace=False)
    src, tgt_in, _ = tasks.make_batch(numbers)
    with torch.no_grad():
        got = module(torch.from_numpy(src), torch.from_numpy(tgt_in)).numpy()
    assert np.abs(got - model.forward(src, tgt_in)).max() <= 1e-4
    want = translate_ids(model, src)
    out = bridge.greedy_decode(module, src, max_len=model.max_len).numpy()
    np.testing.assert_array_equal(out, want)
    texts = ["".join(meta["target_vocab"].decode(row)) for row in out]
    assert sum(t == tasks.chinese(int(n)) for t, n in zip(texts, numbers)) >= 0.99 * len(numbers)

"""Issue #14's sweep, one test per finding: hostile or unusual input is refused with a clear
error or handled right — never a traceback from inside numpy, never a silent NaN."""

import json
import warnings
import zipfile

import numpy as np
import pytest

from minitf import tasks
from minitf.attention import scaled_dot_product_attention, softmax
from minitf.fast import blocked_attention
from minitf.generate import beam_search, greedy_decode, top_p_mask
from minitf.layers import LayerNorm
from minitf.model import Transformer
from minitf.positional import rope
from minitf.tasks import exact_match
from minitf.train import Adam, cross_entropy
from minitf.translator import new_model, save_translator
from minitf.translator.checkpoint import load_checkpoint, save_checkpoint

TINY = dict(d_model=16, num_heads=2, num_layers=1, d_ff=32)


# 1 — a -inf logit is a class that cannot occur
def test_cross_entropy_with_a_masked_class_is_finite():
    logits = np.array([[2.0, -np.inf, 0.5], [0.1, -np.inf, 0.3]])
    loss, dlogits = cross_entropy(logits, np.array([0, 2]), ignore_index=None)
    finite = np.where(np.isinf(logits), -1e9, logits)
    expected, expected_grad = cross_entropy(finite, np.array([0, 2]), ignore_index=None)
    assert np.isfinite(loss) and np.isfinite(dlogits).all()
    np.testing.assert_allclose(loss, expected)
    np.testing.assert_allclose(dlogits, expected_grad, atol=1e-12)
    with pytest.raises(ValueError, match="label smoothing .* -inf"):
        cross_entropy(logits, np.array([0, 2]), ignore_index=None, label_smoothing=0.1)


# 2 — a batch of no sentences
def test_an_empty_batch_gives_empty_results():
    model = new_model(0, **TINY)
    src = np.zeros((0, 5), dtype=np.int64)
    assert model.forward(src, np.zeros((0, 3), dtype=np.int64)).shape == (0, 3, 17)
    assert greedy_decode(model, src, max_len=4).shape[0] == 0
    assert beam_search(model, src, beam_size=2, max_len=4).shape[0] == 0
    q = np.zeros((0, 2, 3, 4), np.float32)
    mask = np.ones((0, 1, 1, 3), bool)
    for attention in (scaled_dot_product_attention, blocked_attention):
        out, weights = attention(q, q, q, mask)
        assert out.shape == (0, 2, 3, 4) and weights.shape == (0, 2, 3, 3)


# 3 — rope on integers computes in floats
def test_rope_on_integers_is_a_float_result():
    x = np.arange(24).reshape(3, 8)
    out = rope(x)
    assert np.issubdtype(out.dtype, np.floating)
    np.testing.assert_allclose(out, rope(x.astype(np.float64)))
    assert not np.array_equal(out[1], x[1])  # rotated, not truncated back to ints


# 4 — only float32 and float64 models
@pytest.mark.parametrize("dtype", [np.int32, np.float16, np.complex64, "oops"])
def test_model_dtype_must_be_float32_or_float64(dtype):
    with pytest.raises((TypeError, ValueError), match="dtype must be"):
        Transformer(20, 17, **TINY, dtype=dtype)


def test_adam_refuses_half_precision_parameters():
    model = new_model(0, **TINY)
    model.params["extra"] = np.zeros(3, np.float16)  # smuggled past the constructor
    with pytest.raises(ValueError, match="float32 or float64"):
        Adam(model, lr=1e-3)


# 5, 6, 8 — checkpoints
@pytest.fixture
def saved(tmp_path):
    return save_checkpoint(tmp_path / "m.npz", new_model(0, **TINY))


def rewrite(path, **changes):
    with np.load(path) as npz:
        arrays = dict(npz)
    arrays.update(changes)
    np.savez(path, **arrays)


def config_of(path):
    with np.load(path) as npz:
        return json.loads(str(npz["config"]))


def test_config_that_is_not_an_object(saved):
    rewrite(saved, config=np.array(json.dumps([1, 2, 3])))
    with pytest.raises(ValueError, match=f"{saved}: the config should be a JSON object"):
        load_checkpoint(saved)


def test_huge_max_len_is_refused_before_allocating(saved):
    rewrite(saved, config=np.array(json.dumps({**config_of(saved), "max_len": 10**12})))
    with pytest.raises(ValueError, match=f"{saved}: .*max_len=1000000000000"):
        load_checkpoint(saved)


def test_config_sizes_that_do_not_fit_the_weights_are_refused_before_allocating(saved):
    rewrite(saved, config=np.array(json.dumps({**config_of(saved), "d_ff": 10**6})))
    with pytest.raises(ValueError, match=f"{saved}: the weights do not fit the config"):
        load_checkpoint(saved)


def test_an_unused_member_is_never_read(saved):
    with zipfile.ZipFile(saved, "a") as archive:
        with archive.open("huge.npy", "w") as f:  # a header promising 100 MiB, then nothing
            np.lib.format.write_array_header_1_0(
                f, {"descr": "<f8", "fortran_order": False, "shape": (100 * 2**20 // 8,)})
    with pytest.raises(ValueError, match=f"{saved}: .*unexpected members \\['huge'\\]"):
        load_checkpoint(saved)


def test_random_bytes_never_advise_pickles(tmp_path):
    path = tmp_path / "noise.npz"
    path.write_bytes(np.random.default_rng(0).bytes(4000))
    with pytest.raises(ValueError) as error:
        load_checkpoint(path)
    assert str(path) in str(error.value) and "pickle" not in str(error.value)


def test_a_pickled_member_is_refused(saved):
    with zipfile.ZipFile(saved, "a") as archive:
        with archive.open("param/extra.npy", "w") as f:
            np.save(f, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match=f"{saved}: .*Python objects"):
        load_checkpoint(saved)


def test_save_refuses_vocabularies_of_another_size(tmp_path):
    model = Transformer(50, 17, **TINY)
    with pytest.raises(ValueError, match=r"sizes \(34, 17\) are not the model's \(50, 17\)"):
        save_translator(tmp_path / "m.npz", model)
    assert not (tmp_path / "m.npz").exists()


def test_a_checkpoint_with_nan_weights_is_refused(saved):
    with np.load(saved) as npz:
        weight = npz["param/generator.W"].copy()
    weight[0, 0] = np.nan
    rewrite(saved, **{"param/generator.W": weight})
    with pytest.raises(ValueError, match=f"{saved}: weights that are not finite .*generator.W"):
        load_checkpoint(saved)


def test_nan_weights_are_not_saved(tmp_path):
    model = new_model(0, **TINY)
    model.generator.W[0, 0] = np.nan
    with pytest.raises(ValueError, match=f"{tmp_path / 'nan.npz'}: not saved: weights that are "
                                         "not finite .*generator.W"):
        save_checkpoint(tmp_path / "nan.npz", model)
    assert list(tmp_path.iterdir()) == []


# 7 — ids are integers
def test_float_ids_are_refused_not_truncated():
    with pytest.raises(ValueError, match="targets must be integers"):
        cross_entropy(np.zeros((2, 5)), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="ids must be integers"):
        tasks.TARGET_VOCAB.decode(np.array([4.0, 5.0]))
    with pytest.raises(ValueError, match=r"sequences\[0\] must be integers"):
        tasks.pad([[1.7, 2.0]])


# 8 — one policy for non-finite values: refused where they enter, named
@pytest.mark.parametrize("name", ["q", "k", "v"])
def test_nan_or_inf_in_attention_inputs_is_refused(name):
    arrays = {n: np.ones((2, 3, 4)) for n in "qkv"}
    for bad in (np.nan, np.inf):
        arrays[name][0, 1, 2] = bad
        for attention in (scaled_dot_product_attention, blocked_attention):
            with pytest.raises(ValueError, match=f"^{name} contains NaN or inf"):
                attention(arrays["q"], arrays["k"], arrays["v"])


def test_nan_logits_are_refused():
    with pytest.raises(ValueError, match="logits contain NaN"):
        cross_entropy(np.array([[0.0, np.nan]]), np.array([1]), ignore_index=None)
    with pytest.raises(ValueError, match="NaN"):
        softmax(np.array([0.0, np.nan]))


# 9 — empty arrays
def test_softmax_of_nothing_is_nothing():
    assert softmax(np.zeros((3, 0))).shape == (3, 0)
    assert softmax(np.zeros(0)).shape == (0,)


# 10 — LayerNorm of huge float32 values
@pytest.mark.parametrize("scale", [1e20, 1e36])
def test_layer_norm_of_huge_values_is_right(scale):
    x = np.random.default_rng(0).standard_normal((3, 8))
    expected = LayerNorm(8, dtype=np.float64)(x)  # eps is negligible at both scales
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = LayerNorm(8)((x * scale).astype(np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, atol=1e-4)


# 14 — top-p keeps at least one token
def test_top_p_keeps_a_token_of_an_all_zero_row():
    keep = top_p_mask(np.zeros((2, 5)), 0.9)
    assert (keep.sum(axis=-1) >= 1).all()


# 15 — accuracy over nothing
def test_exact_match_of_no_numbers_is_an_error():
    with pytest.raises(ValueError, match="non-empty"):
        exact_match(new_model(0, **TINY), [])

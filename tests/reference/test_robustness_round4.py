"""Issue #36 (robustness round 4), the reference: one test per root cause, with the review's
cases and their neighbours. P6–P10 are tested where they were fixed."""

import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import minitf.model as model_module
import minitf.validation as validation
from minitf import tasks
from minitf.attention import scaled_dot_product_attention
from minitf.decoder import Decoder
from minitf.encoder import Encoder
from minitf.fast import blas_threads, blocked_attention, chunked_attention
from minitf.fast.threads import DEFAULT_THREADS, chosen_threads
from minitf.generate import greedy_decode, sample
from minitf.layers import Embedding, FeedForward, LayerNorm, Linear, glorot_uniform
from minitf.model import Transformer, TransformerConfig
from minitf.positional import (
    EmbeddingWithPositions,
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
)
from minitf.train import TrainConfig, train
from minitf.validation import require_fits

HUGE = [10**12, np.int64(2**40), 2**64]


def blas():
    return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}


# N23: the sizes the round-3 checks did not reach

@pytest.mark.parametrize("size", HUGE, ids=str)
@pytest.mark.parametrize("build, named", [
    (lambda n: Encoder(n, 8, 2, 16), "num_layers"),
    (lambda n: Decoder(n, 8, 2, 16), "num_layers"),
    (lambda n: glorot_uniform(np.random.default_rng(0), n, 2, np.float32), "d_in"),
    (lambda n: glorot_uniform(np.random.default_rng(0), 2, n, np.float32), "d_out"),
])
def test_sizes_the_checks_missed_are_refused_at_once(build, named, size):
    with pytest.raises(ValueError, match=f"{named}={int(size)}.* would need .* more than this "
                                         "machine's"):
        build(size)


def test_reference_attention_refuses_scores_that_cannot_fit():
    q = np.zeros((112419, 2), np.float32)  # (L, L) float32 scores of 47 GiB, three times
    with pytest.raises(ValueError, match=r"q=\(112419, 2\), k=\(112419, 2\), v=\(112419, 2\) "
                                         r"would need .* for the attention scores"):
        scaled_dot_product_attention(q, q, q)
    out, weights = scaled_dot_product_attention(q[:3], q[:3], q[:3])
    assert weights.shape == (3, 3)


@pytest.mark.parametrize("batch_size", HUGE, ids=str)
def test_train_refuses_a_batch_that_cannot_fit_before_a_step(batch_size):
    model = Transformer(10, 10, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=8)
    before = model.generator.W.copy()
    task = tasks.NumberTask([1, 2, 30], [4, 5], eval_size=2)
    with pytest.raises(ValueError, match=f"batch_size={int(batch_size)} would need"):
        train(model, task, steps=1, batch_size=batch_size)
    np.testing.assert_array_equal(model.generator.W, before)


# P4: numpy-int sizes become Python ints; their products never wrap

@pytest.mark.parametrize("build, named", [
    (lambda n: Linear(n, n), "d_in=4294967296, d_out=4294967296"),
    (lambda n: Embedding(n, n), "vocab_size=4294967296, d_model=4294967296"),
    (lambda n: FeedForward(n, n), "d_model=4294967296, d_ff=4294967296"),
    (lambda n: LearnedPositionalEmbedding(n, n), "max_len=4294967296, d_model=4294967296"),
    (lambda n: EmbeddingWithPositions(n, n, 4), "vocab_size=4294967296, d_model=4294967296"),
    (lambda n: SinusoidalPositionalEncoding(n, n), "max_len=4294967296, d_model=4294967296"),
    (lambda n: LayerNorm(np.int64(2**61)), "d_model=2305843009213693952"),
])
def test_numpy_int_sizes_do_not_wrap(build, named):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "overflow encountered in scalar multiply" would fail
        with pytest.raises(ValueError, match=f"^{named} would need .* EiB"):
            build(np.int64(2**32))


def test_configs_store_python_ints():
    config = TransformerConfig(np.int64(10), np.int32(10), d_model=np.int64(8),
                               num_heads=np.int8(2), norm_first=np.bool_(True))
    assert type(config.d_model) is int and type(config.src_vocab_size) is int
    assert config.norm_first is True
    assert config == TransformerConfig(10, 10, d_model=8, num_heads=2, norm_first=True)
    assert type(TrainConfig(batch_size=np.int64(8)).batch_size) is int
    encoding = SinusoidalPositionalEncoding(np.int64(6), np.int64(4))
    assert (type(encoding.max_len), type(encoding.d_model)) == (int, int)


# P15: temperatures outside the model's float range

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sample_at_extreme_temperatures(dtype):
    model = Transformer(12, 12, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=6,
                        dtype=dtype, rng=0)
    src = np.array([[4, 5, 6, 2], [7, 8, 2, 0]])
    greedy = greedy_decode(model, src, max_len=5, eos_id=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for cold in (1e-300, 1e-46, 1e-38, 1e-30):  # below float32's smallest, and near it
            np.testing.assert_array_equal(
                sample(model, src, max_len=5, temperature=cold, rng=0, eos_id=None), greedy)
        for hot in (1e39, 1e300):  # above float32's largest: (about) uniform, never NaN
            ids = sample(model, src, max_len=5, temperature=hot, rng=0, eos_id=None)
            assert ids.shape == greedy.shape and ids.min() >= 0 and ids.max() < 12


# P16: the estimates count the peak, per dtype, against what is available

def test_estimates_count_the_float64_draw_and_the_gradient(monkeypatch):
    monkeypatch.setattr(validation, "machine_memory", lambda: 2**29)  # a 512 MiB machine
    monkeypatch.setattr(validation, "available_memory", lambda: 2**29)
    side = 7000  # one float64 (side, side) matrix is 392 MB: the old check let it through
    assert 8 * side * side < 2**29 < 16 * side * side
    for build, named in ((lambda: Linear(side, side), "d_in=7000, d_out=7000"),
                         (lambda: Embedding(side, side), "vocab_size=7000, d_model=7000")):
        with pytest.raises(ValueError, match=f"^{named} would need 748 MiB"):
            build()
    config = TransformerConfig(400_000, 10, d_model=64)  # its float32 estimate fits
    vocabs, weights = ("src_vocab_size", "tgt_vocab_size"), model_module._num_weights
    model_module.require_model_fits(config, vocabs, weights, np.float32)
    with pytest.raises(ValueError, match="would need .* for the model's float64 weights"):
        model_module.require_model_fits(config, vocabs, weights, np.float64)
    with pytest.raises(ValueError, match="would need .* for the model's float64 weights"):
        Transformer(400_000, 10, d_model=64, dtype=np.float64)


def test_require_fits_compares_with_what_is_available_now(monkeypatch):
    monkeypatch.setattr(validation, "machine_memory", lambda: 2**34)
    monkeypatch.setattr(validation, "available_memory", lambda: 2**30)
    with pytest.raises(ValueError, match=r"^n=9 would need 2 GiB for a table, more than the "
                                         r"1 GiB of memory available now \(of this machine's "
                                         r"16 GiB\)$"):
        require_fits(2**31, "a table", n=9)
    assert require_fits(2**29, "a table", n=9) == 2**29


def test_available_memory_is_at_most_the_machines():
    assert 0 < validation.available_memory() <= validation.machine_memory()


# BLAS threads: the fast path and training run on one thread unless told otherwise

def test_the_fast_path_runs_blas_on_the_chosen_threads(monkeypatch):
    seen = []
    import minitf.fast.attention as fast_attention
    inner = fast_attention._attention_in_blocks

    def spy(*args, **kwargs):
        seen.append(blas())
        return inner(*args, **kwargs)

    monkeypatch.setattr(fast_attention, "_attention_in_blocks", spy)
    q = np.random.default_rng(0).standard_normal((2, 5, 4)).astype(np.float32)
    outside = blas()
    blocked_attention(q, q, q)
    chunked_attention(q, q, q)
    assert seen == [{DEFAULT_THREADS}] * 2 and blas() == outside  # restored afterwards
    with blas_threads(2):
        assert chosen_threads() == 2
        blocked_attention(q, q, q)
    assert seen[-1] == {2} and chosen_threads() == DEFAULT_THREADS and blas() == outside


def test_train_runs_blas_on_one_thread(monkeypatch):
    seen = []
    model = Transformer(len(tasks.SOURCE_VOCAB), len(tasks.TARGET_VOCAB), d_model=8,
                        num_heads=2, num_layers=1, d_ff=16, max_len=16, rng=0)
    task = tasks.NumberTask([1, 2, 30], [4, 5], eval_size=2)
    forward = model.forward

    def spy(*args):
        seen.append(blas())
        return forward(*args)

    monkeypatch.setattr(model, "forward", spy)
    train(model, task, steps=2, batch_size=2, log_every=1)
    assert seen == [{DEFAULT_THREADS}] * 2


def test_threads_change_no_number():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((8, 200, 64)).astype(np.float32) for _ in range(3))
    one = blocked_attention(q, k, v)
    with blas_threads(2):
        two = blocked_attention(q, k, v)
    np.testing.assert_allclose(one[0], two[0], rtol=1e-5, atol=1e-6)  # float32 rounding
    with pytest.raises(ValueError, match="n must be an int >= 1, got 0"):
        blas_threads(0)

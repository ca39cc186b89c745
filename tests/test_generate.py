import numpy as np
import pytest

from minitf.generate import greedy_decode
from minitf.model import Transformer

V_SRC, V_TGT = 13, 11
PAD, BOS, EOS = 0, 1, 2


def tiny_model(seed=0, norm_first=False, eos_bias=0.0, **kw):
    args = dict(d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=40, rng=seed,
                norm_first=norm_first)
    args.update(kw)
    model = Transformer(V_SRC, V_TGT, **args)
    model.generator.b[EOS] += eos_bias
    return model


def random_src(B, L=7, seed=1):
    src = np.random.default_rng(seed).integers(3, V_SRC, size=(B, L))
    src[::2, L - 2:] = PAD  # some rows are padded
    return src


def check_conventions(out, max_len, eos_id=EOS):
    """eos kept, <pad> after it, nothing after max_len; returns which rows stopped early."""
    assert out.dtype == np.int64 and out.ndim == 2 and 1 <= out.shape[1] <= max_len
    stopped = np.zeros(len(out), dtype=bool)
    for i, row in enumerate(out):
        ends = np.flatnonzero(row == eos_id) if eos_id is not None else []
        if len(ends):
            stopped[i] = True
            assert (row[ends[0] + 1:] == PAD).all()
            assert (row[:ends[0]] != PAD).all()
        else:
            assert (row != PAD).all()
    if eos_id is not None and out.shape[1] < max_len:
        assert stopped.all()
    return stopped


def set_mixed_eos_bias(model, src, max_len):
    """Bisects the <eos> bias until some rows of greedy decoding stop early and others not."""
    low, high = -10.0, 10.0  # no row stops / every row stops
    for _ in range(30):
        model.generator.b[EOS] = (low + high) / 2
        stopped = check_conventions(greedy_decode(model, src, max_len=max_len), max_len)
        if stopped.any() and not stopped.all():
            return stopped
        low, high = (low, (low + high) / 2) if stopped.all() else ((low + high) / 2, high)
    raise AssertionError("no <eos> bias gives a mix of stopped and running rows")


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("B", [1, 3, 5])
@pytest.mark.parametrize("eos_id", [None, EOS])
def test_greedy_cache_equals_recompute(norm_first, B, eos_id):
    model = tiny_model(seed=B, norm_first=norm_first, eos_bias=1.5)
    src = random_src(B)
    if B > 1:
        set_mixed_eos_bias(model, src, 15)
    with_cache = greedy_decode(model, src, max_len=15, eos_id=eos_id)
    without = greedy_decode(model, src, max_len=15, eos_id=eos_id, use_cache=False)
    np.testing.assert_array_equal(with_cache, without)
    stopped = check_conventions(with_cache, 15, eos_id)
    assert with_cache.shape[1] == 15 or eos_id is not None
    if eos_id is None or B == 1:
        return
    assert stopped.any() and not stopped.all()


def test_pad_is_never_generated():
    model = tiny_model(seed=1, eos_bias=-50.0)
    model.generator.b[PAD] += 50.0
    out = greedy_decode(model, random_src(3), max_len=6)
    assert (out != PAD).all() and out.shape == (3, 6)

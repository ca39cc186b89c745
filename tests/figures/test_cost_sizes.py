"""Issue #36 (N23): notebook 02's cost cells refuse sizes that cannot fit, naming them, before
anything is allocated."""

import numpy as np
import pytest

from minitf.figures import cost


@pytest.mark.parametrize("size", [10**12, np.int64(2**40), 2**64], ids=str)
@pytest.mark.parametrize("call, named", [
    (lambda n: cost.random_qkv(n), "n"),
    (lambda n: cost.random_qkv(4, d=n), "d"),
    (lambda n: cost.time_attention(n), "n"),
    (lambda n: cost.time_attention(4, d=n), "d"),
    (lambda n: cost.random_qkv(4, batch=(n,)), "batch"),
])
def test_sizes_that_cannot_fit_are_refused(call, named, size):
    with pytest.raises(ValueError, match=f"{named}=.*{int(size)}.* would need .* more than this "
                                         "machine's"):
        call(size)


def test_small_sizes_still_work():
    q, k, v = cost.random_qkv(3, 4, batch=(2,))
    assert q.shape == (2, 3, 4) and q.dtype == np.float32
    with pytest.raises(ValueError, match="batch must be an int >= 0"):
        cost.random_qkv(3, 4, batch=(-1,))

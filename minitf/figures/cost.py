"""What attention costs: counted FLOPs and bytes, and measured time and peak memory.

Used by notebook 02 and by benchmarks/attention.py, so the course's plot and the measured
figures come from the same code.
"""

import math
import time
import tracemalloc

import numpy as np

from ..attention import causal_mask, scaled_dot_product_attention
from ..validation import require_bool, require_fits, require_int


def attention_flops(L_q, L_k, d_k, d_v=None, batch=1):
    """Multiply-adds ×2 of the two matrix products: Q Kᵀ (L_q·L_k·d_k) and A V (L_q·L_k·d_v).
    Notebook 02 §5."""
    d_v = d_k if d_v is None else d_v
    L_q, L_k, d_k, d_v, batch = (require_int(value, name, low=0) for value, name in (
        (L_q, "L_q"), (L_k, "L_k"), (d_k, "d_k"), (d_v, "d_v"), (batch, "batch")))
    return 2 * batch * L_q * L_k * (d_k + d_v)


def score_bytes(L_q, L_k, batch=1, dtype=np.float32):
    """Bytes of one (batch, L_q, L_k) score matrix.
    Notebook 02 §5."""
    L_q, L_k, batch = (require_int(value, name, low=0) for value, name in (
        (L_q, "L_q"), (L_k, "L_k"), (batch, "batch")))
    return batch * L_q * L_k * _numeric_dtype(dtype).itemsize


def _numeric_dtype(dtype):
    """np.dtype(dtype) if it is a dtype of numbers, else a TypeError naming `dtype`."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a numpy dtype such as np.float32, got "
                        f"{dtype!r:.60}") from None
    if dtype.kind not in "biufc":
        raise TypeError(f"dtype must be a dtype of numbers, got {dtype}")
    return dtype


def random_qkv(n, d=64, batch=(), dtype=np.float32, seed=0):
    """Random float32 q, k, v of shape batch + (n, d), from a seeded generator.
    Notebook 02 §5."""
    n, d = require_int(n, "n", low=1), require_int(d, "d", low=1)
    if not isinstance(batch, tuple):
        raise TypeError(f"batch must be a tuple of sizes such as (2, 8), got {batch!r}")
    batch = tuple(require_int(size, "batch", low=0) for size in batch)
    require_fits((8 + 3 * _numeric_dtype(dtype).itemsize) * math.prod(batch) * n * d,
                 "q, k and v and a float64 draw", n=n, d=d, batch=batch)
    rng = np.random.default_rng(require_int(seed, "seed", low=0))
    return tuple(rng.standard_normal(batch + (n, d), dtype=np.float64).astype(dtype)
                 for _ in range(3))


def time_attention(n, d=64, batch=(), repeats=5, causal=False, fn=None):
    """Best wall time (s) of fn(q, k, v, mask) on random float32 inputs of length n.
    Notebook 02 §5."""
    fn = scaled_dot_product_attention if fn is None else fn
    if not callable(fn):
        raise TypeError(f"fn must be a function fn(q, k, v, mask), got {type(fn).__name__} "
                        f"{fn!r:.60}")
    repeats = require_int(repeats, "repeats", low=1)
    causal = require_bool(causal, "causal")
    q, k, v = random_qkv(n, d, batch)
    mask = causal_mask(n) if causal else None
    fn(q, k, v, mask)  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(q, k, v, mask)
        best = min(best, time.perf_counter() - start)
    return best


def peak_memory(fn, *args, **kwargs):
    """Peak bytes allocated by numpy (through tracemalloc) while fn(*args, **kwargs) runs.
    Notebook 02 §5."""
    tracemalloc.start()
    try:
        fn(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

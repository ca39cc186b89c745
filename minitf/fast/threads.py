"""BLAS threads for the fast path and for training, set with threadpoolctl.

The fast attention and a training step are many small matrix products. OpenBLAS splits
each one over its threads and waits for all of them, so when another process holds one of
the cores (a browser, a second notebook) every product waits for a time slice. Measured by
benchmarks/contention.py (AMD EPYC, 2 cores shared with other work, load average 3-5,
2026-12-04; `blocked_attention` at B=8, H=8, L=512, causal, against torch's SDPA on its
own 2 threads, medians of 21 runs in turns): with a spinning competitor on one core,
2.0-37× torch's time on OpenBLAS's 2 threads, 0.93-1.21× on one; without it, 1.1-13.6×
and 0.89-1.52×. So both run on one BLAS thread unless the caller chooses more with
`blas_threads(n)` (the command line's --threads does).

threadpoolctl changes the thread count of the BLAS numpy loaded, for the whole process, and
restores it afterwards. Another thread count may change the last bits of a float32 sum, as
another BLAS would; the notebooks' stored outputs come from one thread, as these run.
No notebook uses these: the notebooks already run with BLAS on one thread.
"""

import contextlib
import functools
import threading

from ..validation import require_int

DEFAULT_THREADS = 1  # what the fast path and training use unless blas_threads chose otherwise
_state = threading.local()  # .chosen: the count of the innermost blas_threads block
_controller = None


def _threadpools():
    """threadpoolctl's controller of the libraries loaded now, made once (it looks them up)."""
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController
        _controller = ThreadpoolController()
    return _controller


def blas_threads(n):
    """`with blas_threads(n):` runs the block with BLAS on `n` threads (an int >= 1); the fast
    path and training inside it use `n` too. The command line's `train --threads` uses it;
    no notebook does."""
    return _limited(require_int(n, "n", low=1))


@contextlib.contextmanager
def _limited(n):
    outer = getattr(_state, "chosen", None)
    _state.chosen = n
    try:
        with _threadpools().limit(limits=n, user_api="blas"):
            yield n
    finally:
        _state.chosen = outer


def chosen_threads():
    """The BLAS threads the fast path and training use here: those of the innermost
    `blas_threads` block, else DEFAULT_THREADS. The command line prints it; no notebook does."""
    chosen = getattr(_state, "chosen", None)
    return DEFAULT_THREADS if chosen is None else chosen


def with_chosen_threads(fn):
    """fn, run with BLAS on `chosen_threads()` threads (free when a blas_threads block has
    already set them). blocked_attention, chunked_attention and train use it; no notebook
    does."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if getattr(_state, "chosen", None) is not None:
            return fn(*args, **kwargs)
        with _limited(DEFAULT_THREADS):
            return fn(*args, **kwargs)
    return run

"""The same computations as the reference modules, made fast, under their own names.

Each function here says in its docstring how it differs from the reference and what it
measured; `tests/reference/test_fast.py` checks that it gives the reference's numbers.
The model picks this path through one switch, `MultiHeadAttention.fast`. It runs BLAS on
one thread (threads.py says why), as training does; `blas_threads(n)` chooses another count.
Notebook 02 §5 shows what attention costs.
"""

from .attention import blocked_attention, chunked_attention
from .threads import blas_threads

__all__ = ["blas_threads", "blocked_attention", "chunked_attention"]

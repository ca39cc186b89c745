"""Argument checks for the package's public functions: each raises a ValueError (or a
TypeError for a wrong kind of object) that names the argument and says what it should be.

These guard the math; they are not the exercise checkers of `minitf.check`. No notebook builds
them: every notebook meets their messages when it passes something that does not fit.
"""

import numbers

import numpy as np

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def require_int(value, name, low=None, high=None):
    """`value` as an int, refusing bools, floats and numbers outside [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {shorten(value)} ({type(value).__name__})")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be an int {_range(low, high)}, got {value!r}")
    return int(value)


def require_real(value, name, low=None, high=None, *, low_open=False, high_open=False):
    """`value` as a finite float in the interval given (open or closed at each end)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {shorten(value)} ({type(value).__name__})")
    value = float(value)
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if not np.isfinite(value) or too_low or too_high:
        interval = (f"{'(' if low_open else '['}{'-inf' if low is None else low}, "
                    f"{'inf' if high is None else high}{')' if high_open or high is None else ']'}")
        raise ValueError(f"{name} must be a finite number in {interval}, got {value!r}")
    return value


def require_float_dtype(dtype, name="dtype"):
    """np.float32 or np.float64: the dtypes the layers compute in (float16 overflows in Adam
    and LayerNorm; integers cannot hold a gradient)."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{name} must be a numpy float dtype, got {dtype!r}") from None
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"{name} must be float32 or float64, got {dtype}")
    return dtype


def require_float_array(x, name):
    """x as an array of float32 or float64 numbers (ints are converted to float64)."""
    x = np.asarray(x)
    if x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.number) or np.iscomplexobj(x):
        raise ValueError(f"{name} must be an array of real numbers, got dtype {x.dtype}")
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    return x


def require_last_dim(x, size, name="input", what="d_model"):
    """x whose last axis has `size` entries."""
    if x.ndim < 1 or x.shape[-1] != size:
        raise ValueError(f"{name} has last dimension {x.shape[-1] if x.ndim else None} "
                         f"but {what}={size}; got shape {x.shape}")
    return x


def require_token_ids(tokens, vocab_size, name="tokens"):
    """An integer array with every id in [0, vocab_size)."""
    tokens = np.asarray(tokens)
    if tokens.dtype == np.bool_ or not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array of token ids, got dtype {tokens.dtype}")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab_size):
        bad = tokens[(tokens < 0) | (tokens >= vocab_size)]
        raise ValueError(f"{name} contain id {bad.flat[0]}, outside the vocabulary "
                         f"0..{vocab_size - 1}")
    return tokens


def _range(low, high):
    if low is not None and high is not None:
        return f"in {low}..{high}"
    return f">= {low}" if low is not None else f"<= {high}"


def shorten(value, limit=60):
    """repr(value), shortened with … when long: an error message never repeats a whole input."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"

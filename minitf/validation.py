"""Argument checks for the package's public functions: each raises a ValueError (or a
TypeError for a wrong kind of object) that names the argument and says what it should be.

These guard the math; they are not the exercise checkers of `minitf.check`. No notebook builds
them: every notebook meets their messages when it passes something that does not fit. The
formula files make one call to them at the top of a function (`require_attention_inputs`,
`require_cross_entropy_args`, …) and then read as the formula the notebook teaches.

Non-finite values, one policy: NaN and inf are refused, with the argument named, where they
would spread through a computation — attention refuses them in q, k and v; softmax,
log_softmax and cross_entropy refuse NaN and +inf (−inf is allowed there: it means "masked",
probability 0); LayerNorm refuses them; a checkpoint whose weights are not finite is refused
when it is loaded. Linear and FeedForward pass them on to the next of these checks.
"""

import functools
import numbers
import os

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


def require_sizes(**sizes):
    """The ints ≥ 1 given by keyword, in order: `d, h = require_sizes(d_model=d, num_heads=h)`."""
    return tuple(require_int(value, name, low=1) for name, value in sizes.items())


def require_bool(value, name):
    """`value` if it is True or False (a string such as "yes" is refused, not read as True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {shorten(value)} "
                        f"({type(value).__name__})")
    return bool(value)


def require_instance(value, cls, name):
    """`value` if it is a `cls` (for example a minitf Module)."""
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be a {cls.__name__}, got {shorten(value)} "
                        f"({type(value).__name__})")
    return value


def require_float_dtype(dtype, name="dtype"):
    """np.float32 or np.float64: the dtypes the layers compute in (float16 overflows in Adam
    and LayerNorm; integers cannot hold a gradient)."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{name} must be np.float32 or np.float64, got {shorten(dtype)}") from None
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"{name} must be float32 or float64, got {dtype}")
    return dtype


def require_float_array(x, name, ndim=None):
    """x as an array of real numbers, floats kept as they are and ints converted to float64;
    with `ndim`, of exactly that many dimensions."""
    if isinstance(x, np.ndarray) and x.dtype in FLOAT_DTYPES and ndim in (None, x.ndim):
        return x  # the common case, checked fast: this runs on every layer's input
    x = np.asarray(x)
    if x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.number) or np.iscomplexobj(x):
        raise ValueError(f"{name} must be an array of real numbers, got dtype {x.dtype}")
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {x.shape}")
    return x


def require_int_array(x, name):
    """x as an integer array (ids, numbers); floats such as 1.7 are refused, not truncated."""
    x = np.asarray(x)
    if x.size and (x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.integer)):
        raise ValueError(f"{name} must be integers, got dtype {x.dtype}")
    return x.astype(np.int64, copy=False)


def all_finite(a):
    """True when no entry of the float array `a` is NaN or ±inf. A finite sum proves it in one
    pass; only a sum that is not finite (NaN, inf, or an overflow) needs the entry-wise test."""
    return bool(np.isfinite(a.sum())) or bool(np.isfinite(a).all())


def require_last_dim(x, size, name="input", what="d_model"):
    """x whose last axis has `size` entries."""
    if x.ndim < 1 or x.shape[-1] != size:
        raise ValueError(f"{name} has last dimension {x.shape[-1] if x.ndim else None} "
                         f"but {what}={size}; got shape {x.shape}")
    return x


def require_token_ids(tokens, vocab_size=None, name="tokens", *, ndim=None):
    """An integer array of token ids: `ndim` dimensions when given, every id in
    [0, vocab_size) when vocab_size is given. The one check of token ids in the package."""
    tokens = np.asarray(tokens)
    if tokens.dtype == np.bool_ or not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array of token ids, got dtype {tokens.dtype}")
    if ndim is not None and tokens.ndim != ndim:
        shape = "(B, L)" if ndim == 2 else f"{ndim} dimensions"
        raise ValueError(f"{name} must have shape {shape}, got shape {tokens.shape}")
    if vocab_size is not None and tokens.size and (tokens.min() < 0 or tokens.max() >= vocab_size):
        bad = tokens[(tokens < 0) | (tokens >= vocab_size)]
        raise ValueError(f"{name} contain id {bad.flat[0]}, outside the vocabulary "
                         f"0..{vocab_size - 1}")
    return tokens


def require_sequence(tokens, name, max_len, start=0):
    """Token ids of shape (B, L) with at least one position, fed at positions start..start+L-1
    of a model whose positional table has `max_len` positions."""
    tokens = require_token_ids(tokens, name=name, ndim=2)
    if tokens.shape[1] == 0:
        raise ValueError(f"{name} has no positions (shape {tokens.shape}): a sequence needs "
                         "at least one token")
    if start + tokens.shape[1] > max_len:
        raise ValueError(f"{name} reaches position {start + tokens.shape[1]}, longer than "
                         f"max_len={max_len}")
    return tokens


def require_start(start, cache, layers):
    """`start`, the position of the first token fed: an int >= 0 and, with a model's KV
    cache (a list of `layers` dicts), the number of positions the cache holds."""
    start = require_int(start, "start", low=0)
    if cache is None:
        return start
    cached = require_cache(cache, layers=layers)[0].get("self_attn", {})
    held = cached["k"].shape[2] if "k" in cached else 0
    if start != held:
        raise ValueError(f"start={start}, but the cache holds {held} positions: the new "
                         f"tokens start at position {held}")
    return start


def require_fits(nbytes, what, **args):
    """Refuse, before it is allocated, what would need more memory than this machine has, or
    than is available now: `nbytes` bytes for `what` ("an (n, n) mask"), asked for by the
    arguments `args` (Python ints: a product of numpy ints can wrap around), which the
    ValueError names: "n=1000000000000 would need 909 PiB for an (n, n) mask, …"."""
    asked = ", ".join(f"{name}={value!r}" for name, value in args.items())
    if nbytes > machine_memory():
        raise ValueError(f"{asked} would need {format_bytes(nbytes)} for {what}, more than this "
                         f"machine's {format_bytes(machine_memory())} of memory")
    if nbytes > _WORTH_ASKING and nbytes > available_memory():
        raise ValueError(f"{asked} would need {format_bytes(nbytes)} for {what}, more than the "
                         f"{format_bytes(available_memory())} of memory available now (of this "
                         f"machine's {format_bytes(machine_memory())})")
    return nbytes


_WORTH_ASKING = 1 << 26  # below 64 MiB, require_fits does not read what is available


def available_memory():
    """The bytes that can be allocated now without swapping: the system's MemAvailable, or
    less when a container's memory limit (cgroup v2 memory.max, v1 limit_in_bytes) leaves
    less; machine_memory() where neither is known."""
    known = [machine_memory()]
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    known.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit) as f, open(usage) as g:
                known.append(int(f.read()) - int(g.read()))
            break
        except (OSError, ValueError):  # absent, or "max": no limit
            continue
    return max(0, min(known))


@functools.cache
def machine_memory():
    """The bytes of memory this machine has (1 TiB where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 1 << 40


def format_bytes(nbytes):
    """A size in bytes as people write it: 29.1 TiB."""
    size, units = float(nbytes), ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    while size >= 1024 and len(units) > 1:
        size, units = size / 1024, units[1:]
    return f"{size:.3g} {units[0]}"


def require_softmax_input(x, axis):
    """(x as a float array, axis as an int or None: over the whole array)."""
    x = require_float_array(x, "x")
    return x, None if axis is None else require_int(axis, "axis")


def require_log_softmax_input(x):
    """x as a float array with at least one class on its last axis."""
    x = require_float_array(x, "x")
    if x.ndim and x.shape[-1] == 0:
        raise ValueError(f"x has no classes (shape {x.shape}, last axis 0): log_softmax "
                         "needs at least one")
    return x


def require_no_nan_or_posinf(row_max, name):
    """The row maxima of a softmax's input, refusing NaN and +inf (-inf, a fully masked
    row, is allowed)."""
    if np.isnan(row_max).any() or np.isposinf(row_max).any():
        raise ValueError(f"{name} contains NaN or +inf")
    return row_max


def require_attention_shapes(q, k, v):
    """The shape (..., L_q, L_k) of the scores of q, k, v, or a ValueError naming the shapes
    that do not fit together."""
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (L, d), got shape {a.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q has d_k={q.shape[-1]} but k has d_k={k.shape[-1]}")
    if q.shape[-1] == 0:
        raise ValueError("q and k have d_k=0: attention needs at least one feature")
    if k.shape[-2] == 0:
        raise ValueError("k has no positions (L_k=0): attention needs at least one key")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k has L_k={k.shape[-2]} positions but v has {v.shape[-2]}")
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"batch dimensions of q {q.shape}, k {k.shape} and v {v.shape} do not broadcast"
        ) from None
    return batch + (q.shape[-2], k.shape[-2])


def require_scores_fit(q, k, v):
    """Refuses attention whose scores, their exp and the weights (three arrays of the scores'
    shape) would not fit in memory, naming the shapes. scaled_dot_product_attention calls it;
    minitf.fast's kernels, which work in blocks, do not."""
    scores = require_attention_shapes(q, k, v)
    require_fits(3 * q.dtype.itemsize * int(np.prod(scores, dtype=object)),
                 f"the attention scores {scores}", q=q.shape, k=k.shape, v=v.shape)


def require_attention_inputs(q, k, v, mask):
    """q, k, v as arrays of one float dtype (at least float32) and mask as a bool array,
    or a ValueError that names what does not fit. scaled_dot_product_attention and the
    kernels of minitf.fast take their arguments through it."""
    q, k, v = (require_float_array(a, name) for a, name in ((q, "q"), (k, "k"), (v, "v")))
    scores_shape = require_attention_shapes(q, k, v)
    for name, a in (("q", q), ("k", k), ("v", v)):
        if not all_finite(a):
            raise ValueError(f"{name} contains NaN or inf")
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise ValueError(
                f"mask must be boolean (True = may attend), got dtype {mask.dtype}"
            )
        try:
            if np.broadcast_shapes(mask.shape, scores_shape) != scores_shape:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"mask of shape {mask.shape} does not broadcast to the scores {scores_shape}"
            ) from None
    dtype = np.result_type(q, k, v, np.float32)
    q, k, v = (a.astype(dtype, copy=False) for a in (q, k, v))
    return q, k, v, mask


def require_attention_backward_inputs(dout, q, k, v, weights):
    """The arrays as floats, with weights of the scores' shape and dout of the output's."""
    dout, q, k, v, weights = (require_float_array(a, name) for a, name in (
        (dout, "dout"), (q, "q"), (k, "k"), (v, "v"), (weights, "weights")))
    scores_shape = require_attention_shapes(q, k, v)  # shapes only: the forward checked values
    for name, a, shape in (("weights", weights, scores_shape),
                           ("dout", dout, scores_shape[:-1] + v.shape[-1:])):
        if a.shape != shape:
            raise ValueError(f"{name} has shape {a.shape} but the forward's was {shape} "
                             f"(q {q.shape}, k {k.shape}, v {v.shape})")
    return dout, q, k, v, weights


def require_cross_entropy_args(logits, targets, ignore_index, label_smoothing):
    """(logits, targets, keep (N,) bool: the rows scored, ε), or an error naming what is
    wrong. -inf logits are allowed (a class that cannot occur), unless label smoothing gives
    them probability or a scored target has one."""
    logits = require_float_array(logits, "logits")
    targets = require_int_array(targets, "targets")
    if ignore_index is not None:
        ignore_index = require_int(ignore_index, "ignore_index")
    eps = require_real(label_smoothing, "label_smoothing", 0, 1, high_open=True)
    if logits.ndim < 1 or targets.shape != logits.shape[:-1]:
        raise ValueError(f"targets of shape {targets.shape} do not match logits of shape "
                         f"{logits.shape} (expected targets {logits.shape[:-1]})")
    V = logits.shape[-1]
    if V == 0:
        raise ValueError(f"logits have no classes (shape {logits.shape}, V=0)")
    if np.isnan(logits).any() or np.isposinf(logits).any():
        raise ValueError("logits contain NaN or +inf")
    if eps > 0 and np.isneginf(logits).any():
        raise ValueError("label smoothing gives every class probability ε/V, so a class with "
                         "logit -inf would make the loss infinite; use label_smoothing=0")
    y = targets.reshape(-1)
    keep = np.ones(y.shape, dtype=bool) if ignore_index is None else y != ignore_index
    if keep.any() and (y[keep].min() < 0 or y[keep].max() >= V):
        raise ValueError(f"targets must be ids in 0..{V - 1} (or ignore_index)")
    scored = logits.reshape(-1, V)[keep, y[keep]]
    if np.isneginf(scored).any():
        where = np.unravel_index(np.flatnonzero(keep)[np.isneginf(scored)][0], targets.shape)
        raise ValueError(f"the target at {tuple(map(int, where))} has logit -inf (probability 0; "
                         "perhaps its whole row is masked), so the loss would be infinite")
    return logits, targets, keep, eps


def require_positions(x, start, max_len):
    """start as an int >= 0, where x (..., L, d_model) at positions start..start+L-1 fits in a
    table of max_len positions."""
    start = require_int(start, "start", low=0)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., L, d_model), got shape {x.shape}")
    if start + x.shape[-2] > max_len:
        raise ValueError(f"positions {start}..{start + x.shape[-2] - 1} exceed "
                         f"max_len={max_len}")
    return start


def require_gradient_args(f, x, eps, indices):
    """The flat positions of x to nudge (numerical_gradient's arguments), or an error naming
    what cannot be nudged: x must be a writable float32 or float64 array (in float16, x ± eps
    rounds back to x and every difference would be 0)."""
    if not callable(f):
        raise TypeError(f"f must be a function of no arguments returning a number, got "
                        f"{type(f).__name__}")
    if not isinstance(x, np.ndarray):
        raise TypeError(f"x must be a numpy array (nudged in place), got {type(x).__name__}")
    if not np.issubdtype(x.dtype, np.floating):
        raise ValueError(f"x must be a float array, got dtype {x.dtype}: x ± eps would be "
                         "rounded to an integer")
    if x.dtype not in FLOAT_DTYPES:
        raise ValueError(f"x must be float32 or float64 (float64 for a gradient check), got "
                         f"dtype {x.dtype}: x ± eps would be rounded, giving wrong differences")
    if not x.flags.writeable:
        raise ValueError("x is read-only: it must be changed in place")
    require_real(eps, "eps", low=0, low_open=True)
    if indices is None:
        return range(x.size)
    indices = require_int_array(indices, "indices").reshape(-1)
    if indices.size and (indices.min() < 0 or indices.max() >= x.size):
        raise ValueError(f"indices must be flat positions in 0..{x.size - 1}, got "
                         f"{indices[(indices < 0) | (indices >= x.size)][0]}")
    return indices


def require_cache(cache, name="cache", layers=None):
    """A KV cache: a dict (one layer's), or with `layers`, a list of that many dicts (a model's,
    from `model.new_cache()`)."""
    if layers is None and not isinstance(cache, dict):
        raise TypeError(f"{name} must be a dict (one layer's keys and values; a model's cache "
                        f"comes from model.new_cache()), got {type(cache).__name__}")
    if layers is not None and not (isinstance(cache, list) and len(cache) == layers
                                   and all(isinstance(entry, dict) for entry in cache)):
        raise TypeError(f"{name} must be a list of {layers} dicts, one per decoder layer: use "
                        f"model.new_cache(); got {shorten(cache)} ({type(cache).__name__})")
    return cache


def _range(low, high):
    if low is not None and high is not None:
        return f"in {low}..{high}"
    return f">= {low}" if low is not None else f"<= {high}"


def shorten(value, limit=60):
    """repr(value), shortened with … when long: an error message never repeats a whole input."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"

"""Autoregressive generation (自回归生成): decoding starts from the begin token and runs until
the end token; each output is fed back as the next input.

    y_0 = <bos>,   y_{t+1} = choose(p(· | y_0..y_t, src)),   stop at <eos> or after max_len

Every function returns the generated ids without the begin token, shape (B, T) int64 with
T ≤ max_len: a row keeps its <eos> and is padded with <pad> = 0 after it.

With `use_cache=True` the source is encoded once and the decoder is fed one token per step,
reusing the keys and values of earlier steps (the KV cache); `use_cache=False` recomputes
the whole prefix each step. Both give the same tokens.
"""

import numpy as np

from .attention import padding_mask

PAD_ID, BOS_ID, EOS_ID = 0, 1, 2


def _check_src(src):
    src = np.asarray(src)
    if src.ndim != 2 or not np.issubdtype(src.dtype, np.integer):
        raise ValueError(f"src must be a 2-D integer array of token ids (B, L_s), got "
                         f"shape {src.shape} and dtype {src.dtype}")
    return src


def _check_int(value, name, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def _check_max_len(model, max_len):
    max_len = _check_int(max_len, "max_len", 1)
    if max_len > model.max_len:
        raise ValueError(
            f"max_len={max_len} would feed the decoder positions 0..{max_len - 1} (<bos> at 0), "
            f"but the model's positional table has {model.max_len} positions "
            f"(0..{model.max_len - 1}); use max_len <= {model.max_len}")
    return max_len


def _start(model, src, max_len, copies=1):
    """Checks the arguments and encodes src (B, L_s) once.

    Returns (memory (B*copies, L_s, d_model), memory_mask (B*copies, 1, 1, L_s)), each source
    row repeated `copies` times in a row (one per beam).
    """
    src = _check_src(src)
    _check_max_len(model, max_len)
    memory_mask = padding_mask(src, PAD_ID)  # (B, 1, 1, L_s)
    memory = model.encode(src)  # (B, L_s, d_model)
    if copies > 1:
        memory = np.repeat(memory, copies, axis=0)  # (B*copies, L_s, d_model)
        memory_mask = np.repeat(memory_mask, copies, axis=0)
    return memory, memory_mask


def _next_logits(model, prefix, memory, memory_mask, cache):
    """prefix (N, t+1) ids fed so far -> logits (N, V) for the token after them.

    With a cache only the newest token goes through the decoder, at position t. <pad> gets
    -inf: it only ever fills the positions after <eos>, and it is never generated.
    """
    if cache is None:
        logits = model.decode(prefix, memory, memory_mask)[:, -1]
    else:
        t = prefix.shape[1] - 1
        logits = model.decode(prefix[:, t:], memory, memory_mask, cache=cache, start=t)[:, 0]
    logits[:, PAD_ID] = -np.inf
    return logits


def _decode_loop(model, src, max_len, bos_id, eos_id, use_cache, choose):
    """The loop shared by greedy_decode and sample: choose(logits (B, V)) -> ids (B,)."""
    memory, memory_mask = _start(model, src, max_len)
    B = memory.shape[0]
    cache = model.new_cache() if use_cache else None
    ys = np.full((B, max_len + 1), PAD_ID, dtype=np.int64)  # <bos> + up to max_len tokens
    ys[:, 0] = bos_id
    done = np.zeros(B, dtype=bool)
    for t in range(max_len):
        tokens = choose(_next_logits(model, ys[:, :t + 1], memory, memory_mask, cache))
        ys[:, t + 1] = np.where(done, PAD_ID, tokens)
        if eos_id is not None:
            done |= ys[:, t + 1] == eos_id
            if done.all():
                break
    return ys[:, 1:t + 2]  # (B, T)


def greedy_decode(model, src, *, max_len, bos_id=BOS_ID, eos_id=EOS_ID, use_cache=True):
    """src (B, L_s) ids -> (B, T) ids, T ≤ max_len: the most probable token at each step.

    A row stops at its eos_id (kept; <pad> after it) and the loop ends when every row has;
    eos_id=None never stops early (T == max_len).
    """
    return _decode_loop(model, src, max_len, bos_id, eos_id, use_cache,
                        lambda logits: logits.argmax(axis=-1))

"""Autoregressive generation (自回归生成): decoding starts from the begin token and runs until
the end token; each output is fed back as the next input.

    y_0 = <bos>,   y_{t+1} = choose(p(· | y_0..y_t, src)),   stop at <eos> or after max_len

Every function returns the generated ids without the begin token, shape (B, T) int64 with
T ≤ max_len: a row keeps its <eos> and is padded with <pad> = 0 after it.

With `use_cache=True` the source is encoded once and the decoder is fed one token per step,
reusing the keys and values of earlier steps (the KV cache); `use_cache=False` recomputes
the whole prefix each step. Both give the same tokens.

A decoder-only model (minitf.gpt) has no source: `greedy_continue` feeds it a prompt (with
the cache, all at once) and returns what follows the prompt, by the same loop and rules.
Built in notebook 07.
"""

import functools

import numpy as np

from .attention import log_softmax, padding_mask, softmax
from .gpt import GPT
from .model import Transformer
from .module import as_rng, no_grad
from .tokens import BOS_ID, EOS_ID, PAD_ID, pad
from .validation import (
    all_finite,
    require_bool,
    require_fits,
    require_float_array,
    require_instance,
    require_int,
    require_real,
    require_sequence,
    require_token_ids,
)


def _require_max_len(model, max_len):
    max_len = require_int(max_len, "max_len", low=1)
    if max_len > model.max_len:
        raise ValueError(
            f"max_len={max_len} would feed the decoder positions 0..{max_len - 1} (<bos> at 0), "
            f"but the model's positional table has {model.max_len} positions "
            f"(0..{model.max_len - 1}); use max_len <= {model.max_len}")
    return max_len


def _start(model, src, max_len, bos_id, eos_id, use_cache, copies=1):
    """Checks the arguments and encodes src (B, L_s) once.

    Returns (memory (B*copies, L_s, d_model), memory_mask (B*copies, 1, 1, L_s)), each source
    row repeated `copies` times in a row (one per beam).
    """
    require_instance(model, Transformer, "model")
    require_bool(use_cache, "use_cache")
    src = require_token_ids(src, name="src", ndim=2)
    _require_max_len(model, max_len)
    last_id = model.config.tgt_vocab_size - 1
    require_int(bos_id, "bos_id", low=0, high=last_id)
    if eos_id is not None:
        require_int(eos_id, "eos_id", low=0, high=last_id)
    memory_mask = padding_mask(src, PAD_ID)  # (B, 1, 1, L_s)
    memory = model.encode(src)  # (B, L_s, d_model)
    if copies > 1:
        require_fits(copies * (memory.nbytes + 8 * len(src) * (max_len + 1)),
                     "the source memory and the tokens of every beam", beam_size=copies,
                     batch_size=len(src))
        memory = np.repeat(memory, copies, axis=0)  # (B*copies, L_s, d_model)
        memory_mask = np.repeat(memory_mask, copies, axis=0)
    return memory, memory_mask


def _next_logits(logits_of, prefix, cache, cached):
    """prefix (N, t) ids fed so far -> logits (N, V) for the token after them.

    logits_of(ids, cache=, start=) gives the model's next-token logits (a Transformer's
    decode with the memory, or a GPT's forward). With a cache only the ids after the `cached`
    positions go through the model: the whole prompt at the first step, then the newest id.
    <pad> gets -inf: it only ever fills the positions after <eos>, and it is never generated.
    """
    if cache is None:
        logits = logits_of(prefix)[:, -1]
    else:
        logits = logits_of(prefix[:, cached:], cache=cache, start=cached)[:, -1]
    logits[:, PAD_ID] = -np.inf
    return logits


def _decode_loop(model, src, max_len, bos_id, eos_id, use_cache, choose):
    """The loop shared by greedy_decode and sample: choose(logits (B, V)) -> ids (B,)."""
    with no_grad():  # nothing is kept for a backward
        memory, memory_mask = _start(model, src, max_len, bos_id, eos_id, use_cache)
        bos = np.full((memory.shape[0], 1), bos_id, dtype=np.int64)
        decode = functools.partial(model.decode, memory=memory, memory_mask=memory_mask)
        return _continue(decode, bos, max_len, eos_id, model.new_cache() if use_cache else None,
                         choose)


def _continue(logits_of, prompt, max_new, eos_id, cache, choose):
    """prompt (B, L) ids -> (B, T) ids that follow it, T <= max_new; choose(logits (B, V))
    picks each step's ids (B,). A row stops at eos_id (<pad> after it), the loop when every
    row has. greedy_decode, sample and greedy_continue share it."""
    B, L = prompt.shape
    ys = np.full((B, L + max_new), PAD_ID, dtype=np.int64)  # the prompt + up to max_new ids
    ys[:, :L] = prompt
    done = np.zeros(B, dtype=bool)
    for t in range(L, L + max_new):
        cached = 0 if t == L else t - 1  # with a cache: the prompt at once, then one id a step
        tokens = choose(_next_logits(logits_of, ys[:, :t], cache, cached))
        ys[:, t] = np.where(done, PAD_ID, tokens)
        if eos_id is not None:
            done |= ys[:, t] == eos_id
            if done.all():
                break
    return ys[:, L:t + 1].copy()  # (B, T)


def greedy_decode(model, src, *, max_len, bos_id=BOS_ID, eos_id=EOS_ID, use_cache=True):
    """src (B, L_s) ids -> (B, T) ids, T ≤ max_len: the most probable token at each step.

    A row stops at its eos_id (kept; <pad> after it) and the loop ends when every row has;
    eos_id=None never stops early (T == max_len).
    Notebook 07 §1.
    """
    return _decode_loop(model, src, max_len, bos_id, eos_id, use_cache,
                        lambda logits: logits.argmax(axis=-1))


def greedy_continue(model, prompt, *, max_new, eos_id=EOS_ID, use_cache=True):
    """prompt (B, L) ids -> (B, T) ids that continue it, T ≤ max_new: a decoder-only model's
    greedy generation, the most probable token at each step.

    With the cache the prompt goes through the model once, then one new token a step. Rows
    may be prompts of different lengths, each padded with <pad> after its end; prompts of
    one length are continued together, so a row gets what it would get alone. The ids come
    back without the prompt; a row stops at its eos_id (kept; <pad> after it), eos_id=None
    never stops early. The longest prompt and max_new - 1 more positions must fit in the
    model's max_len (the last new token is never fed).
    Notebook 11 §5 (the loop by hand, then this).
    """
    require_instance(model, GPT, "model")
    prompt = require_sequence(prompt, "prompt", model.max_len)
    require_token_ids(prompt, model.config.vocab_size, name="prompt")
    max_new = require_int(max_new, "max_new", low=1)
    if eos_id is not None:
        require_int(eos_id, "eos_id", low=0, high=model.config.vocab_size - 1)
    use_cache = require_bool(use_cache, "use_cache")
    lengths = _prompt_lengths(prompt)
    if lengths.max() + max_new - 1 > model.max_len:
        raise ValueError(
            f"a prompt of {lengths.max()} tokens and max_new={max_new} would feed positions "
            f"0..{lengths.max() + max_new - 2}, but the model's positional table has "
            f"{model.max_len} positions; use max_new <= {model.max_len - lengths.max() + 1}")
    rows = [None] * len(prompt)
    with no_grad():  # nothing is kept for a backward
        for length in np.unique(lengths):
            which = np.flatnonzero(lengths == length)
            new = _continue(model, prompt[which, :length], max_new, eos_id,
                            model.new_cache() if use_cache else None,
                            lambda logits: logits.argmax(axis=-1))
            for i, ids in zip(which, new):
                rows[i] = ids
    return pad(rows)


def _prompt_lengths(prompt):
    """prompt (B, L) ids -> (B,) the length of each row before its <pad> tail; a row that is
    all <pad> or has <pad> inside it is refused."""
    real = prompt != PAD_ID
    lengths = real.sum(axis=1)  # (B,)
    inside = real != (np.arange(prompt.shape[1]) < lengths[:, None])
    for problem, bad in (("is all <pad>", lengths == 0),
                         ("has <pad> inside it (pad only after the end)", inside.any(axis=1))):
        if bad.any():
            raise ValueError(f"prompt row {np.flatnonzero(bad)[0]} {problem}")
    return lengths


def top_k_mask(logits, k):
    """logits (..., V) -> bool (..., V), True at the k largest; ties go to the lower id.
    Notebook 07 §4."""
    logits, k = require_float_array(logits, "logits"), require_int(k, "k", low=1)
    order = np.argsort(-logits, axis=-1, kind="stable")  # (..., V), largest first
    keep = np.zeros(logits.shape, dtype=bool)
    np.put_along_axis(keep, order[..., :k], True, axis=-1)
    return keep


def top_p_mask(probs, p):
    """probs (..., V) -> bool (..., V): the nucleus, the smallest set of most probable tokens
    whose total probability reaches p (at least one token; ties go to the lower id).

    A token is kept when the tokens more probable than it hold less than p of the mass.
    Notebook 07 §4.
    """
    probs, p = require_float_array(probs, "probs"), require_real(p, "p", 0, 1, low_open=True)
    if not all_finite(probs) or (probs < 0).any():
        raise ValueError("probs must be probabilities: finite and >= 0 (NaN, inf or a "
                         "negative entry found)")
    if p == 1:
        return np.ones(probs.shape, dtype=bool)
    order = np.argsort(-probs, axis=-1, kind="stable")  # (..., V), most probable first
    sorted_probs = np.take_along_axis(probs, order, axis=-1)
    mass = np.cumsum(sorted_probs, axis=-1)
    before = mass - sorted_probs  # the mass of the tokens ranked above each one
    kept_in_order = before < p * mass[..., -1:]
    kept_in_order[..., 0] = True  # the most probable token always, even in a row of zeros
    keep = np.zeros(probs.shape, dtype=bool)
    np.put_along_axis(keep, order, kept_in_order, axis=-1)
    return keep


def _inverse_cdf(probs, rng):
    """probs (B, V), not necessarily normalised -> (B,) ids, one rng.random draw per row."""
    cdf = np.cumsum(probs, axis=-1)  # (B, V)
    total = cdf[:, -1]
    u = np.minimum(rng.random(len(cdf), dtype=cdf.dtype) * total, np.nextafter(total, 0))
    return (cdf <= u[:, None]).sum(axis=-1)  # the first id whose cdf exceeds u


def sample(model, src, *, max_len, temperature=1.0, top_k=None, top_p=None, rng=None,
           bos_id=BOS_ID, eos_id=EOS_ID, use_cache=True):
    """src (B, L_s) ids -> (B, T) ids drawn from softmax(logits / temperature) at each step.

    top_k keeps the k most probable tokens, then top_p keeps the nucleus of what is left
    (see top_k_mask, top_p_mask); the kept probabilities are renormalised. rng is a
    np.random.Generator or an int seed: the same seed gives the same tokens. Stopping and
    padding as in greedy_decode.
    Notebook 07 §3–4.
    """
    temperature = require_real(temperature, "temperature", low=0, low_open=True)
    if top_k is not None:
        top_k = require_int(top_k, "top_k", low=1)
    if top_p is not None:
        top_p = require_real(top_p, "top_p", 0, 1, low_open=True)
    rng = as_rng(rng)

    def choose(logits):
        shifted = logits - logits.max(axis=-1, keepdims=True)  # a tiny temperature cannot overflow
        info = np.finfo(logits.dtype)
        if float(info.tiny) <= temperature <= float(info.max):
            t = logits.dtype.type(temperature)
        else:  # 1e-300 or 1e39 on a float32 model: divide in float64
            shifted, t = shifted.astype(np.float64), temperature
        with np.errstate(over="ignore"):  # a score far below the best: -inf, probability 0
            scaled = shifted / t
        if top_k is not None:
            scaled = np.where(top_k_mask(scaled, top_k), scaled, -np.inf)
        probs = softmax(scaled)
        if top_p is not None:
            probs = np.where(top_p_mask(probs, top_p), probs, 0)
        return _inverse_cdf(probs, rng)

    return _decode_loop(model, src, max_len, bos_id, eos_id, use_cache, choose)


def _length_penalty(length, alpha):
    """GNMT's lp = ((5 + length) / 6) ** alpha; a hypothesis scores log p / lp (alpha=0: log p)."""
    return ((5.0 + length) / 6.0) ** alpha


def _reorder_cache(cache, index):
    """Every self-attention cache array, "k" and "v" (N, h, L, d_k), takes its rows from
    `index` (N,). Cross-attention entries are left alone: every beam of a source shares them.
    """
    for layer in cache:
        entry = layer["self_attn"]
        for name, value in entry.items():
            if isinstance(value, np.ndarray):
                entry[name] = value[index]


def beam_search(model, src, *, beam_size=4, max_len, length_penalty=0.6, bos_id=BOS_ID,
                eos_id=EOS_ID, use_cache=True, return_all=False):
    """src (B, L_s) ids -> (B, T) ids: the best of beam_size hypotheses per source row.

    Each step every live hypothesis is extended by every token and the most probable
    extensions (by total log-probability; they all have the same length) are kept. One that
    ends in eos_id is finished and leaves the beam, which narrows by one, so a row is done
    when beam_size hypotheses have finished; those still live at max_len count as well.
    Finished hypotheses of different lengths are then ranked by log p / lp(len), GNMT's
    lp(len) = ((5 + len) / 6) ** length_penalty (len counts the eos; 0 ranks by log p).
    beam_size=1 is greedy_decode. Stopping and padding as there.

    return_all=True also returns, per row, a list of (ids, score) best first.
    Notebook 07 §2.
    """
    K = require_int(beam_size, "beam_size", low=1)
    alpha = require_real(length_penalty, "length_penalty", low=0)
    require_bool(return_all, "return_all")
    with no_grad():  # nothing is kept for a backward
        return _beam_search(model, src, K, max_len, alpha, bos_id, eos_id, use_cache,
                            return_all)


def _beam_search(model, src, K, max_len, alpha, bos_id, eos_id, use_cache, return_all):
    memory, memory_mask = _start(model, src, max_len, bos_id, eos_id, use_cache, copies=K)
    B = memory.shape[0] // K
    decode = functools.partial(model.decode, memory=memory, memory_mask=memory_mask)
    cache = model.new_cache() if use_cache else None
    ys = np.full((B * K, max_len + 1), PAD_ID, dtype=np.int64)  # row b*K + k: beam k of source b
    ys[:, 0] = bos_id
    scores = np.full((B, K), -np.inf, dtype=memory.dtype)  # -inf: an empty slot
    scores[:, 0] = 0
    finished = [[] for _ in range(B)]  # per source: (ids, log p)
    width = np.full(B, K)  # how many hypotheses may still be extended
    for t in range(max_len):
        logp = log_softmax(_next_logits(decode, ys[:, :t + 1], cache, cached=t))
        V = logp.shape[-1]
        candidates = (scores[:, :, None] + logp.reshape(B, K, V)).reshape(B, K * V)
        best = np.argsort(-candidates, axis=-1, kind="stable")[:, :K]  # (B, K)
        best_scores = np.take_along_axis(candidates, best, axis=-1)
        beam, token = np.divmod(best, V)  # (B, K) each
        kept = (np.arange(K) < width[:, None]) & np.isfinite(best_scores)
        ends = kept & (token == eos_id) if eos_id is not None else np.zeros_like(kept)
        index = (np.arange(B)[:, None] * K + beam).reshape(-1)  # (B*K,) rows to carry on
        ys = ys[index]
        ys[:, t + 1] = token.reshape(-1)
        for b, k in zip(*np.nonzero(ends)):
            finished[b].append((ys[b * K + k, 1:t + 2].copy(), best_scores[b, k]))
        live = kept & ~ends
        scores = np.where(live, best_scores, -np.inf)
        width -= ends.sum(axis=-1)
        if cache is not None:
            _reorder_cache(cache, index)
        if not live.any():
            break
    for b, k in zip(*np.nonzero(np.isfinite(scores))):  # still live at max_len
        finished[b].append((ys[b * K + k, 1:].copy(), scores[b, k]))
    ranked = [sorted(((ids, float(logp) / _length_penalty(len(ids), alpha))
                      for ids, logp in row), key=lambda hyp: -hyp[1])
              for row in finished]
    out = pad([row[0][0] for row in ranked])
    return (out, ranked) if return_all else out


def translate_ids(model, src, beam_size=1):
    """src (B, L_s) ids -> (B, T) target ids, without <bos>: greedy decoding, or beam search
    when beam_size > 1, up to the model's max_len. Notebook 08 §6."""
    require_instance(model, Transformer, "model")
    if require_int(beam_size, "beam_size", low=1) == 1:
        return greedy_decode(model, src, max_len=model.max_len)
    return beam_search(model, src, beam_size=beam_size, max_len=model.max_len)

"""Exercises of notebook 07, generation: one greedy step, the temperature softmax, the top-k
and top-p filters, beam search over a step function, and one attention step with a KV
cache (cases, references, known mistakes)."""

import numpy as np

from ..attention import (
    causal_mask,
    log_softmax,
    padding_mask,
    scaled_dot_product_attention,
    softmax,
)
from ..generate import greedy_decode, top_k_mask, top_p_mask
from ..model import Transformer
from ..tokens import BOS_ID, EOS_ID, PAD_ID
from .core import (
    Case,
    Exercise,
    Mistake,
    Raised,
    call_quietly,
    describe_difference,
    got_expected,
    kind_of,
)

__all__ = ["check_beam_search", "check_greedy_step", "check_kv_cache", "check_temperature",
           "check_top_k", "check_top_p"]


# ------------------------------------------------------------------ greedy step

def _greedy_cases():
    """(model, src, prefix) with prefix = <bos> + greedy_decode's own first t tokens, so the
    expected answer is token t of greedy_decode."""
    model = Transformer(12, 12, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8,
                        rng=1)
    src = np.array([[5, 6, 7, 8, 2], [9, 2, 0, 0, 0], [4, 10, 2, 0, 0]])  # padded batch
    cases = []
    for t in (0, 2, 4):
        generated = greedy_decode(model, src, max_len=t, eos_id=None) if t else \
            np.zeros((len(src), 0), dtype=np.int64)
        prefix = np.concatenate([np.full((len(src), 1), BOS_ID), generated], axis=1)
        cases.append(Case((model, src, prefix), f"a padded batch of 3 sources, {t} tokens "
                                                f"generated after <bos>"))
    return cases


def _next_logits(model, src, prefix, *, position=-1, use_memory_mask=True, mask_pad=True):
    """The logits for the next token, with the knobs that the usual mistakes turn."""
    memory = model.encode(src)
    memory_mask = padding_mask(src, PAD_ID) if use_memory_mask else None
    logits = model.decode(prefix, memory, memory_mask)[:, position]  # (B, V)
    if mask_pad:
        logits[:, PAD_ID] = -np.inf
    return logits


GREEDY_STEP = Exercise(
    name="greedy_step", checker="check_greedy_step", args=("model", "src", "prefix"),
    task="the (B,) ids of the most probable next tokens after prefix (never <pad>), the "
         "token greedy_decode picks at that step",
    cases=_greedy_cases,
    reference=lambda model, src, prefix: greedy_decode(
        model, src, max_len=prefix.shape[1], eos_id=None)[:, -1],
    mistakes=(
        Mistake("that is the prediction made at position 0 (after <bos>); the next token "
                "comes from the last position: logits[:, -1]",
                lambda m, s, p: _next_logits(m, s, p, position=0).argmax(axis=-1)),
        Mistake("<pad> (id 0) was chosen; it is never generated: set logits[:, 0] = -np.inf "
                "before the argmax, as greedy_decode does",
                lambda m, s, p: _next_logits(m, s, p, mask_pad=False).argmax(axis=-1)),
        Mistake("the padded source rows read their <pad> positions: pass padding_mask(src) "
                "as the memory mask to model.decode",
                lambda m, s, p: _next_logits(m, s, p, use_memory_mask=False).argmax(axis=-1)),
        Mistake("return one id per row, shape (B,), not (B, 1)",
                lambda m, s, p: _next_logits(m, s, p).argmax(axis=-1)[:, None]),
        Mistake("those are the largest logits; return their ids (argmax), not their values",
                lambda m, s, p: _next_logits(m, s, p).max(axis=-1)),
    ))


# ------------------------------------------------------------------ temperature

def _temperature_softmax(logits, temperature):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return softmax(shifted / temperature)


def _temperature_cases():
    rng = np.random.default_rng(70)
    return [
        Case((np.array([2.0, 1.0, 0.5, -1.0]), 0.5), "T = 0.5 sharpens"),
        Case((rng.normal(size=(3, 6)) * 2, 2.0), "3 rows, T = 2 flattens"),
        Case((rng.normal(size=(2, 5)), 1.0), "2 rows, T = 1"),
        Case((np.array([1000.0, 998.0, 990.0]), 0.1), "logits near 1000, T = 0.1"),
    ]


TEMPERATURE = Exercise(
    name="temperature", checker="check_temperature", args=("logits", "T"),
    task="softmax(logits / T) along the last axis, each row summing to 1, without overflow",
    cases=_temperature_cases, reference=_temperature_softmax,
    mistakes=(
        Mistake("the logits were multiplied by T; divide them: softmax(logits / T)",
                lambda z, t: _temperature_softmax(z * t, 1.0)),
        Mistake("the probabilities were divided by T after the softmax (they no longer sum "
                "to 1); divide the logits before it",
                lambda z, t: _temperature_softmax(z, 1.0) / t),
        Mistake("p^(1/T) is right up to a constant, but it must be renormalised to sum to 1",
                lambda z, t: _temperature_softmax(z, 1.0) ** (1 / t)),
        Mistake("the temperature was ignored", lambda z, t: _temperature_softmax(z, 1.0)),
        Mistake("the softmax ran over axis 0; it runs over the vocabulary, the last axis "
                "(axis=-1)", lambda z, t: softmax(z / t, axis=0)),
        Mistake("exp of a large logit / T overflows: subtract each row's largest value "
                "before np.exp (the softmax does not change)",
                lambda z, t: np.exp(z / t) / np.exp(z / t).sum(axis=-1, keepdims=True)),
    ))


# ------------------------------------------------------------------------ top-k

def _first_k(scores, k, axis=-1):
    """True at the k largest along `axis` (k may be 0)."""
    order = np.argsort(-scores, axis=axis, kind="stable")
    keep = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(keep, np.take(order, np.arange(k), axis=axis), True, axis=axis)
    return keep


def _top_k_cases():
    rng = np.random.default_rng(71)
    return [
        Case((np.array([1.5, -0.3, 2.7, 0.1, 2.2, -1.0, 0.8, 0.4]), 3), "one row, k = 3"),
        Case((rng.normal(size=(3, 10)), 4), "3 rows, k = 4"),
        Case((rng.normal(size=(2, 6)), 1), "2 rows, k = 1"),
        Case((rng.normal(size=(5,)), 5), "k = V = 5: keep everything"),
    ]


TOP_K = Exercise(
    name="top_k", checker="check_top_k", args=("logits", "k"),
    task="a bool mask of logits' shape, True at the k largest logits of each row",
    cases=_top_k_cases, reference=top_k_mask,
    mistakes=(
        Mistake("that keeps the k smallest logits; sort in descending order "
                "(np.argsort(-logits))", lambda z, k: _first_k(-z, k)),
        Mistake("that keeps k + 1 tokens; keep exactly k",
                lambda z, k: _first_k(z, min(k + 1, z.shape[-1]))),
        Mistake("that keeps k − 1 tokens; keep exactly k", lambda z, k: _first_k(z, k - 1)),
        Mistake("the k largest of each column were kept; rank along the vocabulary, the last "
                "axis (axis=-1)", lambda z, k: _first_k(z, k, axis=0)),
        Mistake("those are the indices of the kept tokens; return a boolean mask of the "
                "logits' shape, True at the k largest",
                lambda z, k: np.argsort(-z, axis=-1, kind="stable")[..., :k]),
        Mistake("return a boolean mask (True = keep); the filtering itself is "
                "np.where(mask, logits, -np.inf)",
                lambda z, k: np.where(top_k_mask(z, k), z, -np.inf)),
    ))


# ------------------------------------------------------------------------ top-p

def _cumulative_keep(probs, p, *, descending=True, strict_before=True):
    """Variants of the nucleus rule: rank, add up, keep while the running total is small."""
    order = np.argsort(-probs if descending else probs, axis=-1, kind="stable")
    ranked = np.take_along_axis(probs, order, axis=-1)
    mass = np.cumsum(ranked, axis=-1)
    keep_ranked = mass - ranked < p if strict_before else mass < p
    keep = np.zeros(probs.shape, dtype=bool)
    np.put_along_axis(keep, order, keep_ranked, axis=-1)
    return keep


def _top_p_cases():
    rng = np.random.default_rng(72)
    return [
        Case((np.array([0.05, 0.4, 0.1, 0.3, 0.15]), 0.75), "0.4 + 0.3 < 0.75: 0.15 joins"),
        Case((softmax(rng.normal(size=(3, 8)) * 1.5), 0.9), "3 rows, p = 0.9"),
        Case((np.array([0.7, 0.1, 0.08, 0.06, 0.06]), 0.5), "the top token alone passes p"),
        Case((softmax(rng.normal(size=(2, 6))), 0.6), "2 rows, p = 0.6"),
    ]


TOP_P = Exercise(
    name="top_p", checker="check_top_p", args=("probs", "p"),
    task="a bool mask of probs' shape: the most probable tokens whose total first reaches p",
    cases=_top_p_cases, reference=top_p_mask,
    mistakes=(
        Mistake("the token that carries the running total past p was dropped (keeping while "
                "cumsum < p); keep a token when the mass *before* it is below p, so the kept "
                "mass reaches p", lambda q, p: _cumulative_keep(q, p, strict_before=False)),
        Mistake("the running total was taken in vocabulary order; sort by probability first, "
                "most probable first", lambda q, p: np.cumsum(q, axis=-1) - q < p),
        Mistake("that ranks the least probable first; sort in descending order",
                lambda q, p: _cumulative_keep(q, p, descending=False)),
        Mistake("tokens whose own probability is ≥ p were kept; p is a bound on the total "
                "mass of the kept tokens", lambda q, p: q >= p),
        Mistake("return a boolean mask (True = keep); the filtering itself is "
                "np.where(mask, probs, 0)", lambda q, p: np.where(top_p_mask(q, p), q, 0.0)),
    ))


# ------------------------------------------------------------------ beam search

class StepFunction:
    """step(prefix) -> (V,) log-probabilities of the token after `prefix`, a 1-D sequence of
    ids that starts with <bos>. A made-up model for check_beam_search (notebook 07, §2):
    every prefix gets its own fixed distribution (the same prefix, the same answer), and
    <pad> and <bos> have probability 0 (log-probability -inf).

    first: the distribution after <bos> alone (probabilities, <pad> and <bos> first, 0);
    eos_growth: how much more likely <eos> becomes with each token; twins: a pair of ids
    (a, b) that lead to the same continuations (tied hypotheses).
    """

    def __init__(self, vocab_size, seed, *, first=None, eos_growth=0.0, twins=None):
        self.vocab_size, self.seed, self.first = vocab_size, seed, first
        self.eos_growth, self.twins = eos_growth, twins

    def __call__(self, prefix):
        ids = np.asarray(prefix)
        if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"step takes one prefix, a 1-D sequence of ids, got "
                             f"{type(prefix).__name__} of shape {ids.shape} ({ids.dtype})")
        if ids[0] != BOS_ID:
            raise ValueError(f"a prefix starts with <bos> (id {BOS_ID}), got {ids.tolist()}")
        if ids.min() < 0 or ids.max() >= self.vocab_size:
            raise ValueError(f"ids must be in 0..{self.vocab_size - 1}, got {ids.tolist()}")
        if len(ids) == 1 and self.first is not None:
            with np.errstate(divide="ignore"):
                return np.log(np.asarray(self.first, dtype=np.float64))
        key = ids.tolist()
        if self.twins is not None:
            key = [self.twins[0] if i == self.twins[1] else i for i in key]
        logits = 1.5 * np.random.default_rng([self.seed, *key]).standard_normal(
            self.vocab_size)
        logits[EOS_ID] += self.eos_growth * (len(ids) - 1)
        logits[[PAD_ID, BOS_ID]] = -np.inf
        return log_softmax(logits)

    def __repr__(self):
        return f"StepFunction(vocab_size={self.vocab_size}, seed={self.seed})"


def _beam(step, beam_size, max_len, length_penalty, *, narrow=True, finish=True,
          by_total=True, penalty=True, bos_in_length=False, keep_bos=False, best_first=True,
          eos_in_length=True, keep_live=True, stop_at_first=False):
    """A plain beam search: the exercise's reference with the default flags (minitf's
    beam_search for one source; tests/check/test_check_generation.py holds the two equal),
    and with other flags the usual wrong versions."""
    beam, finished = [([BOS_ID], 0.0)], []
    for _ in range(max_len):
        candidates = []
        for tokens, logp in beam:
            step_logp = step(np.array(tokens))
            for token, token_logp in enumerate(step_logp):
                if np.isfinite(token_logp):
                    rank = logp + token_logp if by_total else token_logp
                    candidates.append((rank, tokens + [token], logp + token_logp))
        candidates.sort(key=lambda c: -c[0])
        width = beam_size - len(finished) if narrow else beam_size
        beam = []
        for _, tokens, logp in candidates[:width]:
            if finish and tokens[-1] == EOS_ID:
                finished.append((tokens, logp))
            else:
                beam.append((tokens, logp))
        if not beam or (stop_at_first and finished):
            break
    ranked = []
    for tokens, logp in finished + (beam if keep_live else []):
        n = len(tokens) if bos_in_length else len(tokens) - 1
        if not eos_in_length and tokens[-1] == EOS_ID:
            n -= 1
        score = logp / ((5 + n) / 6) ** length_penalty if penalty else logp
        ranked.append((tokens if keep_bos else tokens[1:], score))
    return sorted(ranked, key=lambda h: -h[1] if best_first else h[1])


def _as_hypotheses(got):
    """The learner's n-best list as [(token list, float score)], or a sentence why not."""
    if got is None:
        return None, "returned None — did you forget `return`?"
    if not isinstance(got, (list, tuple)):
        return None, f"returned {kind_of(got)}; return a list of (tokens, score) pairs"
    hypotheses = []
    for i, item in enumerate(got):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            return None, f"item {i} is {kind_of(item)}; each item is a pair (tokens, score)"
        try:
            tokens, score = np.asarray(item[0]), np.asarray(item[1])
        except (TypeError, ValueError):
            return None, f"item {i} is {kind_of(item)}; each item is a pair (tokens, score)"
        if tokens.ndim != 1 or (tokens.size and tokens.dtype.kind not in "iu"):
            return None, (f"item {i}: the tokens are {kind_of(item[0])}, expected a "
                          "1-D list of ids")
        if score.shape not in ((), (1,)) or score.dtype.kind not in "iuf":
            return None, f"item {i}: the score is {kind_of(item[1])}, expected a number"
        hypotheses.append((tokens.tolist(), float(score.reshape(-1)[0])))
    return hypotheses, None


def _compare_n_best(got, expected, rtol=1e-5, atol=1e-6):
    """None when the two n-best lists agree: the same hypotheses in the same order, where
    hypotheses of equal score may come in either order."""
    got, problem = _as_hypotheses(got)
    if problem:
        return problem
    expected, _ = _as_hypotheses(expected)

    def close(a, b):
        return np.isclose(a, b, rtol=rtol, atol=atol) or (a == b)

    def show(h):
        return f"{h[0]} (score {h[1]:.4g})"

    i = 0
    while i < len(expected):
        j = i + 1  # expected[i:j]: hypotheses tied in score
        while j < len(expected) and close(expected[j][1], expected[i][1]):
            j += 1
        if len(got) < j:
            missing = [h for h in expected[i:j] if h[0] not in [g[0] for g in got[i:]]]
            return (f"returned {len(got)} hypotheses, expected {len(expected)}; missing "
                    f"{show((missing or expected[len(got):])[0])}")
        for g in got[i:j]:
            match = [e for e in expected[i:j] if e[0] == g[0]]
            if not match:
                return (f"hypothesis {got.index(g) + 1} (best first) is {show(g)}; expected "
                        f"{' or '.join(show(e) for e in expected[i:j])}")
            if not close(g[1], match[0][1]):
                scores = got_expected(g[1], match[0][1]).replace("got", "score", 1)
                return f"hypothesis {got.index(g) + 1}, tokens {g[0]}: {scores}"
        if sorted(g[0] for g in got[i:j]) != sorted(e[0] for e in expected[i:j]):
            twice = next(g for g in got[i:j] if [h[0] for h in got[i:j]].count(g[0]) > 1)
            return f"{show(twice)} appears twice"
        i = j
    if len(got) > len(expected):
        return (f"returned {len(got)} hypotheses, expected {len(expected)}: "
                f"{show(got[len(expected)])} is one too many")
    return None


def _beam_cases():
    V = 8  # <pad> <bos> <eos> and five "words", ids 3..7
    return [
        Case((StepFunction(V, 1, eos_growth=0.8), 3, 5, 0.6),
             "8 tokens, <eos> likelier with each step"),
        Case((StepFunction(V, 2, first=[0, 0, 0.5, 0.2, 0.15, 0.1, 0.05, 0], eos_growth=0.4),
              3, 4, 0.6), "<eos> is the most probable first token"),
        Case((StepFunction(V, 3, first=[0, 0, 0.05, 0.4, 0.4, 0.1, 0.05, 0], twins=(3, 4),
                           eos_growth=0.7), 2, 4, 1.0),
             "tokens 3 and 4 tie, and so do all their continuations"),
        Case((StepFunction(V, 1, eos_growth=-2.0), 2, 3, 0.0),
             "<eos> unlikely: the beam is still full at max_len"),
        Case((StepFunction(V, 5, eos_growth=0.5), 1, 6, 0.6), "beam_size 1 is greedy"),
    ]


BEAM_SEARCH = Exercise(
    name="beam_search", checker="check_beam_search",
    args=("step", "beam_size", "max_len", "length_penalty"),
    task="the n-best list of minitf's beam_search: (tokens without <bos>, "
         "log p / ((5 + len) / 6) ** length_penalty) pairs, best first",
    cases=_beam_cases, reference=_beam, compare=_compare_n_best,
    mistakes=(
        Mistake("rank by log p / lp(len), lp(len) = ((5 + len) / 6) ** length_penalty: the "
                "scores are plain log p", lambda *a: _beam(*a, penalty=False)),
        Mistake("len in the length penalty counts the generated tokens and the <eos>, "
                "not the <bos>", lambda *a: _beam(*a, bos_in_length=True)),
        Mistake("return the tokens without the <bos>, as beam_search does",
                lambda *a: _beam(*a, keep_bos=True)),
        Mistake("a finished hypothesis leaves the beam, which narrows by one: keep only "
                "beam_size − (number finished) extensions per step",
                lambda *a: _beam(*a, narrow=False)),
        Mistake("a hypothesis that ends in <eos> is finished: take it out of the beam "
                "instead of extending it", lambda *a: _beam(*a, finish=False)),
        Mistake("rank the extensions by their total log p (the hypothesis's log p plus the "
                "token's), not by the new token's log p alone",
                lambda *a: _beam(*a, by_total=False)),
        Mistake("best first: sort by score from the highest (nearest 0) down",
                lambda *a: _beam(*a, best_first=False)),
        Mistake("len in the length penalty counts the <eos> too: the tokens without <bos>, "
                "<eos> included", lambda *a: _beam(*a, eos_in_length=False)),
        Mistake("the hypotheses still in the beam after max_len steps count as finished: "
                "rank them with the others", lambda *a: _beam(*a, keep_live=False)),
        Mistake("the search stopped at the first finished hypothesis; it goes on, with a beam "
                "one narrower, until the beam is empty or max_len steps are done",
                lambda *a: _beam(*a, stop_at_first=True)),
    ))


# ------------------------------------------------------------------ KV cache

def _run_cached_steps(fn, X, W_q, W_k, W_v):
    """Feed X (..., T, d_model) to fn one position at a time, starting from an empty cache
    and passing back the cache fn returns. -> one record per step: (z_t, k, v) copies, or
    what went wrong (a Raised, or a sentence), after which the loop stops."""
    lead, d_k, d_v = X.shape[:-2], W_k.shape[1], W_v.shape[1]
    cache = {"k": np.zeros(lead + (0, d_k)), "v": np.zeros(lead + (0, d_v))}
    records = []
    for t in range(X.shape[-2]):
        out = call_quietly(fn, X[..., t, :].copy(), cache, W_q.copy(), W_k.copy(), W_v.copy())
        if isinstance(out, Raised):
            records.append(out)
            break
        if not isinstance(out, tuple) or len(out) != 2:
            records.append(f"returned {kind_of(out)}; return the pair (z_t, cache)")
            break
        z, cache = out
        if not isinstance(cache, dict) or not {"k", "v"} <= set(cache):
            records.append(f"the cache returned is {kind_of(cache)}, expected a dict "
                           "with 'k' and 'v'")
            break
        try:
            records.append(tuple(np.array(a, copy=True) for a in (z, cache["k"], cache["v"])))
        except Exception as error:  # noqa: BLE001 - e.g. arrays of strings, reported
            records.append(f"returned something that is not arrays ({error})")
            break
    return records


def _recomputed_steps(X, W_q, W_k, W_v):
    """What each step must give: the last row of causal attention over the whole prefix,
    and the keys and values of every position so far."""
    Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (..., T, d)
    Z, _ = scaled_dot_product_attention(Q, K, V, causal_mask(X.shape[-2]))  # (..., T, d_v)
    return [(Z[..., t, :], K[..., :t + 1, :], V[..., :t + 1, :]) for t in range(X.shape[-2])]


def _compare_steps(got, expected, rtol=1e-5, atol=1e-6):
    for t, (g, e) in enumerate(zip(got, expected)):
        where = f"step {t + 1} ({t} position{'s' if t != 1 else ''} cached before it)"
        if isinstance(g, (Raised, str)) or isinstance(e, (Raised, str)):
            if g == e:  # the same exception, or the same malformed answer
                continue
            return f"{where}: {g}" if isinstance(g, (Raised, str)) else f"{where}: differs"
        labels = ("z_t", "cache['k']", "cache['v']")
        for label, a, b in zip(labels[1:], g[1:], e[1:]):
            if np.shape(a) != np.shape(b):
                return (f"{where}: {label} has shape {np.shape(a)}, expected {np.shape(b)} "
                        "(one more position per step)")
        for label, a, b in zip(labels, g, e):
            problem = describe_difference(a, b, rtol, atol)
            if problem:
                return f"{where}: {label}: {problem}"
    return None


def _kv_mistake(*, append=True, axis=-2, scale="d_k", include_new=True, weights=None):
    def step(x_t, cache, W_q, W_k, W_v):
        q, k, v = x_t @ W_q, x_t @ W_k, x_t @ W_v  # (..., d)
        if not include_new:
            K, V = cache["k"], cache["v"]
        elif append:
            K = np.concatenate([cache["k"], k[..., None, :]], axis=axis)  # (..., t+1, d_k)
            V = np.concatenate([cache["v"], v[..., None, :]], axis=axis)
        else:
            K, V = k[..., None, :], v[..., None, :]
        d = {"d_k": W_k.shape[1], "d_model": W_k.shape[0], None: 1}[scale]
        scores = (K @ q[..., None])[..., 0] / np.sqrt(d)  # (..., t+1)
        if weights is None:  # a softmax of one's own: raises on the empty cache of step 1
            shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
            alpha = shifted / shifted.sum(axis=-1, keepdims=True)
        else:  # minitf's softmax, as the notebook's solution: z_1 = 0 over no positions
            alpha = weights(scores)
        z = (alpha[..., None, :] @ V)[..., 0, :]  # (..., d_v)
        if not include_new:
            K = np.concatenate([cache["k"], k[..., None, :]], axis=-2)
            V = np.concatenate([cache["v"], v[..., None, :]], axis=-2)
        return z, {"k": K, "v": V}
    return step


def _kv_cases():
    rng = np.random.default_rng(73)
    return [
        Case((rng.normal(size=(4, 6)), rng.normal(size=(6, 4)), rng.normal(size=(6, 4)),
              rng.normal(size=(6, 3))), "one sequence of 4 positions, d_k = 4, d_v = 3"),
        Case((rng.normal(size=(2, 5, 8)), rng.normal(size=(8, 2)), rng.normal(size=(8, 2)),
              rng.normal(size=(8, 5))), "a batch of 2 sequences of 5 positions, d_k = 2"),
    ]


_SCORES_BEFORE_APPEND = ("the new position attends to itself too: append k_t and v_t to the "
                         "cache before computing the scores")

KV_CACHE = Exercise(
    name="kv_cache", checker="check_kv_cache", args=("X", "W_q", "W_k", "W_v"),
    signature=("x_t", "cache", "W_q", "W_k", "W_v"),
    task="(z_t, cache): z_t the new position's attention output over every position so "
         "far, and the cache with k_t and v_t appended (X is fed one position at a time)",
    cases=_kv_cases, reference=_kv_mistake(), run=_run_cached_steps,
    expected=_recomputed_steps, compare=_compare_steps,
    mistakes=(
        Mistake("the cache was replaced by the new key and value: append them "
                "(np.concatenate along the position axis) so it grows by one per step",
                _kv_mistake(append=False)),
        Mistake("append along the position axis, -2: with a batch, axis 0 is the batch",
                _kv_mistake(axis=0)),
        Mistake("divide the scores by √d_k", _kv_mistake(scale=None)),
        Mistake("divide by √d_k, the size of a key (W_k.shape[1]), not by √d_model",
                _kv_mistake(scale="d_model")),
        Mistake(_SCORES_BEFORE_APPEND, _kv_mistake(include_new=False, weights=softmax)),
        Mistake(_SCORES_BEFORE_APPEND, _kv_mistake(include_new=False)),
    ))


def check_greedy_step(fn):
    """fn(model, src, prefix) -> (B,) ids: the most probable next token after `prefix`
    (B, t+1), which starts with <bos>; <pad> is never chosen. Compared with the token that
    minitf.generate.greedy_decode picks at that step. An exercise of notebook 07."""
    return GREEDY_STEP.check(fn)


def check_temperature(fn):
    """fn(logits, T) -> softmax(logits / T) along the last axis, as minitf.generate.sample
    uses it. An exercise of notebook 07."""
    return TEMPERATURE.check(fn)


def check_top_k(fn):
    """fn(logits, k) -> bool mask of logits' shape, True at the k largest logits of each
    row (compared with minitf.generate.top_k_mask). An exercise of notebook 07."""
    return TOP_K.check(fn)


def check_top_p(fn):
    """fn(probs, p) -> bool mask of probs' shape: the nucleus, the most probable tokens
    whose total probability first reaches p (compared with minitf.generate.top_p_mask).
    An exercise of notebook 07."""
    return TOP_P.check(fn)


def check_beam_search(fn):
    """fn(step, beam_size, max_len, length_penalty) -> the n-best list, best first: a list
    of (tokens, score) pairs, as minitf.generate.beam_search(..., return_all=True) gives for
    one source. An exercise of notebook 07 (§2).

    step(prefix) -> (V,) log-probabilities of the next token, for `prefix` a 1-D sequence
    of ids starting with <bos> (tasks.BOS_ID); <pad> has log-probability -inf. Start from
    the one hypothesis [<bos>] with log p = 0. Each step, extend every hypothesis in the
    beam by every token, and keep the beam_size − (number finished) extensions with the
    best total log p (ties: the earlier hypothesis, then the lower id, as a stable sort
    gives). A kept extension that ends in <eos> (tasks.EOS_ID) is finished and leaves the
    beam. Stop when the beam is empty or after max_len steps; hypotheses still in the beam
    then count as finished. Return every finished hypothesis as (tokens without <bos>,
    log p / ((5 + len) / 6) ** length_penalty), len = the number of tokens (with <eos>),
    sorted by that score, best first.
    """
    return BEAM_SEARCH.check(fn)


def check_kv_cache(fn):
    """fn(x_t, cache, W_q, W_k, W_v) -> (z_t, cache): one step of single-head causal
    self-attention with a KV cache. An exercise of notebook 07 (§5).

    x_t (..., d_model) is the newest position (a leading batch axis is allowed); cache is a
    dict with "k" (..., t, d_k) and "v" (..., t, d_v), the keys and values of the t earlier
    positions (t = 0 at the start: arrays with no positions). Compute q_t, k_t, v_t = x_t
    W_q, x_t W_k, x_t W_v, append k_t and v_t to the cache along the position axis, and
    return z_t (..., d_v) = softmax(q_t Kᵀ / √d_k) V over all t + 1 positions, with the
    grown cache. The checker feeds a sequence one position at a time, passing back the
    cache you return, and compares every z_t with attention recomputed over the whole
    prefix, and the cache with the keys and values of every position so far.
    """
    return KV_CACHE.check(fn)


EXERCISES = [GREEDY_STEP, TEMPERATURE, TOP_K, TOP_P, BEAM_SEARCH, KV_CACHE]

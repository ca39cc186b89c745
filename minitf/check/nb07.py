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
    kind_of,
    shown_pair,
)
from .messages import say

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
        cases.append(Case((model, src, prefix), {
            "en": f"a padded batch of 3 sources, {t} tokens generated after <bos>",
            "zh": f"含 3 个源序列、带填充的批次，<bos> 之后已生成 {t} 个词元"}))
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
    task={"en": "the (B,) ids of the most probable next tokens after prefix (never <pad>), "
                "the token greedy_decode picks at that step",
          "zh": "形状为 (B,) 的编号：prefix 之后最可能的下一个词元（绝不是 <pad>），也就是 "
                "greedy_decode 在这一步选出的词元"},
    cases=_greedy_cases,
    reference=lambda model, src, prefix: greedy_decode(
        model, src, max_len=prefix.shape[1], eos_id=None)[:, -1],
    mistakes=(
        Mistake({"en": "that is the prediction made at position 0 (after <bos>); the next "
                       "token comes from the last position: logits[:, -1]",
                 "zh": "这是在位置 0（<bos> 之后）做出的预测；下一个词元来自最后一个位置："
                       "logits[:, -1]"},
                lambda m, s, p: _next_logits(m, s, p, position=0).argmax(axis=-1)),
        Mistake({"en": "<pad> (id 0) was chosen; it is never generated: set "
                       "logits[:, 0] = -np.inf before the argmax, as greedy_decode does",
                 "zh": "选中了 <pad>（编号 0），而它永远不会被生成：在 argmax 之前设 "
                       "logits[:, 0] = -np.inf，greedy_decode 就是这么做的"},
                lambda m, s, p: _next_logits(m, s, p, mask_pad=False).argmax(axis=-1)),
        Mistake({"en": "the padded source rows read their <pad> positions: pass "
                       "padding_mask(src) as the memory mask to model.decode",
                 "zh": "有填充的源序列读到了自己的 <pad> 位置：把 padding_mask(src) 作为记忆"
                       "掩码传给 model.decode"},
                lambda m, s, p: _next_logits(m, s, p, use_memory_mask=False).argmax(axis=-1)),
        Mistake({"en": "return one id per row, shape (B,), not (B, 1)",
                 "zh": "每行返回一个编号，形状是 (B,)，不是 (B, 1)"},
                lambda m, s, p: _next_logits(m, s, p).argmax(axis=-1)[:, None]),
        Mistake({"en": "those are the largest logits; return their ids (argmax), not their "
                       "values",
                 "zh": "这些是最大的 logits；要返回它们的编号（argmax），而不是它们的值"},
                lambda m, s, p: _next_logits(m, s, p).max(axis=-1)),
        Mistake({"en": "the argmax ran down the batch (axis 0); take it along the vocabulary, "
                       "axis=-1: one id per row",
                 "zh": "argmax 沿批次（axis 0）计算了；要沿词表（axis=-1）取：每行一个编号"},
                lambda m, s, p: _next_logits(m, s, p).argmax(axis=0)),
        Mistake({"en": "the softmax ran over axis 0, across the batch; no softmax is needed: the "
                       "argmax of the logits along axis=-1 is already the most probable token",
                 "zh": "softmax 沿 axis 0（跨批次）计算了；其实不需要 softmax：logits 沿 axis=-1 "
                       "的 argmax 就是最可能的词元"},
                lambda m, s, p: softmax(_next_logits(m, s, p), axis=0).argmax(axis=-1)),
    ))


# ------------------------------------------------------------------ temperature

def _temperature_softmax(logits, temperature, keepdims=True, whole=False):
    shifted = (logits - logits.max(axis=-1, keepdims=keepdims)) / temperature
    if whole:
        return np.exp(shifted) / np.exp(shifted).sum()
    return softmax(shifted)


def _temperature_cases():
    rng = np.random.default_rng(70)
    return [
        Case((np.array([2.0, 1.0, 0.5, -1.0]), 0.5), {"en": "T = 0.5 sharpens",
                                                      "zh": "T = 0.5 让分布更尖锐"}),
        Case((rng.normal(size=(3, 6)) * 2, 2.0), {"en": "3 rows, T = 2 flattens",
                                                  "zh": "3 行，T = 2 让分布更平"}),
        Case((rng.normal(size=(2, 5)), 1.0), {"en": "2 rows, T = 1", "zh": "2 行，T = 1"}),
        Case((np.array([1000.0, 998.0, 990.0]), 0.1), {"en": "logits near 1000, T = 0.1",
                                                       "zh": "logits 接近 1000，T = 0.1"}),
    ]


TEMPERATURE = Exercise(
    name="temperature", checker="check_temperature", args=("logits", "T"),
    task={"en": "softmax(logits / T) along the last axis, each row summing to 1, without "
                "overflow",
          "zh": "沿最后一个轴的 softmax(logits / T)，每一行之和为 1，而且不溢出"},
    cases=_temperature_cases, reference=_temperature_softmax,
    mistakes=(
        Mistake({"en": "the logits were multiplied by T; divide them: softmax(logits / T)",
                 "zh": "logits 乘以了 T；应当除以 T：softmax(logits / T)"},
                lambda z, t: _temperature_softmax(z * t, 1.0)),
        Mistake({"en": "the probabilities were divided by T after the softmax (they no longer "
                       "sum to 1); divide the logits before it",
                 "zh": "在 softmax 之后把概率除以了 T（它们的和不再是 1）；应当在 softmax 之前"
                       "把 logits 除以 T"},
                lambda z, t: _temperature_softmax(z, 1.0) / t),
        Mistake({"en": "p^(1/T) is right up to a constant, but it must be renormalised to sum "
                       "to 1",
                 "zh": "p^(1/T) 只差一个常数因子，但必须重新归一化，让和为 1"},
                lambda z, t: _temperature_softmax(z, 1.0) ** (1 / t)),
        Mistake({"en": "the temperature was ignored", "zh": "温度被忽略了"},
                lambda z, t: _temperature_softmax(z, 1.0)),
        Mistake({"en": "the softmax ran over axis 0; it runs over the vocabulary, the last "
                       "axis (axis=-1)",
                 "zh": "softmax 沿 axis 0 计算了；它应当在词表上计算，也就是最后一个轴"
                       "（axis=-1）"},
                lambda z, t: softmax(z / t, axis=0)),
        Mistake({"en": "exp of a large logit / T overflows: subtract each row's largest value "
                       "before np.exp (the softmax does not change)",
                 "zh": "很大的 logit / T 取 exp 会溢出：在 np.exp 之前减去每一行的最大值"
                       "（softmax 的结果不变）"},
                lambda z, t: np.exp(z / t) / np.exp(z / t).sum(axis=-1, keepdims=True)),
        Mistake({"en": "logits.max(axis=-1) has shape (...,), which cannot meet the logits "
                       "(..., V): keep the axis with keepdims=True",
                 "zh": "logits.max(axis=-1) 的形状是 (...,)，与 logits (..., V) 对不齐：用 "
                       "keepdims=True 保留这个轴"},
                lambda z, t: _temperature_softmax(z, t, keepdims=False)),
        Mistake({"en": "each row sums to 1: the sum runs along axis=-1 (keepdims=True), not "
                       "over the whole batch",
                 "zh": "每一行之和为 1：求和沿 axis=-1（keepdims=True），而不是对整个批次求和"},
                lambda z, t: _temperature_softmax(z, t, whole=True)),
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
        Case((np.array([1.5, -0.3, 2.7, 0.1, 2.2, -1.0, 0.8, 0.4]), 3),
             {"en": "one row, k = 3", "zh": "一行，k = 3"}),
        Case((rng.normal(size=(3, 10)), 4), {"en": "3 rows, k = 4", "zh": "3 行，k = 4"}),
        Case((rng.normal(size=(2, 6)), 1), {"en": "2 rows, k = 1", "zh": "2 行，k = 1"}),
        Case((rng.normal(size=(5,)), 5), {"en": "k = V = 5: keep everything",
                                          "zh": "k = V = 5：全部保留"}),
    ]


TOP_K = Exercise(
    name="top_k", checker="check_top_k", args=("logits", "k"),
    task={"en": "a bool mask of logits' shape, True at the k largest logits of each row",
          "zh": "与 logits 形状相同的 bool 掩码，每一行最大的 k 个 logits 处为 True"},
    cases=_top_k_cases, reference=top_k_mask,
    mistakes=(
        Mistake({"en": "that keeps the k smallest logits; sort in descending order "
                       "(np.argsort(-logits))",
                 "zh": "这样保留的是最小的 k 个 logits；要按降序排序（np.argsort(-logits)）"},
                lambda z, k: _first_k(-z, k)),
        Mistake({"en": "that keeps k + 1 tokens; keep exactly k",
                 "zh": "这样保留了 k + 1 个词元；要正好保留 k 个"},
                lambda z, k: _first_k(z, min(k + 1, z.shape[-1]))),
        Mistake({"en": "that keeps k − 1 tokens; keep exactly k",
                 "zh": "这样保留了 k − 1 个词元；要正好保留 k 个"},
                lambda z, k: _first_k(z, k - 1)),
        Mistake({"en": "the k largest of each column were kept; rank along the vocabulary, "
                       "the last axis (axis=-1)",
                 "zh": "保留的是每一列最大的 k 个；要沿词表排序，也就是最后一个轴（axis=-1）"},
                lambda z, k: _first_k(z, k, axis=0)),
        Mistake({"en": "those are the indices of the kept tokens; return a boolean mask of "
                       "the logits' shape, True at the k largest",
                 "zh": "这些是保留下来的词元的下标；要返回与 logits 形状相同的布尔掩码，最大的 "
                       "k 个处为 True"},
                lambda z, k: np.argsort(-z, axis=-1, kind="stable")[..., :k]),
        Mistake({"en": "return a boolean mask (True = keep); the filtering itself is "
                       "np.where(mask, logits, -np.inf)",
                 "zh": "要返回布尔掩码（True 表示保留）；过滤本身是 "
                       "np.where(mask, logits, -np.inf)"},
                lambda z, k: np.where(top_k_mask(z, k), z, -np.inf)),
        Mistake({"en": "np.sort(logits)[..., -k] has shape (...,): keep a last axis, "
                       "[..., -k, None], to compare it with every logit of its row",
                 "zh": "np.sort(logits)[..., -k] 的形状是 (...,)：要保留最后一个轴，"
                       "[..., -k, None]，才能和这一行的每个 logit 比较"},
                lambda z, k: z >= np.sort(z, axis=-1)[..., -k]),
    ))


# ------------------------------------------------------------------------ top-p

def _cumulative_keep(probs, p, *, descending=True, strict_before=True, at_most=False,
                     first=False, in_sorted_order=False):
    """Variants of the nucleus rule: rank, add up, keep while the running total is small."""
    order = np.argsort(-probs if descending else probs, axis=-1, kind="stable")
    ranked = np.take_along_axis(probs, order, axis=-1)
    mass = np.cumsum(ranked, axis=-1)
    if strict_before:
        keep_ranked = mass - ranked < p
    else:
        keep_ranked = mass <= p if at_most else mass < p
    if first:
        keep_ranked[..., 0] = True
    if in_sorted_order:
        return keep_ranked
    keep = np.zeros(probs.shape, dtype=bool)
    np.put_along_axis(keep, order, keep_ranked, axis=-1)
    return keep


def _top_p_cases():
    rng = np.random.default_rng(72)
    return [
        Case((np.array([0.05, 0.4, 0.1, 0.3, 0.15]), 0.75),
             {"en": "0.4 + 0.3 < 0.75: 0.15 joins", "zh": "0.4 + 0.3 < 0.75：0.15 也要加入"}),
        Case((softmax(rng.normal(size=(3, 8)) * 1.5), 0.9),
             {"en": "3 rows, p = 0.9", "zh": "3 行，p = 0.9"}),
        Case((np.array([0.7, 0.1, 0.08, 0.06, 0.06]), 0.5),
             {"en": "the top token alone passes p", "zh": "概率最高的词元单独就超过了 p"}),
        Case((softmax(rng.normal(size=(2, 6))), 0.6), {"en": "2 rows, p = 0.6",
                                                       "zh": "2 行，p = 0.6"}),
    ]


PAST_P_HINT = {
    "en": "the token that carries the running total past p was dropped (keeping while "
          "cumsum < p); keep a token when the mass *before* it is below p, so the kept mass "
          "reaches p",
    "zh": "让累计和越过 p 的那个词元被丢掉了（只在 cumsum < p 时保留）；应当在它*之前*的累计概率"
          "小于 p 时保留它，这样保留的总概率才能达到 p"}

TOP_P = Exercise(
    name="top_p", checker="check_top_p", args=("probs", "p"),
    task={"en": "a bool mask of probs' shape: the most probable tokens whose total first "
                "reaches p",
          "zh": "与 probs 形状相同的 bool 掩码：按概率从高到低、总和刚好达到 p 的那些词元"},
    cases=_top_p_cases, reference=top_p_mask,
    mistakes=(
        Mistake(PAST_P_HINT, lambda q, p: _cumulative_keep(q, p, strict_before=False)),
        Mistake({"en": "the running total was taken in vocabulary order; sort by probability "
                       "first, most probable first",
                 "zh": "累计和是按词表顺序算的；要先按概率排序，概率最高的在前"},
                lambda q, p: np.cumsum(q, axis=-1) - q < p),
        Mistake({"en": "that ranks the least probable first; sort in descending order",
                 "zh": "这样把概率最低的排在了前面；要按降序排序"},
                lambda q, p: _cumulative_keep(q, p, descending=False)),
        Mistake({"en": "tokens whose own probability is ≥ p were kept; p is a bound on the "
                       "total mass of the kept tokens",
                 "zh": "保留的是自身概率 ≥ p 的词元；p 限定的是保留下来的词元的总概率"},
                lambda q, p: q >= p),
        Mistake({"en": "return a boolean mask (True = keep); the filtering itself is "
                       "np.where(mask, probs, 0)",
                 "zh": "要返回布尔掩码（True 表示保留）；过滤本身是 np.where(mask, probs, 0)"},
                lambda q, p: np.where(top_p_mask(q, p), q, 0.0)),
        Mistake(PAST_P_HINT, lambda q, p: _cumulative_keep(q, p, strict_before=False,
                                                            at_most=True, first=True)),
        Mistake({"en": "the mask is in sorted order: put it back in the vocabulary's order "
                       "(np.put_along_axis with the argsort's indices)",
                 "zh": "掩码还是排序后的顺序：要把它放回词表的顺序（用 argsort 的下标做 "
                       "np.put_along_axis）"},
                lambda q, p: _cumulative_keep(q, p, in_sorted_order=True)),
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
            raise ValueError(say("step.one prefix", type=type(prefix).__name__,
                                 shape=ids.shape, dtype=ids.dtype))
        if ids[0] != BOS_ID:
            raise ValueError(say("step.bos", bos=BOS_ID, ids=ids.tolist()))
        if ids.min() < 0 or ids.max() >= self.vocab_size:
            raise ValueError(say("step.range", last=self.vocab_size - 1, ids=ids.tolist()))
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
          eos_in_length=True, keep_live=True, stop_at_first=False, rank_by_log_p=False):
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
        ranked.append((tokens if keep_bos else tokens[1:], score, logp))
    key = (lambda h: -h[2]) if rank_by_log_p else (lambda h: -h[1] if best_first else h[1])
    return [h[:2] for h in sorted(ranked, key=key)]


def _beam_finished_compete(step, beam_size, max_len, length_penalty):
    """Finished hypotheses stay in the beam and compete, by total log p, with the live ones'
    extensions for its beam_size places (a false pass while no case made the length penalty
    change an order)."""
    beam = [([BOS_ID], 0.0)]  # finished and live hypotheses together
    for _ in range(max_len):
        candidates = [(tokens, logp) for tokens, logp in beam if tokens[-1] == EOS_ID]
        for tokens, logp in beam:
            if tokens[-1] != EOS_ID:
                step_logp = step(np.array(tokens))
                candidates += [(tokens + [token], logp + token_logp)
                               for token, token_logp in enumerate(step_logp)
                               if np.isfinite(token_logp)]
        beam = sorted(candidates, key=lambda c: -c[1])[:beam_size]
        if all(tokens[-1] == EOS_ID for tokens, _ in beam):
            break
    return sorted(((tokens[1:], logp / ((5 + len(tokens) - 1) / 6) ** length_penalty)
                   for tokens, logp in beam), key=lambda h: -h[1])


def _as_hypotheses(got):
    """The learner's n-best list as [(token list, float score)], or a sentence why not."""
    if got is None:
        return None, say("no return")
    if not isinstance(got, (list, tuple)):
        return None, say("beam.not a list", kind=kind_of(got))
    hypotheses = []
    for i, item in enumerate(got):
        if isinstance(item, (list, tuple, np.ndarray)) and len(item) and all(
                isinstance(t, (int, np.integer)) and not isinstance(t, bool) for t in item):
            return None, say("beam.ids only", i=i)  # tokens without their score
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            return None, say("beam.not a pair", i=i, kind=kind_of(item))
        try:
            tokens, score = np.asarray(item[0]), np.asarray(item[1])
        except (TypeError, ValueError):
            return None, say("beam.not a pair", i=i, kind=kind_of(item))
        if tokens.ndim != 1 or (tokens.size and tokens.dtype.kind not in "iu"):
            return None, say("beam.tokens", i=i, kind=kind_of(item[0]))
        if score.shape not in ((), (1,)) or score.dtype.kind not in "iuf":
            return None, say("beam.score", i=i, kind=kind_of(item[1]))
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
        return say("beam.hypothesis", tokens=h[0], score=f"{h[1]:.4g}")

    i = 0
    while i < len(expected):
        j = i + 1  # expected[i:j]: hypotheses tied in score
        while j < len(expected) and close(expected[j][1], expected[i][1]):
            j += 1
        if len(got) < j:
            missing = [h for h in expected[i:j] if h[0] not in [g[0] for g in got[i:]]]
            return say("beam.missing", got=len(got), expected=len(expected),
                       hyp=show((missing or expected[len(got):])[0]))
        for g in got[i:j]:
            match = [e for e in expected[i:j] if e[0] == g[0]]
            if not match:
                return say("beam.wrong", n=got.index(g) + 1, hyp=show(g),
                           expected=say("beam.or").join(show(e) for e in expected[i:j]))
            if not close(g[1], match[0][1]):
                return _score_differs(got.index(g) + 1, g, match[0], rtol, atol)
        if sorted(g[0] for g in got[i:j]) != sorted(e[0] for e in expected[i:j]):
            twice = next(g for g in got[i:j] if [h[0] for h in got[i:j]].count(g[0]) > 1)
            return say("beam.twice", hyp=show(twice))
        i = j
    if len(got) > len(expected):
        return say("beam.too many", got=len(got), expected=len(expected),
                   hyp=show(got[len(expected)]))
    return None


def _score_differs(n, got, expected, rtol, atol):
    """"hypothesis n, tokens [...]: score X, expected Y", the scores as shown_pair prints them."""
    g, e, off = shown_pair(got[1], expected[1], atol + rtol * abs(expected[1]))
    return say("beam.score differs", n=n, tokens=got[0], got=g, expected=e, off=off)


def _beam_cases():
    V = 8  # <pad> <bos> <eos> and five "words", ids 3..7
    return [
        Case((StepFunction(V, 1, eos_growth=0.8), 3, 5, 0.6),
             {"en": "8 tokens, <eos> likelier with each step",
              "zh": "8 个词元，<eos> 每一步都更可能出现"}),
        Case((StepFunction(V, 2, first=[0, 0, 0.5, 0.2, 0.15, 0.1, 0.05, 0], eos_growth=0.4),
              3, 4, 0.6), {"en": "<eos> is the most probable first token",
                           "zh": "<eos> 是最可能的第一个词元"}),
        Case((StepFunction(V, 3, first=[0, 0, 0.05, 0.4, 0.4, 0.1, 0.05, 0], twins=(3, 4),
                           eos_growth=0.7), 2, 4, 1.0),
             {"en": "tokens 3 and 4 tie, and so do all their continuations",
              "zh": "词元 3 和 4 打平，它们之后的所有延续也都打平"}),
        Case((StepFunction(V, 1, eos_growth=-2.0), 2, 3, 0.0),
             {"en": "<eos> unlikely: the beam is still full at max_len",
              "zh": "<eos> 不太可能出现：到 max_len 时束还是满的"}),
        Case((StepFunction(V, 5, eos_growth=0.5), 1, 6, 0.6),
             {"en": "beam_size 1 is greedy", "zh": "beam_size 为 1 就是贪心解码"}),
        Case((StepFunction(V, 1012, eos_growth=0.8), 3, 5, 0.6),
             {"en": "the length penalty reverses the top two: by raw log p [6, 2] would beat "
                    "[4, 6, 4, 2]",
              "zh": "长度惩罚让前两名对调：按原始的 log p，[6, 2] 会胜过 [4, 6, 4, 2]"}),
    ]


BEAM_SEARCH = Exercise(
    name="beam_search", checker="check_beam_search",
    args=("step", "beam_size", "max_len", "length_penalty"),
    task={"en": "the n-best list of minitf's beam_search: (tokens without <bos>, "
                "log p / ((5 + len) / 6) ** length_penalty) pairs, best first",
          "zh": "minitf 的 beam_search 给出的 n-best 列表：由 (不含 <bos> 的 tokens, "
                "log p / ((5 + len) / 6) ** length_penalty) 组成的对，最好的在前"},
    cases=_beam_cases, reference=_beam, compare=_compare_n_best,
    mistakes=(
        Mistake({"en": "rank by log p / lp(len), lp(len) = ((5 + len) / 6) ** "
                       "length_penalty: the scores are plain log p",
                 "zh": "要按 log p / lp(len) 排序，lp(len) = ((5 + len) / 6) ** length_penalty："
                       "你的分数只是 log p"},
                lambda *a: _beam(*a, penalty=False)),
        Mistake({"en": "len in the length penalty counts the generated tokens and the <eos>, "
                       "not the <bos>",
                 "zh": "长度惩罚里的 len 数的是生成的词元和 <eos>，不算 <bos>"},
                lambda *a: _beam(*a, bos_in_length=True)),
        Mistake({"en": "return the tokens without the <bos>, as beam_search does",
                 "zh": "返回的 tokens 不含 <bos>，和 beam_search 一样"},
                lambda *a: _beam(*a, keep_bos=True)),
        Mistake({"en": "a finished hypothesis leaves the beam, which narrows by one: keep "
                       "only beam_size − (number finished) extensions per step",
                 "zh": "完成的假设离开束，束随之窄一格：每一步只保留 beam_size − （已完成的"
                       "个数）个扩展"},
                lambda *a: _beam(*a, narrow=False)),
        Mistake({"en": "a hypothesis that ends in <eos> is finished: take it out of the beam "
                       "instead of extending it",
                 "zh": "以 <eos> 结尾的假设已经完成：把它移出束，不要再扩展它"},
                lambda *a: _beam(*a, finish=False)),
        Mistake({"en": "rank the extensions by their total log p (the hypothesis's log p plus "
                       "the token's), not by the new token's log p alone",
                 "zh": "扩展要按总的 log p 排序（假设的 log p 加上新词元的），而不是只看新词元"
                       "的 log p"},
                lambda *a: _beam(*a, by_total=False)),
        Mistake({"en": "best first: sort by score from the highest (nearest 0) down",
                 "zh": "最好的在前：按分数从高（最接近 0）到低排序"},
                lambda *a: _beam(*a, best_first=False)),
        Mistake({"en": "len in the length penalty counts the <eos> too: the tokens without "
                       "<bos>, <eos> included",
                 "zh": "长度惩罚里的 len 也要算上 <eos>：不含 <bos>、含 <eos> 的词元个数"},
                lambda *a: _beam(*a, eos_in_length=False)),
        Mistake({"en": "the hypotheses still in the beam after max_len steps count as "
                       "finished: rank them with the others",
                 "zh": "走完 max_len 步后还留在束里的假设也算完成：把它们和其他假设一起排序"},
                lambda *a: _beam(*a, keep_live=False)),
        Mistake({"en": "the search stopped at the first finished hypothesis; it goes on, with "
                       "a beam one narrower, until the beam is empty or max_len steps are done",
                 "zh": "搜索在第一个假设完成时就停了；它应当继续（束窄一格），直到束空了或者"
                       "走完 max_len 步"},
                lambda *a: _beam(*a, stop_at_first=True)),
        Mistake({"en": "the n-best list is sorted by raw log p; sort it by the score you "
                       "report, log p / lp(len): the length penalty can change the order",
                 "zh": "n-best 列表是按原始的 log p 排序的；要按你报告的分数 log p / lp(len) "
                       "排序：长度惩罚可能改变顺序"},
                lambda *a: _beam(*a, rank_by_log_p=True)),
        Mistake({"en": "finished hypotheses stayed in the beam and competed with the live ones' "
                       "extensions, so a finished one can be pushed out: a finished hypothesis "
                       "leaves the beam for good, and only beam_size − (number finished) "
                       "extensions are kept",
                 "zh": "已完成的假设留在束里，和未完成假设的扩展争位置，于是可能被挤掉：假设一旦"
                       "完成就永远离开束，每一步只保留 beam_size − （已完成的个数）个扩展"},
                _beam_finished_compete),
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
            records.append(say("kv.not a pair", kind=kind_of(out)))
            break
        z, cache = out
        if not isinstance(cache, dict) or not {"k", "v"} <= set(cache):
            records.append(say("kv.not a dict", kind=kind_of(cache)))
            break
        try:
            records.append(tuple(np.array(a, copy=True) for a in (z, cache["k"], cache["v"])))
        except Exception as error:  # noqa: BLE001 - e.g. arrays of strings, reported
            records.append(say("kv.not arrays", error=error))
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
        where = say("kv.step.one", step=t + 1) if t == 1 else say("kv.step", step=t + 1, t=t)
        if isinstance(g, (Raised, str)) or isinstance(e, (Raised, str)):
            if g == e:  # the same exception, or the same malformed answer
                continue
            return say("kv.at step", step=where,
                       problem=g if isinstance(g, (Raised, str)) else say("differs"))
        labels = ("z_t", "cache['k']", "cache['v']")
        for label, a, b in zip(labels[1:], g[1:], e[1:]):
            if np.shape(a) != np.shape(b):  # positions on the wrong axis, or a wrong count
                axes = sorted(np.shape(a)) == sorted(np.shape(b))
                return say("kv.axes" if axes else "kv.grows", step=where, label=label,
                           shape=np.shape(a), expected=np.shape(b))
        for label, a, b in zip(labels, g, e):
            problem = describe_difference(a, b, rtol, atol)
            if problem:
                return say("kv.at step", step=where,
                           problem=say("labelled", label=label, problem=problem))
    return None


def _grown(cache, new, how):
    """cache (..., t, d) with new (..., d) appended as its position t, as `how` does it:
    "concatenate" (along -2, right), "none0" (new[None] along axis 0), "vstack", "last" (new
    as a column, along axis -1)."""
    if how == "vstack":
        return np.vstack([cache, new])
    if how == "none0":
        return np.concatenate([cache, new[None]], axis=0)
    if how == "last":
        return np.concatenate([cache, new[..., None]], axis=-1)
    return np.concatenate([cache, new[..., None, :]], axis=-2 if how == "concatenate" else how)


def _kv_mistake(*, append=True, how="concatenate", scale="d_k", include_new=True,
                weights=None, cache_query=False, softmax_axis=-1, first_alone=False):
    """One step of the KV cache, and (with other flags) the usual wrong versions."""
    def step(x_t, cache, W_q, W_k, W_v):
        q, k, v = x_t @ W_q, x_t @ W_k, x_t @ W_v  # (..., d)
        if cache_query:
            k = q
        if not include_new:
            K, V = cache["k"], cache["v"]
        elif append:
            K, V = _grown(cache["k"], k, how), _grown(cache["v"], v, how)  # (..., t+1, d)
        else:
            K, V = k[..., None, :], v[..., None, :]
        d = {"d_k": W_k.shape[1], "d_model": W_k.shape[0], None: 1}[scale]
        scores = (K @ q[..., None])[..., 0] / np.sqrt(d)  # (..., t+1)
        if weights is None:  # a softmax of one's own: raises on the empty cache of step 1
            shifted = np.exp(scores - scores.max(axis=softmax_axis, keepdims=True))
            alpha = shifted / shifted.sum(axis=softmax_axis, keepdims=True)
        else:  # minitf's softmax, as the notebook's solution: z_1 = 0 over no positions
            alpha = weights(scores)
        z = (alpha[..., None, :] @ V)[..., 0, :]  # (..., d_v)
        if first_alone and cache["k"].shape[-2] == 0:
            z = v  # step 1 special-cased: the new position alone
        if not include_new:
            K, V = _grown(cache["k"], k, how), _grown(cache["v"], v, how)
        return z, {"k": K, "v": V}
    return step


def _kv_cases():
    rng = np.random.default_rng(73)
    return [
        Case((rng.normal(size=(4, 6)), rng.normal(size=(6, 4)), rng.normal(size=(6, 4)),
              rng.normal(size=(6, 3))), {"en": "one sequence of 4 positions, d_k = 4, d_v = 3",
                                         "zh": "一个 4 个位置的序列，d_k = 4，d_v = 3"}),
        Case((rng.normal(size=(2, 5, 8)), rng.normal(size=(8, 2)), rng.normal(size=(8, 2)),
              rng.normal(size=(8, 5))), {"en": "a batch of 2 sequences of 5 positions, d_k = 2",
                                         "zh": "含 2 个序列的批次，每个序列 5 个位置，d_k = 2"}),
    ]


_SCORES_BEFORE_APPEND = {
    "en": "the new position attends to itself too: append k_t and v_t to the cache before "
          "computing the scores",
    "zh": "新位置也要关注它自己：先把 k_t 和 v_t 追加进缓存，再计算分数"}

AXIS_HINT = {"en": "append along the position axis, -2: with a batch, axis 0 is the batch",
             "zh": "要沿位置轴 -2 追加：有批次时，axis 0 是批次轴"}

KV_CACHE = Exercise(
    name="kv_cache", checker="check_kv_cache", args=("X", "W_q", "W_k", "W_v"),
    signature=("x_t", "cache", "W_q", "W_k", "W_v"),
    task={"en": "(z_t, cache): z_t the new position's attention output over every position "
                "so far, and the cache with k_t and v_t appended (X is fed one position at a "
                "time)",
          "zh": "(z_t, cache)：z_t 是新位置对目前所有位置的注意力输出，cache 是追加了 k_t 和 "
                "v_t 的缓存（X 一次喂入一个位置）"},
    cases=_kv_cases, reference=_kv_mistake(), run=_run_cached_steps,
    expected=_recomputed_steps, compare=_compare_steps,
    mistakes=(
        Mistake({"en": "the cache was replaced by the new key and value: append them "
                       "(np.concatenate along the position axis) so it grows by one per step",
                 "zh": "缓存被新的键和值替换掉了：要把它们追加进去（沿位置轴 np.concatenate），"
                       "让缓存每一步多一个位置"},
                _kv_mistake(append=False)),
        Mistake(AXIS_HINT, _kv_mistake(how=0)),
        Mistake(AXIS_HINT, _kv_mistake(how="none0")),
        Mistake({"en": "np.vstack stacks along axis 0, which is the batch when there is one: "
                       "append along the position axis, np.concatenate([cache['k'], "
                       "k_t[..., None, :]], axis=-2)",
                 "zh": "np.vstack 沿 axis 0 堆叠，有批次时那是批次轴：要沿位置轴追加，"
                       "np.concatenate([cache['k'], k_t[..., None, :]], axis=-2)"},
                _kv_mistake(how="vstack")),
        Mistake({"en": "the cache is (..., t, d): positions on axis -2, features on axis -1; "
                       "append k_t as a new row, k_t[..., None, :], along axis=-2",
                 "zh": "缓存的形状是 (..., t, d)：位置在 axis -2 上，特征在 axis -1 上；要把 "
                       "k_t 作为新的一行 k_t[..., None, :] 沿 axis=-2 追加"},
                _kv_mistake(how="last")),
        Mistake({"en": "the cache holds the keys x_t W_k (and the values), not the queries: a "
                       "query is used once, at its own step",
                 "zh": "缓存里存的是键 x_t W_k（和值），不是查询：查询只在它自己那一步用一次"},
                _kv_mistake(cache_query=True)),
        Mistake({"en": "the softmax runs over the cached positions, the last axis (axis=-1); "
                       "with a batch, axis 0 is the batch",
                 "zh": "softmax 要在缓存的各个位置上计算，也就是最后一个轴（axis=-1）；有批次时，"
                       "axis 0 是批次轴"},
                _kv_mistake(softmax_axis=0)),
        Mistake({"en": "divide the scores by √d_k", "zh": "分数要除以 √d_k"},
                _kv_mistake(scale=None)),
        Mistake({"en": "divide by √d_k, the size of a key (W_k.shape[1]), not by √d_model",
                 "zh": "要除以 √d_k，即一个键的维数（W_k.shape[1]），而不是 √d_model"},
                _kv_mistake(scale="d_model")),
        Mistake(_SCORES_BEFORE_APPEND, _kv_mistake(include_new=False, weights=softmax)),
        Mistake(_SCORES_BEFORE_APPEND, _kv_mistake(include_new=False)),
        Mistake(_SCORES_BEFORE_APPEND, _kv_mistake(include_new=False, weights=softmax,
                                                   first_alone=True)),
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

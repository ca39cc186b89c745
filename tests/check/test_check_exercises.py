"""Every exercise checker, the same four ways: the notebook's own solution passes, an in-place
version passes, each known mistake gets its own hint and no other, and hostile answers are
reported, never raised."""

import copy

import numpy as np
import pytest
from check_solutions import SOLUTIONS

import minitf.check
from minitf import tasks
from minitf.attention import padding_mask, scaled_dot_product_attention, softmax
from minitf.check import EXERCISES_BY_CHECKER
from minitf.check.core import NOT_WRITTEN
from minitf.check.messages import pick
from minitf.module import Module
from minitf.multihead import merge_heads, split_heads
from minitf.tasks import referent
from minitf.tasks.sequence import SEP_ID
from minitf.tokens import PAD_ID

CHECKERS = sorted(EXERCISES_BY_CHECKER)


# --------------------------------------------------------------- in-place versions

def encode_source_in_place(text):
    words = text.split()
    ids = np.empty(len(words) + 1, dtype=np.int64)  # filled in place
    for i, word in enumerate(words):
        ids[i] = tasks.SOURCE_VOCAB.id(word)
    ids[-1] = tasks.EOS_ID
    return ids


def embed_in_place(weight, ids):
    out = np.empty(ids.shape + weight.shape[1:])
    np.take(weight, ids, axis=0, out=out)
    return out


def pad_in_place(sequences, pad_id):
    longest = max(len(s) for s in sequences)
    for s in sequences:
        s.extend([pad_id] * (longest - len(s)))  # lengthens the caller's lists
    return np.array(sequences)


def scaled_scores_in_place(q, K):
    q /= np.sqrt(q.shape[-1])
    return K @ q


def softmax_in_place(x):  # the example
    x -= x.max(axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=-1, keepdims=True)
    return x


def attend_in_place(q, K, V):
    q /= np.sqrt(q.shape[-1])
    return softmax_in_place(K @ q) @ V


def qkv_in_place(X, W_q, W_k, W_v):
    out = []
    for W in (W_q, W_k, W_v):
        Y = np.empty(X.shape[:-1] + W.shape[1:])
        np.matmul(X, W, out=Y)
        out.append(Y)
    return tuple(out)


def attention_in_place(Q, K, V):
    Q /= np.sqrt(Q.shape[-1])
    return softmax_in_place(Q @ np.swapaxes(K, -1, -2)) @ V


def flops_in_place(n, d_model, d_k, d_v):
    total = 0
    for d_out in (d_k, d_k, d_v):
        total += 2 * n * d_model * d_out
    total += 2 * n * n * (d_k + d_v)
    return total


def split_heads_in_place(x, num_heads):
    B, L, d_model = x.shape
    d_k = d_model // num_heads
    out = np.empty((B, num_heads, L, d_k))
    for i in range(num_heads):
        out[:, i] = x[..., i * d_k:(i + 1) * d_k]
    return out


def merge_heads_in_place(x):
    B, h, L, d_k = x.shape
    out = np.empty((B, L, h * d_k))
    for i in range(h):
        out[..., i * d_k:(i + 1) * d_k] = x[:, i]
    return out


def multi_head_in_place(x, params, num_heads):
    d_k = x.shape[-1] // num_heads
    params["W_q"] /= np.sqrt(d_k)  # folds 1/√d_k into the caller's query projection
    params["b_q"] /= np.sqrt(d_k)
    q, k, v = (split_heads(x @ params[f"W_{n}"] + params[f"b_{n}"], num_heads) for n in "qkv")
    weights = softmax_in_place(q @ k.transpose(0, 1, 3, 2))
    return merge_heads(weights @ v) @ params["W_o"] + params["b_o"]


def sinusoidal_in_place(max_len, d_model):
    pe = np.zeros((max_len, d_model))
    angle = np.arange(max_len)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe


def rope_in_place(x):
    L, d = x.shape[-2:]
    angle = np.arange(L)[:, None] / 10000 ** (np.arange(0, d, 2) / d)
    even, odd = x[..., 0::2].copy(), x[..., 1::2].copy()
    x[..., 0::2] = even * np.cos(angle) - odd * np.sin(angle)
    x[..., 1::2] = even * np.sin(angle) + odd * np.cos(angle)
    return x


def layer_norm_in_place(x, gamma, beta, eps=1e-5):
    mean, var = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
    x -= mean
    x /= np.sqrt(var + eps)
    x *= gamma
    x += beta
    return x


def rms_norm_in_place(x, gamma, eps=1e-5):
    x /= np.sqrt((x ** 2).mean(axis=-1, keepdims=True) + eps)
    x *= gamma
    return x


def pre_ln_in_place(x, layer, mask):
    x += layer.self_attn(layer.norm1(x), mask=mask)
    x += layer.ffn(layer.norm2(x))
    return x


def local_causal_mask_in_place(n, window):
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        mask[i, max(0, i - window + 1):i + 1] = True
    return mask


def cross_attention_in_place(y, memory, attn, memory_mask):
    h = attn.num_heads
    k = split_heads(memory @ attn.W_k + attn.b_k, h)
    v = split_heads(memory @ attn.W_v + attn.b_v, h)
    memory[...] = 0  # spoils the caller's memory once it is read
    q = y @ attn.W_q
    q += attn.b_q
    q /= np.sqrt(attn.d_k)
    scores = split_heads(q, h) @ np.swapaxes(k, -1, -2)
    if memory_mask is not None:
        scores[~np.broadcast_to(memory_mask, scores.shape)] = -np.inf
    out = merge_heads(softmax_in_place(scores) @ v) @ attn.W_o
    out += attn.b_o
    return out


def pre_ln_decoder_layer_in_place(y, memory, layer, tgt_mask, memory_mask):
    y += layer.self_attn(layer.norm1(y), mask=tgt_mask)  # changes the caller's y
    y += layer.cross_attn(layer.norm2(y), memory, mask=memory_mask)
    y += layer.ffn(layer.norm3(y))
    return y


def greedy_step_in_place(model, src, prefix):
    logits = model.decode(prefix, model.encode(src), padding_mask(src))[:, -1]
    logits[:, tasks.PAD_ID] = -np.inf
    out = prefix[:, 0]  # a view: the answer overwrites the caller's <bos> column
    out[:] = logits.argmax(axis=-1)
    return out


def temperature_in_place(logits, T):
    logits /= T
    return softmax_in_place(logits)


def top_k_in_place(logits, k):
    order = np.argsort(-logits, axis=-1)
    np.put_along_axis(logits, order[..., k:], -np.inf, axis=-1)  # filters the caller's logits
    return np.isfinite(logits)


def top_p_in_place(probs, p):
    order = np.argsort(-probs, axis=-1)
    ranked = np.take_along_axis(probs, order, axis=-1)
    np.put_along_axis(probs, order, np.cumsum(ranked, axis=-1) - ranked, axis=-1)
    return probs < p  # probs now holds the mass ranked above each token


def cross_entropy_in_place(logits, targets, eps, ignore_index=0):
    logits -= logits.max(axis=-1, keepdims=True)
    logits -= np.log(np.exp(logits).sum(axis=-1, keepdims=True))  # log-probabilities
    nll = -np.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    nll *= 1 - eps
    nll -= eps / logits.shape[-1] * logits.sum(axis=-1)
    return nll[targets != ignore_index].mean()


def log_softmax_backward_in_place(s, d_logp):
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)  # s now holds softmax(s)
    s *= d_logp.sum(axis=-1, keepdims=True)
    d_logp -= s
    return d_logp


def adam_in_place(param, grad, m, v, t, lr, beta1, beta2, eps):
    m *= beta1
    m += (1 - beta1) * grad
    v *= beta2
    v += (1 - beta2) * grad ** 2
    param -= lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps)
    return param, m, v


def warmup_in_place(step, d_model, warmup, scale=1.0):
    lr = scale
    lr *= d_model ** -0.5
    lr *= min(step ** -0.5, step * warmup ** -1.5)
    return lr


def beam_search_in_place(step, beam_size, max_len, length_penalty):
    ys = np.zeros((beam_size, max_len + 1), dtype=np.int64)  # row k: hypothesis k
    ys[:, 0] = tasks.BOS_ID
    logp = np.zeros(beam_size)
    live, finished = 1, []
    for t in range(max_len):
        candidates = np.stack([logp[k] + step(ys[k, :t + 1]) for k in range(live)])  # (live, V)
        best = np.argsort(-candidates, axis=None, kind="stable")[:beam_size - len(finished)]
        rows, tokens = np.unravel_index(best, candidates.shape)
        ys[:len(best)] = ys[rows]  # the rows reordered in place
        ys[:len(best), t + 1] = tokens
        logp[:len(best)] = candidates[rows, tokens]
        live = 0
        for k in range(len(best)):
            if tokens[k] == tasks.EOS_ID:
                finished.append((ys[k, 1:t + 2].tolist(), float(logp[k])))
            else:  # compact the live rows to the top
                ys[live], logp[live] = ys[k], logp[k]
                live += 1
        if live == 0:
            break
    finished += [(ys[k, 1:t + 2].tolist(), float(logp[k])) for k in range(live)]
    return sorted([(ids, s / ((5 + len(ids)) / 6) ** length_penalty) for ids, s in finished],
                  key=lambda h: -h[1])


def kv_step_in_place(x_t, cache, W_q, W_k, W_v):
    W_q /= np.sqrt(W_q.shape[1])  # folds 1/√d_k into the caller's W_q
    q = x_t @ W_q
    k = np.concatenate([cache["k"], (x_t @ W_k)[..., None, :]], axis=-2)
    v = np.concatenate([cache["v"], (x_t @ W_v)[..., None, :]], axis=-2)
    weights = softmax_in_place(np.sum(k * q[..., None, :], axis=-1))
    return np.sum(weights[..., None] * v, axis=-2), {"k": k, "v": v}  # a new cache dict


def referent_rule_in_place(words):
    kind = referent.LIVING if words[-1] in referent.LIVING_ADJECTIVES else referent.PLACES
    words.reverse()  # searches from the end, in the caller's list
    return len(words) - 1 - next(i for i, w in enumerate(words) if w in kind)


def pointer_gradient_in_place(q, K, target):
    K /= np.sqrt(len(q))  # scales the caller's keys
    p = softmax_in_place(K @ q)
    p[target] -= 1
    return K.T @ p


def answer_targets_in_place(tokens, next_ids):
    for row, sep in enumerate(np.argmax(tokens == SEP_ID, axis=1)):
        next_ids[row, :sep] = PAD_ID  # overwrites the caller's array, row by row
    return next_ids


def words_share_in_place(weights, sep):
    weights[:, :, sep:] = 0  # the caller's weights lose the answer's and <sep>'s columns
    weights[:, :, 0] = 0  # and <bos>'s
    return weights[:, sep:].sum(axis=-1)


IN_PLACE = {
    "check_encode_source": encode_source_in_place,
    "check_embedding_lookup": embed_in_place,
    "check_pad": pad_in_place,
    "check_scaled_scores": scaled_scores_in_place,
    "check_softmax": softmax_in_place,
    "check_single_query_attention": attend_in_place,
    "check_qkv": qkv_in_place,
    "check_attention": attention_in_place,
    "check_attention_flops": flops_in_place,
    "check_split_heads": split_heads_in_place,
    "check_merge_heads": merge_heads_in_place,
    "check_multi_head": multi_head_in_place,
    "check_sinusoidal": sinusoidal_in_place,
    "check_rope": rope_in_place,
    "check_layer_norm": layer_norm_in_place,
    "check_rms_norm": rms_norm_in_place,
    "check_pre_ln_encoder_layer": pre_ln_in_place,
    "check_local_causal_mask": local_causal_mask_in_place,
    "check_cross_attention": cross_attention_in_place,
    "check_pre_ln_decoder_layer": pre_ln_decoder_layer_in_place,
    "check_greedy_step": greedy_step_in_place,
    "check_temperature": temperature_in_place,
    "check_top_k": top_k_in_place,
    "check_top_p": top_p_in_place,
    "check_cross_entropy": cross_entropy_in_place,
    "check_log_softmax_backward": log_softmax_backward_in_place,
    "check_adam_step": adam_in_place,
    "check_warmup": warmup_in_place,
    "check_beam_search": beam_search_in_place,
    "check_kv_cache": kv_step_in_place,
    "check_referent_rule": referent_rule_in_place,
    "check_pointer_gradient": pointer_gradient_in_place,
    "check_answer_targets": answer_targets_in_place,
    "check_words_share": words_share_in_place,
}


# ------------------------------------------------------------------ the four tests

def checker(name):
    return getattr(minitf.check, name)  # the public function, as a notebook calls it


def other_right_answers(name):
    """The right answers written differently that checker `name` must accept: its in-place
    version here, and those its Exercise lists (`answers`)."""
    return ([IN_PLACE[name]] if name in IN_PLACE else []) + list(EXERCISES_BY_CHECKER[name].answers)


def test_every_checker_is_tested_and_exported():
    """Every checker is exported, has its notebook's solution and another right answer."""
    exported = {n for n in minitf.check.__all__ if n.startswith("check_") and n != "check_function"}
    assert exported == set(EXERCISES_BY_CHECKER) == set(SOLUTIONS)
    assert set(IN_PLACE) <= set(EXERCISES_BY_CHECKER)
    missing = [name for name in EXERCISES_BY_CHECKER if not other_right_answers(name)]
    assert not missing, f"give these an in-place right answer (IN_PLACE, or answers=): {missing}"


@pytest.mark.parametrize("name", CHECKERS)
def test_the_notebook_solution_passes(name):
    result = checker(name)(SOLUTIONS[name])
    assert result.passed and result.status == "pass" and bool(result), str(result)
    assert str(result).startswith(f"✓ {pick(EXERCISES_BY_CHECKER[name].name)}: pass")
    assert result.hints == []


@pytest.mark.parametrize(("name", "k"), [(name, k) for name in CHECKERS
                                         for k in range(len(other_right_answers(name)))])
def test_other_right_answers_pass(name, k):
    result = checker(name)(other_right_answers(name)[k])
    assert result.passed, str(result)


def vandalise(value):
    """Spoil `value` in place: arrays filled with NaN (or -1), lists and dicts emptied,
    a module's weights set to NaN."""
    if isinstance(value, np.ndarray) and value.flags.writeable:
        value[...] = np.nan if value.dtype.kind == "f" else (True if value.dtype == bool else -1)
    elif isinstance(value, (list, dict)):
        for item in (value.values() if isinstance(value, dict) else value):
            vandalise(item)
        value.clear()
    elif isinstance(value, Module):
        for _, array in value.named_parameters():
            array[...] = np.nan


@pytest.mark.parametrize("name", CHECKERS)
def test_a_right_answer_that_spoils_its_inputs_passes(name):
    """The learner's function gets copies: spoiling them after answering changes neither
    the reference, nor the mistakes, nor the next case."""
    solution = SOLUTIONS[name]

    def spoiler(*args):
        answer = copy.deepcopy(solution(*args))
        for arg in args:
            vandalise(arg)
        return answer

    result = checker(name)(spoiler)
    assert result.passed, str(result)


MISTAKES = [(name, i) for name in CHECKERS for i in range(len(EXERCISES_BY_CHECKER[name].mistakes))]


@pytest.mark.parametrize(("name", "index"), MISTAKES)
def test_each_mistake_gets_its_own_hint_and_no_other(name, index):
    mistake = EXERCISES_BY_CHECKER[name].mistakes[index]
    result = checker(name)(mistake.fn)
    assert result.status == "fail"
    assert result.hints == [pick(mistake.hint)], str(result)
    assert str(result).count("hint:") == 1 and pick(mistake.hint) in str(result)


def test_every_checker_knows_some_mistakes():
    assert all(EXERCISES_BY_CHECKER[name].mistakes for name in CHECKERS)
    assert len(MISTAKES) >= 100


@pytest.mark.parametrize("name", CHECKERS)
def test_not_written_yet(name):
    def mine(*args):
        raise NotImplementedError  # your code here

    result = checker(name)(mine)
    assert result.status == "not written" and not result
    assert str(result) == f"✗ {pick(EXERCISES_BY_CHECKER[name].name)}: not yet\n  {NOT_WRITTEN}"


class Unreadable:
    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array here")

    def __len__(self):
        raise RuntimeError("no length either")

    def __eq__(self, other):
        raise RuntimeError("cannot compare")

    __hash__ = object.__hash__

    def __deepcopy__(self, memo):
        raise RuntimeError("cannot copy")


def fill_inputs_with_nan(*args):
    for arg in args:
        vandalise(arg)
    return args[0]


def raises(error):
    def fn(*args):
        raise error
    return fn


HOSTILE = {
    "None": lambda *args: None,
    "a string": lambda *args: "the answer",
    "a wrong shape": lambda *args: np.zeros(7),
    "a 0-d array": lambda *args: np.float64(0.5),
    "strings in an array": lambda *args: np.array(["a", "b"]),
    "a ragged list": lambda *args: [[1, 2], [3]],
    "a dict": lambda *args: {"answer": 1},
    "a generator": lambda *args: (i for i in range(3)),
    "an unreadable object": lambda *args: Unreadable(),
    "NaN everywhere": lambda *args: fill_inputs_with_nan(*args),
    "raises ValueError": raises(ValueError("hostile")),
    "raises KeyError": raises(KeyError("W_q")),
    "exits": raises(SystemExit(3)),
    "recursion": lambda *args: (_ for _ in ()).throw(RecursionError("deep")),
    "the inputs back": lambda *args: args,
    "wrong arity": lambda a: a,
}


def hostile_answers(name):
    solution = SOLUTIONS[name]
    answers = dict(HOSTILE)
    answers["a tuple of the right answers"] = lambda *args: (solution(*args), solution(*args))

    def nan_like(*args):
        answer = solution(*args)
        return np.full(np.shape(answer), np.nan) if not isinstance(answer, tuple) else tuple(
            np.full(np.shape(a), np.nan) if isinstance(a, np.ndarray) else a for a in answer)

    answers["NaN in the right shape"] = nan_like
    answers["the right answer + 1"] = lambda *args: _plus_one(solution(*args))
    return answers


def _plus_one(answer):
    try:
        return np.asarray(answer) + 1
    except Exception:  # noqa: BLE001 - a structured answer: break it differently
        return [answer]


HOSTILE_CASES = [(name, kind) for name in CHECKERS for kind in hostile_answers(name)]


@pytest.mark.parametrize(("name", "kind"), HOSTILE_CASES)
def test_hostile_answers_are_reported_not_raised(name, kind):
    result = checker(name)(hostile_answers(name)[kind])
    text = str(result)
    assert result.status == "fail" and not result, text
    assert text.startswith(f"✗ {pick(EXERCISES_BY_CHECKER[name].name)}: not yet")
    assert len(result.cases) >= 1 and "  case " in text, text
    if (name, kind) in HOSTILE_BUT_KNOWN:
        assert len(result.hints) == 1, text
    else:
        assert result.hints == [], text  # nothing hostile is one of the known mistakes


# "The right answer + 1" is a known mistake where the answer is an index: counting from 1.
HOSTILE_BUT_KNOWN = {("check_referent_rule", "the right answer + 1")}


@pytest.mark.parametrize("name", CHECKERS)
@pytest.mark.parametrize("thing", [42, "softmax_mine", None, np.ones(3)])
def test_a_non_callable_is_reported(name, thing):
    result = checker(name)(thing)
    assert result.status == "fail" and not result.cases
    assert f"{name} needs your function itself" in str(result)


def test_keyboard_interrupt_still_stops_a_checker():
    with pytest.raises(KeyboardInterrupt):
        minitf.check.check_softmax(raises(KeyboardInterrupt()))


# ------------------------------------------- wrong answers written as a learner would

def naive_softmax(x):
    return np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)


def whole_matrix_softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def softmax_minus_row_min(x):
    e = np.exp(x - x.min(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_minus_global_max(x):  # the forgotten axis
    e = np.exp(x - x.max())
    return e / e.sum(axis=-1, keepdims=True)


def softmax_without_keepdims(x):
    e = np.exp(x - x.max(axis=-1))
    return e / e.sum(axis=-1)


def softmax_sum_without_keepdims(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1)


def softmax_axis_0(x):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def attention_minus_global_max(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max())
    return e / e.sum(axis=-1, keepdims=True) @ V


def multi_head_without_b_o(x, params, num_heads):
    q, k, v = (split_heads(x @ params[f"W_{n}"] + params[f"b_{n}"], num_heads) for n in "qkv")
    weights = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1]))
    return merge_heads(weights @ v) @ params["W_o"]


def multi_head_b_o_per_head(x, params, num_heads):
    d_k = x.shape[-1] // num_heads
    q, k, v = (split_heads(x @ params[f"W_{n}"] + params[f"b_{n}"], num_heads) for n in "qkv")
    heads = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)) @ v  # (B, h, L, d_k)
    return sum(heads[:, i] @ params["W_o"][i * d_k:(i + 1) * d_k] + params["b_o"]
               for i in range(num_heads))


def pre_ln_mask_as_context(x, layer, mask):
    x = x + layer.self_attn(layer.norm1(x), mask)
    return x + layer.ffn(layer.norm2(x))


def cross_attention_by_hand(y, memory, attn, memory_mask, *, scale=None, biases=True,
                            straight=False):
    h, (B, L_t, d) = attn.num_heads, y.shape

    def heads(x, n):
        p = x @ attn.params[f"W_{n}"] + (attn.params[f"b_{n}"] if biases else 0)
        if straight:
            return p.reshape(B, h, x.shape[1], d // h)
        return p.reshape(B, x.shape[1], h, d // h).transpose(0, 2, 1, 3)

    q, k, v = heads(y, "q"), heads(memory, "k"), heads(memory, "v")
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(scale or d // h)
    if memory_mask is not None:
        scores = np.where(memory_mask, scores, -1e9)
    z = softmax(scores) @ v  # (B, h, L_t, d_k)
    return z.transpose(0, 2, 1, 3).reshape(B, L_t, d) @ attn.W_o + (attn.b_o if biases else 0)


def kv_scores_before_append(x_t, cache, W_q, W_k, W_v):  # the notebook's style
    q, k, v = x_t @ W_q, x_t @ W_k, x_t @ W_v
    scores = (cache["k"] @ q[..., None])[..., 0] / np.sqrt(q.shape[-1])  # (..., t)
    z = (softmax(scores)[..., None, :] @ cache["v"])[..., 0, :]  # 0 at step 1
    K = np.concatenate([cache["k"], k[..., None, :]], axis=-2)
    V = np.concatenate([cache["v"], v[..., None, :]], axis=-2)
    return z, {"k": K, "v": V}


def ce_zeroed_padding(logits, targets, eps, ignore_index=0):  # the slip of notebook 08's cell 9
    log_p = logits - logits.max(axis=-1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(axis=-1, keepdims=True))
    nll = -np.take_along_axis(log_p, targets[..., None], axis=-1)[..., 0]
    loss = (1 - eps) * nll - eps * log_p.mean(axis=-1)
    not_pad = targets != ignore_index
    return (loss * not_pad).mean()


def adam_eps_inside_root(param, grad, m, v, t, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad ** 2
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return param - lr * m_hat / np.sqrt(v_hat + eps), m, v


def unscaled_attend(q, K, V):
    w = np.exp(K @ q - (K @ q).max())
    return (w / w.sum()) @ V


def attention_with_dot_T(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def layer_norm_axis_0(x, gamma, beta, eps=1e-5):  # notebook 05's bug to find
    mean = x.mean(axis=0)
    var = x.var(axis=0)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def cross_attention_k_from_y(y, memory, attn, memory_mask):  # notebook 06's bug to find
    h = attn.num_heads
    q = split_heads(y @ attn.W_q + attn.b_q, h)
    k = split_heads(y @ attn.W_k + attn.b_k, h)
    v = split_heads(memory @ attn.W_v + attn.b_v, h)
    heads, _ = scaled_dot_product_attention(q, k, v, memory_mask)
    return merge_heads(heads) @ attn.W_o + attn.b_o


def post_ln_decoder(y, memory, layer, tgt_mask, memory_mask):
    y = layer.norm1(y + layer.self_attn(y, mask=tgt_mask))
    y = layer.norm2(y + layer.cross_attn(y, memory, mask=memory_mask))
    return layer.norm3(y + layer.ffn(y))


def greedy_first_position(model, src, prefix):
    logits = model.decode(prefix, model.encode(src), padding_mask(src))[:, 0]
    logits[:, 0] = -np.inf
    return logits.argmax(axis=-1)


def nucleus_with_le(probs, p):
    order = np.argsort(-probs, axis=-1)
    keep = np.zeros(probs.shape, dtype=bool)
    np.put_along_axis(keep, order, np.cumsum(np.take_along_axis(probs, order, -1), -1) <= p, -1)
    return keep


def adam_without_correction(param, grad, m, v, t, lr, beta1, beta2, eps):
    m *= beta1
    m += (1 - beta1) * grad
    v *= beta2
    v += (1 - beta2) * grad ** 2
    param -= lr * m / (np.sqrt(v) + eps)
    return param, m, v


def warmup_wrong_exponent(step, d_model, warmup, scale=1.0):
    return scale * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -0.5)


def ce_without_max(logits, targets, eps, ignore_index=0):
    p = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    nll = -np.log(np.take_along_axis(p, targets[..., None], axis=-1)[..., 0])
    smooth = -np.log(p).mean(axis=-1)
    return ((1 - eps) * nll + eps * smooth)[targets != ignore_index].mean()


LEARNER_MISTAKES = [
    ("check_softmax", naive_softmax, "exp(1000) overflows"),
    ("check_softmax", whole_matrix_softmax, "each row must sum to 1"),
    ("check_scaled_scores", lambda q, K: K @ q / len(q), "not by d_k"),
    ("check_single_query_attention", unscaled_attend, "still need dividing by √d_k"),
    ("check_attention", attention_with_dot_T, "K.T reverses all of them"),
    ("check_layer_norm", layer_norm_axis_0, "normalised over axis 0"),
    ("check_rms_norm", lambda x, g: g * x / np.sqrt(np.sum(x * x, -1, keepdims=True) + 1e-5),
     "the length of x"),
    ("check_local_causal_mask", lambda n, w: np.triu(np.ones((n, n), dtype=bool))
     & ~np.triu(np.ones((n, n), dtype=bool), k=w), "this is the transpose"),
    ("check_local_causal_mask", lambda n, w: np.tril(np.ones((n, n))) - np.tril(np.ones((n, n)),
                                                                                k=-w),
     "masks are boolean"),
    ("check_cross_attention", cross_attention_k_from_y, "K comes from memory too"),
    ("check_pre_ln_decoder_layer", post_ln_decoder, "post-LN order"),
    ("check_greedy_step", greedy_first_position, "logits[:, -1]"),
    ("check_top_p", nucleus_with_le, "past p was dropped"),
    ("check_top_k", lambda z, k: np.argsort(-z, axis=-1)[..., :k], "indices of the kept"),
    ("check_adam_step", adam_without_correction, "no bias correction"),
    ("check_warmup", warmup_wrong_exponent, "rising part is step · warmup^-1.5"),
    ("check_cross_entropy", ce_without_max, "np.exp overflowed"),
    ("check_softmax", softmax_minus_row_min, "not its smallest"),
    ("check_softmax", softmax_minus_global_max, "each row's own max"),
    ("check_softmax", softmax_without_keepdims, "keepdims=True"),
    ("check_softmax", softmax_sum_without_keepdims, "keepdims=True"),
    ("check_softmax", softmax_axis_0, "ran over axis 0"),
    ("check_scaled_scores", lambda q, K: K @ q / np.sqrt(len(K)), "len(K) is n"),
    ("check_attention", attention_minus_global_max, "each row's own max"),
    ("check_multi_head", multi_head_without_b_o, "b_o is missing"),
    ("check_multi_head", multi_head_b_o_per_head, "you added b_o once per head; add it once"),
    ("check_pre_ln_encoder_layer", pre_ln_mask_as_context, "pass it by keyword"),
    ("check_cross_attention", lambda *a: cross_attention_by_hand(*a, scale=a[0].shape[-1]),
     "divided by √d_model"),
    ("check_cross_attention", lambda *a: cross_attention_by_hand(*a, biases=False),
     "biases b_q, b_k, b_v, b_o are left out"),
    ("check_cross_attention", lambda *a: cross_attention_by_hand(*a, straight=True),
     "reshaped straight to (B, h, L, d_k)"),
    ("check_kv_cache", kv_scores_before_append, "before computing the scores"),
    ("check_cross_entropy", ce_zeroed_padding, "zeroed but still counted"),
    ("check_adam_step", adam_eps_inside_root, "ε goes outside the square root"),
]


@pytest.mark.parametrize(("name", "fn", "hint"), LEARNER_MISTAKES,
                         ids=[f"{n}-{h[:20]}" for n, _, h in LEARNER_MISTAKES])
def test_a_learner_written_mistake_gets_its_hint_and_no_other(name, fn, hint):
    result = checker(name)(fn)
    assert not result and len(result.hints) == 1 and hint in result.hints[0], str(result)


def test_a_bug_that_is_no_listed_mistake_gets_no_hint():
    # A softmax that forgets the max *and* sums over the whole array: the large entries look
    # like the overflow mistake, the matrices like the axis mistake, but neither explains
    # every case.
    def two_bugs(x):
        return np.exp(x) / np.exp(x).sum()

    result = minitf.check.check_softmax(two_bugs)
    assert not result and result.hints == [] and len(result.cases) == 9, str(result)


def test_the_report_says_which_case_failed_and_what_was_asked():
    text = str(minitf.check.check_softmax(naive_softmax))
    assert text.splitlines()[:4] == [
        "✗ softmax: not yet — 6 of 11 cases differ",
        "  asked: naive_softmax(x) should return the softmax of x along its last axis "
        "(each row sums to 1), without overflow",
        "  case 3: x (3,) = [1000. 999. 998.] — large entries",
        "    3 of 3 entries differ; first at [0]: got nan, expected 0.6652",
    ]
    assert "    hint: exp(1000) overflows" in text
    assert "case 4: x (2,) = [-1000. -1001.]" in text and "case 1" not in text


def test_cross_attention_by_hand_is_right_without_its_slips():
    assert minitf.check.check_cross_attention(cross_attention_by_hand)


@pytest.mark.parametrize(("x", "wrong"), [
    ([0.0, 1000.0], softmax_minus_row_min),
    ([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -1002.0]], softmax_minus_global_max)])
def test_softmax_cases_catch_a_shift_that_is_no_row_max(x, wrong):
    """Subtracting the row's min, or the whole array's max, gives NaN on a case of the
    checker's, where softmax does not."""
    cases = [np.asarray(c.args[0]).tolist() for c in EXERCISES_BY_CHECKER["check_softmax"].cases()]
    assert x in cases
    with np.errstate(all="ignore"):
        assert np.isnan(wrong(np.array(x))).any() and not np.isnan(softmax(np.array(x))).any()


def test_attention_cases_have_rows_far_apart_and_a_row_that_spans_far():
    """Rows more than 800 apart (the whole array's max underflows a row), and a row whose
    scores span more than 1500 (its mean is 750 and more below its max: exp overflows)."""
    apart = span = 0.0
    for case in EXERCISES_BY_CHECKER["check_attention"].cases():
        Q, K, _ = case.args
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        apart = max(apart, np.ptp(scores.max(axis=-1)))
        span = max(span, np.ptp(scores, axis=-1).max())
    assert apart > 800 and span > 1500


def test_one_head_is_one_head():
    for name in ("check_split_heads", "check_merge_heads", "check_multi_head"):
        notes = [pick(c.note) for c in EXERCISES_BY_CHECKER[name].cases()]
        assert any("1 head" in n and "1 heads" not in n for n in notes), notes
        assert not any("1 heads" in n for n in notes), notes


def test_a_helper_that_is_not_written_is_named():
    def softmax_mine(x):
        raise NotImplementedError  # your code here

    def attend_mine(q, K, V):
        return softmax_mine(K @ q / np.sqrt(len(q))) @ V

    result = minitf.check.check_single_query_attention(attend_mine)
    assert result.status == "fail"
    assert "raised NotImplementedError in softmax_mine() — is it written yet?" in str(result)


def test_checkers_do_not_print(capsys):
    for name in CHECKERS:
        checker(name)(SOLUTIONS[name])
        checker(name)(HOSTILE["NaN everywhere"])
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


# ---------------------------------------------------- right, however it is written

def attend_by_loop(q, K, V):
    scores = [np.dot(q, k) / np.sqrt(len(q)) for k in K]
    alphas = np.exp(np.array(scores) - max(scores))
    return sum(a * v for a, v in zip(alphas / alphas.sum(), V))


def temperature_by_power(logits, T):
    p = softmax(logits) ** (1 / T)  # exp(-8 / 0.1) underflows to 0 either way
    return p / p.sum(axis=-1, keepdims=True)


def log_softmax_backward_by_jacobian(s, d_logp):
    out = np.empty_like(s)
    for index in np.ndindex(s.shape[:-1]):
        alpha = softmax(s[index])
        jacobian = np.eye(len(alpha)) - alpha[None, :]  # ∂ logp_i / ∂s_j = δ_ij − α_j
        out[index] = jacobian.T @ d_logp[index]
    return out


def warmup_with_branches(step, d_model, warmup, scale=1.0):
    rate = step * warmup ** -1.5 if step < warmup else step ** -0.5
    return scale * rate / np.sqrt(d_model)


OTHER_RIGHT_ANSWERS = [
    ("check_single_query_attention", attend_by_loop),
    ("check_temperature", temperature_by_power),
    ("check_top_k", lambda z, k: z >= np.sort(z, axis=-1)[..., -k:][..., :1]),
    ("check_log_softmax_backward", log_softmax_backward_by_jacobian),
    ("check_warmup", warmup_with_branches),
    ("check_pad", lambda seqs, pad_id: [list(s) + [pad_id] * (max(map(len, seqs)) - len(s))
                                        for s in seqs]),
    ("check_encode_source", lambda text: [tasks.SOURCE_VOCAB.id(w) for w in text.split()]
     + [tasks.EOS_ID]),
    ("check_attention_flops", lambda n, d, d_k, d_v: float(2 * n * (d * (2 * d_k + d_v)
                                                                    + n * (d_k + d_v)))),
    ("check_local_causal_mask", lambda n, w: np.tril(np.ones((n, n), dtype=bool))
     & ~np.tril(np.ones((n, n), dtype=bool), k=-w)),
]


@pytest.mark.parametrize(("name", "fn"), OTHER_RIGHT_ANSWERS,
                         ids=[name for name, _ in OTHER_RIGHT_ANSWERS])
def test_a_right_answer_written_another_way_passes(name, fn):
    result = checker(name)(fn)
    assert result.passed, str(result)

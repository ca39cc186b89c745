"""Exercises of notebook 09: the rule behind "it", written by hand, and the gradient of the
pointer's loss with respect to the query of "it" (cases, references, known mistakes)."""

import numpy as np

from ..attention import softmax
from ..tasks import referent
from .core import Case, Exercise, Mistake

__all__ = ["check_referent_rule", "check_pointer_gradient"]


# ------------------------------------------------------------ the rule by hand

_NOUNS = set(referent.LIVING) | set(referent.PLACES)


def _nouns(words):
    return [i for i, w in enumerate(words) if w in _NOUNS]


def _rule(words, swapped=False):
    living = (words[-1] in referent.LIVING_ADJECTIVES) != swapped
    kind = referent.LIVING if living else referent.PLACES
    return next(i for i, w in enumerate(words) if w in kind)


def _rule_cases():
    s = referent.sentence
    examples = [
        s("animal", "street", "tired"), s("animal", "street", "wide"),
        s("animal", "street", "wide", passive=True), s("animal", "street", "tired", passive=True),
        s("dog", "river", "hungry", verb="reach", opener=("yesterday",), because="since"),
        s("girl", "bridge", "busy", verb="use", passive=True, opener=("that", "morning")),
        *referent.sentences(90, 3), *referent.sentences(91, 3, held_out=True),
    ]
    return [Case((list(e.words),), {"en": " ".join(e.words), "zh": "句子 " + " ".join(e.words)})
            for e in examples]


REFERENT_RULE = Exercise(
    name="referent_rule", checker="check_referent_rule", args=("words",),
    task={"en": "the index (an int, counting from 0) of the word that 'it' refers to",
          "zh": "“it” 所指的那个单词的下标（一个 int，从 0 开始数）"},
    cases=_rule_cases, reference=_rule,
    mistakes=(
        Mistake({"en": "you always chose the first noun; the adjective decides which noun "
                       "'it' is, and the passive ('the street wasn't crossed by the animal') "
                       "puts the place first",
                 "zh": "你总是选第一个名词；“it” 指哪个名词由形容词决定，而且被动句（“the "
                       "street wasn't crossed by the animal”）会把地点放在前面"},
                lambda w: _nouns(w)[0]),
        Mistake({"en": "you always chose the noun nearest to 'it'; the adjective decides, not "
                       "the distance",
                 "zh": "你总是选离 “it” 最近的名词；起决定作用的是形容词，不是距离"},
                lambda w: _nouns(w)[-1]),
        Mistake({"en": "you always chose the living noun; with an adjective for places (wide, "
                       "busy, ...) 'it' is the place",
                 "zh": "你总是选有生命的名词；形容词是描述地点的（wide、busy 等）时，“it” 指"
                       "的是地点"},
                lambda w: next(i for i in _nouns(w) if w[i] in referent.LIVING)),
        Mistake({"en": "you always chose the place; with an adjective for living things "
                       "(tired, scared, ...) 'it' is the living noun",
                 "zh": "你总是选地点；形容词是描述生物的（tired、scared 等）时，“it” 指的是"
                       "有生命的名词"},
                lambda w: next(i for i in _nouns(w) if w[i] in referent.PLACES)),
        Mistake({"en": "that is the index of the 'the' before the noun",
                 "zh": "这是名词前面那个 “the” 的下标"}, lambda w: _rule(w) - 1),
        Mistake({"en": "return the noun's index in the sentence, not its distance from 'it'",
                 "zh": "要返回名词在句子中的下标，而不是它到 “it” 的距离"},
                lambda w: _rule(w) - w.index("it")),
        Mistake({"en": "indices count from 0, as Python's do: words[0] is the first word",
                 "zh": "下标从 0 开始数，和 Python 一样：words[0] 是第一个单词"},
                lambda w: _rule(w) + 1),
        Mistake({"en": "the two kinds are swapped: an adjective for living things (tired, "
                       "scared, ...) points at the living noun, one for places (wide, busy, "
                       "...) at the place",
                 "zh": "两类弄反了：描述生物的形容词（tired、scared 等）指向有生命的名词，"
                       "描述地点的（wide、busy 等）指向地点"},
                lambda w: _rule(w, swapped=True)),
        Mistake({"en": "that is the index of the adjective at the end; return the index of the "
                       "noun it describes",
                 "zh": "这是句末那个形容词的下标；要返回它所描述的那个名词的下标"},
                lambda w: len(w) - 1),
    ))


# -------------------------------------------------------- the pointer's gradient

def _pointer_gradient(q, K, target, *, scale=True, onehot=True, sign=1.0):
    """∂/∂q of −log softmax(K q / √d_k)[target] = Kᵀ (p − onehot(target)) / √d_k; the
    flags make the usual mistakes."""
    root = np.sqrt(len(q))
    ds = softmax(K @ q / root)
    if onehot:
        ds[target] -= 1
    return sign * (K.T @ ds) / (root if scale else 1.0)


def _scores_gradient(q, K, target, scaled=True):
    """∂loss/∂scores = p − onehot(target), p the softmax of the (scaled) scores."""
    p = softmax(K @ q / (np.sqrt(len(q)) if scaled else 1.0))
    p[target] -= 1
    return p


def _pointer_cases():
    rng = np.random.default_rng(92)
    return [
        Case((rng.standard_normal(2), rng.standard_normal((5, 2)), 1),
             {"en": "5 words, d_k = 2", "zh": "5 个单词，d_k = 2"}),
        Case((rng.standard_normal(4), 2 * rng.standard_normal((11, 4)), 7),
             {"en": "a sentence of 11 words", "zh": "一个 11 个单词的句子"}),
        Case((3 * rng.standard_normal(8), 3 * rng.standard_normal((14, 8)), 0),
             {"en": "large scores: p is confident", "zh": "分数很大：p 很确定"}),
    ]


POINTER_GRADIENT = Exercise(
    name="pointer_gradient", checker="check_pointer_gradient", args=("q", "K", "target"),
    task={"en": "∂loss/∂q (d_k,) for loss = −log softmax(K q / √d_k)[target]",
          "zh": "∂loss/∂q (d_k,)，其中 loss = −log softmax(K q / √d_k)[target]"},
    cases=_pointer_cases, reference=_pointer_gradient,
    mistakes=(
        Mistake({"en": "the factor 1/√d_k is missing: the scores are K q / √d_k, so the "
                       "chain rule brings a 1/√d_k",
                 "zh": "少了因子 1/√d_k：分数是 K q / √d_k，所以链式法则会带出一个 1/√d_k"},
                lambda q, K, t: _pointer_gradient(q, K, t, scale=False)),
        Mistake({"en": "divide by √d_k, not d_k", "zh": "要除以 √d_k，而不是 d_k"},
                lambda q, K, t: _pointer_gradient(q, K, t) / np.sqrt(len(q))),
        Mistake({"en": "the sign is flipped: ∂loss/∂scores = p − onehot (the loss falls as "
                       "the target's probability rises)",
                 "zh": "符号反了：∂loss/∂scores = p − onehot（目标的概率升高时，损失下降）"},
                lambda q, K, t: _pointer_gradient(q, K, t, sign=-1.0)),
        Mistake({"en": "the − onehot(target) is missing: ∂loss/∂scores = p − onehot",
                 "zh": "少了 − onehot(target)：∂loss/∂scores = p − onehot"},
                lambda q, K, t: _pointer_gradient(q, K, t, onehot=False)),
        Mistake({"en": "only −k_target / √d_k: every key also pushes q away with its "
                       "probability, Σ_j p_j k_j / √d_k",
                 "zh": "只有 −k_target / √d_k：每个键还会按自己的概率把 q 推开，即 "
                       "Σ_j p_j k_j / √d_k"},
                lambda q, K, t: -K[t] / np.sqrt(len(q))),
        Mistake({"en": "K is (L, d_k) and ∂loss/∂scores is (L,): the gradient is Kᵀ (p − onehot) "
                       "/ √d_k, K.T @ …",
                 "zh": "K 的形状是 (L, d_k)，∂loss/∂scores 是 (L,)：梯度是 Kᵀ (p − onehot) / √d_k，"
                       "即 K.T @ …"},
                lambda q, K, t: K @ _scores_gradient(q, K, t) / np.sqrt(len(q))),
        Mistake({"en": "p is the softmax of the scaled scores, softmax(K q / √d_k): scale inside "
                       "the softmax too",
                 "zh": "p 是缩放后分数的 softmax，即 softmax(K q / √d_k)：softmax 里面也要缩放"},
                lambda q, K, t: K.T @ _scores_gradient(q, K, t, scaled=False) / np.sqrt(len(q))),
    ))


def check_referent_rule(fn):
    """fn(words: list of str) -> the index of the word "it" refers to, for sentences of
    minitf.referent (both orders, every opening, training and held-out pairs).
    An exercise of notebook 09."""
    return REFERENT_RULE.check(fn)


def check_pointer_gradient(fn):
    """fn(q (d_k,), K (L, d_k), target int) -> ∂loss/∂q (d_k,) for the pointer's loss
    −log softmax(K q / √d_k)[target]. An exercise of notebook 09."""
    return POINTER_GRADIENT.check(fn)


EXERCISES = [REFERENT_RULE, POINTER_GRADIENT]

"""Exercises of notebook 11: the targets that score only the answer, and the share of the
English words in the attention of the rows that write the answer (cases, references, known
mistakes)."""

import numpy as np

from ..tasks.sequence import SEP_ID, sequence_ids
from ..tokens import PAD_ID, pad
from .core import Case, Exercise, Mistake

__all__ = ["check_answer_targets", "check_words_share"]


# ------------------------------------------------------- targets: the answer only

def _sequences(numbers):
    """(tokens, next_ids) of whole sequences, (B, L) each: the inputs and the ids after them,
    nothing masked yet (tasks.sequence.make_batch before it replaces the prompt's targets)."""
    whole = [sequence_ids(n) for n in numbers]
    return pad([s[:-1] for s in whole]), pad([s[1:] for s in whole])


def _answer_targets(tokens, next_ids, *, sep_of=None, first=0, flip=False):
    """next_ids with the targets of the positions before first + each row's <sep> replaced
    by <pad>: the answer only (or, flipped, the prompt only). `sep_of` finds <sep>."""
    sep = np.argmax((tokens if sep_of is None else sep_of(tokens, next_ids)) == SEP_ID, axis=1)
    prompt = np.arange(tokens.shape[1]) < sep[:, None] + first  # (B, L)
    if flip:
        prompt = ~prompt
    return np.where(prompt, PAD_ID, next_ids)


def _one_sep_for_all(tokens, next_ids):
    sep = np.argmax(tokens[0] == SEP_ID)  # the first row's <sep>, for every row
    return np.where(np.arange(tokens.shape[1]) < sep, PAD_ID, next_ids)


ANSWER_TARGETS = Exercise(
    name="answer_targets", checker="check_answer_targets", args=("tokens", "next_ids"),
    task={"en": "next_ids with <pad> (id 0) at every position before that row's <sep> in "
                "tokens: only the answer's targets (from the position of <sep> on) are kept",
          "zh": "next_ids，但在 tokens 里该行 <sep> 之前的每个位置都换成 <pad>（编号 0）："
                "只保留答案的目标（从 <sep> 所在的位置起）"},
    cases=lambda: [Case(_sequences([1005, 12]), {
                       "en": "one thousand five, twelve: two prompt lengths, padding",
                       "zh": "one thousand five 和 twelve：两种提示长度，有填充"}),
                   Case(_sequences([1047]), {"en": "one thousand forty seven alone",
                                             "zh": "只有 one thousand forty seven"}),
                   Case(_sequences([7, 9999, 110]), {
                       "en": "seven, nine thousand nine hundred ninety nine, one hundred ten",
                       "zh": "三个数：seven、nine thousand nine hundred ninety nine、"
                             "one hundred ten"})],
    reference=_answer_targets,
    mistakes=(
        Mistake({"en": "the position of <sep> is scored too: its target is the answer's first "
                       "character, the one the model must write from the prompt alone. Keep the "
                       "targets from <sep>'s position on (>=, not >)",
                 "zh": "<sep> 所在的位置也要计分：它的目标是答案的第一个汉字，模型只能凭提示"
                       "写出它。要从 <sep> 的位置起保留目标（>=，不是 >）"},
                lambda tokens, next_ids: _answer_targets(tokens, next_ids, first=1)),
        Mistake({"en": "that keeps the prompt's targets and drops the answer's: replace the "
                       "targets *before* <sep> by <pad>",
                 "zh": "这样保留了提示的目标、丢掉了答案的：要把 <sep> *之前*的目标换成 <pad>"},
                lambda tokens, next_ids: _answer_targets(tokens, next_ids, flip=True)),
        Mistake({"en": "each row has its own <sep>: the prompts differ in length, so find it "
                       "row by row (np.argmax(tokens == SEP_ID, axis=1)), not once for the "
                       "whole batch",
                 "zh": "每一行有自己的 <sep>：提示的长度各不相同，所以要逐行去找"
                       "（np.argmax(tokens == SEP_ID, axis=1)），而不是整个批次只找一次"},
                _one_sep_for_all),
        Mistake({"en": "<sep> was looked up in next_ids, where it stands one position earlier: "
                       "that also scores the position whose target is <sep> itself, a word of "
                       "the prompt. Find <sep> in tokens",
                 "zh": "在 next_ids 里找 <sep>，它在那里早一个位置：这样目标是 <sep> 本身的"
                       "那个位置（提示里的一个词）也被计分了。要在 tokens 里找 <sep>"},
                lambda tokens, next_ids: _answer_targets(
                    tokens, next_ids, sep_of=lambda t, n: n)),
    ))


# --------------------------------------------- the words' share of the answer's rows

def _causal_weights(rng, heads, L):
    """Random attention weights (heads, L, L) under the causal mask: each row sums to 1."""
    scores = np.where(np.tril(np.ones((L, L), dtype=bool)),
                      2 * rng.standard_normal((heads, L, L)), -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


def _words_share_cases():
    rng = np.random.default_rng(111)
    return [Case((_causal_weights(rng, 2, 7), 3), {
                "en": "2 heads, 7 positions, <sep> at 3: two words",
                "zh": "2 个头，7 个位置，<sep> 在位置 3：两个词"}),
            Case((_causal_weights(rng, 4, 11), 5), {
                "en": "4 heads, 11 positions, <sep> at 5 (as in the sequence of one thousand "
                      "forty seven)",
                "zh": "4 个头，11 个位置，<sep> 在位置 5（就像 <bos> one thousand forty seven "
                      "<sep> 一 千 零 四 十）"}),
            Case((_causal_weights(rng, 1, 5), 2), {"en": "1 head, 5 positions, one word",
                                                   "zh": "1 个头，5 个位置，一个词"})]


def _words_share(weights, sep, *, rows_from=0, keys=(1, 0), mean=False):
    """The weight each row from sep + rows_from on gives the keys keys[0] .. sep + keys[1] − 1."""
    block = weights[:, sep + rows_from:, keys[0]:sep + keys[1]]  # (h, rows, keys)
    return block.mean(axis=-1) if mean else block.sum(axis=-1)


WORDS_SHARE = Exercise(
    name="words_share", checker="check_words_share", args=("weights", "sep"),
    task={"en": "an array (h, L − sep): for every head and every row from sep on, the sum of "
                "its weights on the English words, the keys 1 .. sep − 1",
          "zh": "一个 (h, L − sep) 的数组：对每个头、从 sep 起的每一行，求它落在英文单词"
                "（键 1 .. sep − 1）上的权重之和"},
    cases=_words_share_cases, reference=_words_share,
    mistakes=(
        Mistake({"en": "the row of <sep> writes the answer's first character: start at row "
                       "sep, not sep + 1",
                 "zh": "<sep> 那一行写出答案的第一个汉字：要从第 sep 行开始，不是 sep + 1"},
                lambda weights, sep: _words_share(weights, sep, rows_from=1)),
        Mistake({"en": "<bos> (key 0) is not a word: the words are the keys 1 .. sep − 1",
                 "zh": "<bos>（键 0）不是单词：单词是键 1 .. sep − 1"},
                lambda weights, sep: _words_share(weights, sep, keys=(0, 0))),
        Mistake({"en": "<sep> (key sep) is not a word: the words end at key sep − 1",
                 "zh": "<sep>（键 sep）不是单词：单词到键 sep − 1 为止"},
                lambda weights, sep: _words_share(weights, sep, keys=(1, 1))),
        Mistake({"en": "that is the whole prompt, <bos> and <sep> included: the words are "
                       "only the keys 1 .. sep − 1",
                 "zh": "这是整个提示，连 <bos> 和 <sep> 也算进去了：单词只是键 1 .. sep − 1"},
                lambda weights, sep: _words_share(weights, sep, keys=(0, 1))),
        Mistake({"en": "rows are queries and columns keys: weights[:, sep:, 1:sep]. The block "
                       "you summed is the words' rows reading the answer's columns, which lies "
                       "above the diagonal, where the causal mask leaves only zeros",
                 "zh": "行是查询、列是键：weights[:, sep:, 1:sep]。你求和的那一块是单词的行读"
                       "答案的列，在对角线上方，因果掩码在那里只留下 0"},
                lambda weights, sep: weights[:, 1:sep, sep:].sum(axis=1)),
        Mistake({"en": "a share is the sum of the weights (a row's weights add up to 1), not "
                       "their mean",
                 "zh": "占比是权重之和（一行的权重加起来是 1），不是它们的平均值"},
                lambda weights, sep: _words_share(weights, sep, mean=True)),
    ))


def check_answer_targets(fn):
    """fn(tokens, next_ids) -> the targets with the prompt's replaced by <pad>. An exercise of
    notebook 11 (§2)."""
    return ANSWER_TARGETS.check(fn)


def check_words_share(fn):
    """fn(weights, sep) -> (h, L − sep): the English words' share of the attention of each row
    that writes the answer. An exercise of notebook 11 (§6)."""
    return WORDS_SHARE.check(fn)


EXERCISES = [ANSWER_TARGETS, WORDS_SHARE]

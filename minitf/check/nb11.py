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
    task="next_ids with <pad> (id 0) at every position before that row's <sep> in tokens: "
         "only the answer's targets (from the position of <sep> on) are kept",
    cases=lambda: [Case(_sequences([1005, 12]), "one thousand five, twelve: two prompt "
                        "lengths, padding"),
                   Case(_sequences([1047]), "one thousand forty seven alone"),
                   Case(_sequences([7, 9999, 110]), "seven, nine thousand nine hundred ninety "
                        "nine, one hundred ten")],
    reference=_answer_targets,
    mistakes=(
        Mistake("the position of <sep> is scored too: its target is the answer's first "
                "character, the one the model must write from the prompt alone. Keep the "
                "targets from <sep>'s position on (>=, not >)",
                lambda tokens, next_ids: _answer_targets(tokens, next_ids, first=1)),
        Mistake("that keeps the prompt's targets and drops the answer's: replace the targets "
                "*before* <sep> by <pad>",
                lambda tokens, next_ids: _answer_targets(tokens, next_ids, flip=True)),
        Mistake("each row has its own <sep>: the prompts differ in length, so find it row by "
                "row (np.argmax(tokens == SEP_ID, axis=1)), not once for the whole batch",
                _one_sep_for_all),
        Mistake("<sep> was looked up in next_ids, where it stands one position earlier: that "
                "also scores the position whose target is <sep> itself, a word of the prompt. "
                "Find <sep> in tokens",
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
    return [Case((_causal_weights(rng, 2, 7), 3), "2 heads, 7 positions, <sep> at 3: "
                 "two words"),
            Case((_causal_weights(rng, 4, 11), 5), "4 heads, 11 positions, <sep> at 5 (as in "
                 "<bos> one thousand forty seven <sep> 一 千 零 四 十)"),
            Case((_causal_weights(rng, 1, 5), 2), "1 head, 5 positions, one word")]


def _words_share(weights, sep, *, rows_from=0, keys=(1, 0), mean=False):
    """The weight each row from sep + rows_from on gives the keys keys[0] .. sep + keys[1] − 1."""
    block = weights[:, sep + rows_from:, keys[0]:sep + keys[1]]  # (h, rows, keys)
    return block.mean(axis=-1) if mean else block.sum(axis=-1)


WORDS_SHARE = Exercise(
    name="words_share", checker="check_words_share", args=("weights", "sep"),
    task="an array (h, L − sep): for every head and every row from sep on, the sum of its "
         "weights on the English words, the keys 1 .. sep − 1",
    cases=_words_share_cases, reference=_words_share,
    mistakes=(
        Mistake("the row of <sep> writes the answer's first character: start at row sep, "
                "not sep + 1", lambda weights, sep: _words_share(weights, sep, rows_from=1)),
        Mistake("<bos> (key 0) is not a word: the words are the keys 1 .. sep − 1",
                lambda weights, sep: _words_share(weights, sep, keys=(0, 0))),
        Mistake("<sep> (key sep) is not a word: the words end at key sep − 1",
                lambda weights, sep: _words_share(weights, sep, keys=(1, 1))),
        Mistake("that is the whole prompt, <bos> and <sep> included: the words are only the "
                "keys 1 .. sep − 1", lambda weights, sep: _words_share(weights, sep,
                                                                        keys=(0, 1))),
        Mistake("rows are queries and columns keys: weights[:, sep:, 1:sep]. The block you "
                "summed is the words' rows reading the answer's columns, which lies above the "
                "diagonal, where the causal mask leaves only zeros",
                lambda weights, sep: weights[:, 1:sep, sep:].sum(axis=1)),
        Mistake("a share is the sum of the weights (a row's weights add up to 1), not their "
                "mean", lambda weights, sep: _words_share(weights, sep, mean=True)),
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

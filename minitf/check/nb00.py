"""Exercises of notebook 00: text to ids, ids to vectors, padding (cases, references,
known mistakes)."""

import numpy as np

from .. import tasks
from .core import Case, Exercise, Mistake

__all__ = ["check_embedding_lookup", "check_encode_source", "check_pad"]


def _pad_left(sequences, pad_id):
    longest = max(len(s) for s in sequences)
    return np.array([[pad_id] * (longest - len(s)) + list(s) for s in sequences])


ENCODE_SOURCE = Exercise(
    name="encode_source", checker="check_encode_source", args=("text",),
    task="the source ids of text: one id per word, then <eos> (as tasks.encode_source)",
    cases=lambda: [Case(("one thousand five",)), Case(("one hundred ten",)),
                   Case(("twelve",), "one word"),
                   Case(("nine thousand nine hundred ninety nine",), "six words")],
    reference=tasks.encode_source,
    mistakes=(
        Mistake("end the ids with <eos> (id 2)",
                lambda text: tasks.encode_source(text)[:-1]),
        Mistake("the source side has no <bos>: words, then <eos> only",
                lambda text: np.concatenate([[tasks.BOS_ID], tasks.encode_source(text)])),
    ))

EMBEDDING_LOOKUP = Exercise(
    name="embedding lookup", checker="check_embedding_lookup", args=("weight", "ids"),
    task="weight[ids]: one row of weight per id, shape ids.shape + (d_model,)",
    cases=lambda: _embedding_cases(),
    reference=lambda weight, ids: weight[ids],
    mistakes=(
        Mistake("the vectors are the rows of weight (vocab_size, d_model), so pick rows, "
                "not columns", lambda weight, ids: weight.T[..., ids]),
        Mistake("the one-hot array needs the shape ids.shape + (vocab_size,): one 1 per id",
                lambda weight, ids: np.eye(weight.shape[0])[ids.reshape(-1)] @ weight),
    ))


def _embedding_cases():
    rng = np.random.default_rng(4)
    weight = rng.normal(size=(10, 3))
    return [Case((weight, np.array([1, 5, 5, 2])), "one sentence"),
            Case((weight, np.array([[1, 7, 2, 0], [9, 2, 0, 0]])), "a batch of two"),
            Case((rng.normal(size=(34, 8)), np.array([[5, 33, 9, 2]])), "a batch of one")]


PAD = Exercise(
    name="pad", checker="check_pad", args=("sequences", "pad_id"),
    task="a (B, max_len) int array, each row's ids first, pad_id filling the rest",
    cases=lambda: [Case(([[5, 33, 8, 2], [5, 32, 14, 2], [16, 2]], 0)),
                   Case(([[1, 2, 3], [4]], 9), "pad_id 9"),
                   Case(([[7, 7]], 0), "one sequence")],
    reference=tasks.pad,
    mistakes=(
        Mistake("put the padding at the end of each row, after its <eos>", _pad_left),
        Mistake("fill with the pad_id argument, not always 0",
                lambda sequences, pad_id: tasks.pad(sequences, 0)),
    ))


def check_encode_source(fn):
    """fn(text) -> the source ids of `text`: one id per word, then <eos> (tasks.encode_source).
    An exercise of notebook 00 (§2)."""
    return ENCODE_SOURCE.check(fn)


def check_embedding_lookup(fn):
    """fn(weight, ids) -> weight[ids]: one row of `weight` per id, shape ids.shape + (d_model,).
    An exercise of notebook 00 (§3)."""
    return EMBEDDING_LOOKUP.check(fn)


def check_pad(fn):
    """fn(sequences, pad_id) -> (B, max_len) int array, shorter rows filled at the end.
    An exercise of notebook 00 (§2)."""
    return PAD.check(fn)


EXERCISES = [ENCODE_SOURCE, EMBEDDING_LOOKUP, PAD]

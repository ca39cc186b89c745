"""Checkers for the exercises of notebook 00: text to ids, ids to vectors, padding."""

import numpy as np

from .. import tasks
from .core import check_function
from .nb01 import add_hints

__all__ = ["check_embedding_lookup", "check_encode_source", "check_pad"]


def check_encode_source(fn):
    """fn(text) -> the source ids of `text`: one id per word, then <eos> (tasks.encode_source)."""
    cases = [("one thousand five",), ("one hundred ten",), ("twelve",),
             ("nine thousand nine hundred ninety nine",)]
    result = check_function("encode_source", fn, tasks.encode_source, cases)
    mistakes = [
        ("end the ids with <eos> (id 2)",
         lambda text: tasks.encode_source(text)[:-1]),
        ("the source side has no <bos>: words, then <eos> only",
         lambda text: np.concatenate([[tasks.BOS_ID], tasks.encode_source(text)])),
    ]
    return add_hints(result, fn, cases, mistakes)


def embedding_cases():
    """(weight (vocab, d_model), ids): one sentence (L,), then a batch (B, L)."""
    rng = np.random.default_rng(4)
    weight = rng.normal(size=(10, 3))
    return [(weight, np.array([1, 5, 5, 2])),
            (weight, np.array([[1, 7, 2, 0], [9, 2, 0, 0]])),
            (rng.normal(size=(34, 8)), np.array([[5, 33, 9, 2]]))]


def check_embedding_lookup(fn):
    """fn(weight, ids) -> weight[ids]: one row of `weight` per id, shape ids.shape + (d_model,)."""
    cases = embedding_cases()
    result = check_function("embedding lookup", fn, lambda weight, ids: weight[ids], cases)
    mistakes = [
        ("the vectors are the rows of weight (vocab_size, d_model), so pick rows, not columns",
         lambda weight, ids: weight.T[..., ids]),
        ("the one-hot array needs the shape ids.shape + (vocab_size,): one 1 per id",
         lambda weight, ids: np.eye(weight.shape[0])[ids.reshape(-1)] @ weight),
    ]
    return add_hints(result, fn, cases, mistakes)


def check_pad(fn):
    """fn(sequences, pad_id) -> (B, max_len) int array, shorter rows filled at the end."""
    cases = [([[5, 33, 8, 2], [5, 32, 14, 2], [16, 2]], 0),
             ([[1, 2, 3], [4]], 9),
             ([[7, 7]], 0)]
    result = check_function("pad", fn, tasks.pad, cases)

    def pad_left(sequences, pad_id):
        longest = max(len(s) for s in sequences)
        return np.array([[pad_id] * (longest - len(s)) + list(s) for s in sequences])

    mistakes = [
        ("put the padding at the end of each row, after its <eos>", pad_left),
        ("fill with the pad_id argument, not always 0",
         lambda sequences, pad_id: tasks.pad(sequences, 0)),
    ]
    return add_hints(result, fn, cases, mistakes)

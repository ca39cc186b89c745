"""The checkers of notebook 00 pass right answers, name the mistake in wrong ones, never raise."""

import numpy as np

from minitf import tasks
from minitf.check import check_embedding_lookup, check_encode_source, check_pad


def todo(*args):
    raise NotImplementedError  # your code here


def encode(text):
    return np.array([tasks.SOURCE_VOCAB.id(w) for w in text.split()] + [tasks.EOS_ID])


def test_encode_source():
    result = check_encode_source(encode)
    assert result and "✓ encode_source: pass" in str(result) and "4 cases agree" in str(result)
    assert check_encode_source(lambda text: tasks.SOURCE_VOCAB.encode(text.split()) + [2])
    assert "not written yet" in str(check_encode_source(todo))


def test_encode_source_mistakes_are_named():
    no_eos = str(check_encode_source(lambda text: encode(text)[:-1]))
    assert "case 1: shape (3,), expected (4,)" in no_eos
    assert "hint: end the ids with <eos> (id 2)" in no_eos
    with_bos = str(check_encode_source(lambda text: [1] + list(encode(text))))
    assert "hint: the source side has no <bos>" in with_bos
    crash = str(check_encode_source(lambda text: [tasks.TARGET_VOCAB.id(w) for w in text.split()]))
    assert "raised ValueError: 'one' is not in the vocabulary" in crash


def test_embedding_lookup():
    assert check_embedding_lookup(lambda weight, ids: weight[ids])

    def one_hot(weight, ids):
        return np.eye(weight.shape[0])[ids] @ weight  # (..., vocab) @ (vocab, d_model)

    result = check_embedding_lookup(one_hot)
    assert result and "3 cases agree" in str(result)
    assert "not written yet" in str(check_embedding_lookup(todo))


def test_embedding_lookup_mistakes_are_named():
    columns = str(check_embedding_lookup(lambda weight, ids: weight.T[..., ids]))
    assert "case 1: shape (3, 4), expected (4, 3)" in columns
    assert "pick rows, not columns" in columns
    flat = str(check_embedding_lookup(
        lambda weight, ids: np.eye(weight.shape[0])[ids.reshape(-1)] @ weight))
    assert "case 2: shape (8, 3), expected (2, 4, 3)" in flat
    assert "ids.shape + (vocab_size,)" in flat


def pad(sequences, pad_id=0):
    longest = max(len(s) for s in sequences)
    return np.array([list(s) + [pad_id] * (longest - len(s)) for s in sequences])


def test_pad():
    result = check_pad(pad)
    assert result and "✓ pad: pass" in str(result)
    assert "not written yet" in str(check_pad(todo))


def test_pad_mistakes_are_named():
    def pad_left(sequences, pad_id=0):
        longest = max(len(s) for s in sequences)
        return np.array([[pad_id] * (longest - len(s)) + list(s) for s in sequences])

    left = str(check_pad(pad_left))
    assert "case 1: 4 of 12 entries differ" in left and "at the end of each row" in left
    zeros = str(check_pad(lambda sequences, pad_id: pad(sequences)))
    assert "case 2: 2 of 6 entries differ; first at index (1, 1): got 0, expected 9" in zeros
    assert "not always 0" in zeros
    ragged = str(check_pad(lambda sequences, pad_id: [list(s) for s in sequences]))
    assert "✗ pad: not yet" in ragged

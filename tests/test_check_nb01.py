"""The checkers of notebook 01 pass right answers, name the mistake in wrong ones, never raise."""

import numpy as np

from minitf.check import check_scaled_scores, check_single_query_attention, check_softmax


def todo(*args):
    raise NotImplementedError  # your code here


def stable_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def test_softmax_right_answer_passes():
    result = check_softmax(stable_softmax)
    assert result and "✓ softmax: pass" in str(result)
    assert "5 cases agree with minitf" in str(result)


def test_softmax_not_written_yet():
    result = check_softmax(todo)
    assert not result and "not written yet" in str(result)
    assert "hint" not in str(result)


def test_naive_softmax_overflow_is_named():
    result = check_softmax(lambda x: np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True))
    text = str(result)
    assert not result
    assert "case 3: contains nan" in text and "(overflow?)" in text
    assert "hint: exp(1000) overflows" in text


def test_softmax_over_the_whole_matrix_is_named():
    def whole_matrix(x):
        e = np.exp(x - x.max())
        return e / e.sum()

    text = str(check_softmax(whole_matrix))
    assert "case 5: 6 of 6 entries differ" in text
    assert "hint: each row must sum to 1" in text


def test_softmax_that_raises_is_reported():
    result = check_softmax(lambda x: x[5])
    assert not result and "raised IndexError" in str(result)


def test_scaled_scores():
    assert check_scaled_scores(lambda q, K: K @ q / np.sqrt(len(q)))
    assert check_scaled_scores(lambda q, K: np.array([q @ k for k in K]) / np.sqrt(q.size))
    assert "not written yet" in str(check_scaled_scores(todo))
    unscaled = str(check_scaled_scores(lambda q, K: K @ q))
    assert ("case 1: 2 of 2 entries differ; first at index (0,): got 112.0, expected 14.0"
            in unscaled)
    assert "hint: the scores still need dividing by √d_k" in unscaled
    by_d = str(check_scaled_scores(lambda q, K: K @ q / len(q)))
    assert "hint: divide by √d_k (np.sqrt(d_k)), not by d_k" in by_d


def attend(q, K, V):
    scores = K @ q / np.sqrt(q.shape[-1])  # (n,)
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    return weights @ V  # (d_v,)


def test_single_query_attention_right_answers_pass():
    result = check_single_query_attention(attend)
    assert result and "✓ single-query attention: pass" in str(result)

    def loop(q, K, V):
        scores = [np.dot(q, k) / np.sqrt(len(q)) for k in K]
        alphas = np.exp(np.array(scores) - max(scores))
        alphas /= alphas.sum()
        return sum(a * v for a, v in zip(alphas, V))

    assert check_single_query_attention(loop)


def test_single_query_attention_mistakes_are_named():
    assert "not written yet" in str(check_single_query_attention(todo))

    def unscaled(q, K, V):
        w = np.exp(K @ q - (K @ q).max())
        return (w / w.sum()) @ V

    assert "hint: the scores still need dividing by √d_k" in str(
        check_single_query_attention(unscaled))

    def weights_only(q, K, V):
        s = K @ q / np.sqrt(len(q))
        w = np.exp(s - s.max())
        return w / w.sum()

    text = str(check_single_query_attention(weights_only))
    assert "case 1: shape (2,), expected (3,)" in text
    assert "not the weights α themselves" in text

    def sums_keys(q, K, V):
        s = K @ q / np.sqrt(len(q))
        w = np.exp(s - s.max())
        return (w / w.sum()) @ K

    assert "weighted sum of the value vectors" in str(check_single_query_attention(sums_keys))
    assert "forget `return`" in str(check_single_query_attention(lambda q, K, V: None))

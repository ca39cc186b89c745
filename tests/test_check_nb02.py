"""The checkers of notebook 02 pass right answers, name the mistake in wrong ones, never raise."""

import numpy as np

from minitf.check import check_attention, check_attention_flops, check_qkv


def todo(*args):
    raise NotImplementedError  # your code here


def test_qkv():
    result = check_qkv(lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_k, X @ W_v))
    assert result and "✓ Q, K, V projections: pass" in str(result)
    assert check_qkv(lambda X, *Ws: [np.matmul(X, W) for W in Ws])
    assert "not written yet" in str(check_qkv(todo))


def test_qkv_mistakes_are_named():
    text = str(check_qkv(lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_k, X @ W_k)))
    assert "case 1: V: " in text and "case 2: V: shape (2, 5, 4), expected (2, 5, 2)" in text
    assert "Q:" not in text and "K:" not in text
    assert "forget `return`" in str(check_qkv(lambda X, W_q, W_k, W_v: None))
    assert "expected three arrays (Q, K, V), got a ndarray" in str(
        check_qkv(lambda X, W_q, W_k, W_v: X @ W_q))
    assert "raised ValueError" in str(check_qkv(lambda X, W_q, W_k, W_v: (W_q @ X, 0, 0)))


def attention(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (..., L_q, L_k)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ V  # (..., L_q, d_v)


def test_attention_right_answer_passes():
    result = check_attention(attention)
    assert result and "✓ matrix attention: pass" in str(result)
    assert "3 cases agree with minitf" in str(result)


def test_attention_mistakes_are_named():
    assert "not written yet" in str(check_attention(todo))
    assert "divide the scores by √d_k" in str(
        check_attention(lambda Q, K, V: attention(Q * np.sqrt(Q.shape[-1]), K, V)))

    def column_softmax(Q, K, V):
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        weights = np.exp(scores - scores.max(axis=-2, keepdims=True))
        return weights / weights.sum(axis=-2, keepdims=True) @ V

    assert "along each row (axis=-1)" in str(check_attention(column_softmax))

    def transposes_everything(Q, K, V):
        scores = Q @ K.T / np.sqrt(Q.shape[-1])
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return weights / weights.sum(axis=-1, keepdims=True) @ V

    text = str(check_attention(transposes_everything))
    assert "case 3: raised ValueError" in text and "np.swapaxes(K, -1, -2)" in text
    assert "case 1" not in text and "case 2" not in text


def test_attention_flops():
    def flops(n, d_model, d_k, d_v):
        projections = 2 * n * d_model * d_k * 2 + 2 * n * d_model * d_v
        return projections + 2 * n * n * d_k + 2 * n * n * d_v

    result = check_attention_flops(flops)
    assert result and "4 cases agree" in str(result)
    assert "not written yet" in str(check_attention_flops(todo))
    half = str(check_attention_flops(lambda *a: flops(*a) // 2))
    assert "case 1: got 512, expected 1024" in half
    assert "hint: count a multiply-add as 2 FLOPs" in half
    assert "count the three projections" in str(
        check_attention_flops(lambda n, d_model, d_k, d_v: 2 * n * n * (d_k + d_v)))
    assert "costs 2·n²·d_v too" in str(check_attention_flops(
        lambda n, d_model, d_k, d_v: flops(n, d_model, d_k, d_v) - 2 * n * n * d_v))
    assert "d_v columns, not d_k" in str(check_attention_flops(
        lambda n, d_model, d_k, d_v: flops(n, d_model, d_k, d_k)))

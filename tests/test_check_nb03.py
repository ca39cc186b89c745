"""Checkers of notebook 03: right answers pass, usual mistakes are named, stubs read as
"not written yet", and nothing raises."""

import numpy as np

from minitf.check import check_merge_heads, check_multi_head, check_split_heads
from minitf.multihead import MultiHeadAttention, merge_heads, split_heads


def not_written(*args):
    raise NotImplementedError  # your code here


def split_right(x, num_heads):
    """A right answer written differently from minitf's: slice the column blocks."""
    d_k = x.shape[-1] // num_heads
    return np.stack([x[..., i * d_k:(i + 1) * d_k] for i in range(num_heads)], axis=1)


def merge_right(x):
    """A right answer written differently from minitf's: concatenate the heads."""
    return np.concatenate([x[:, i] for i in range(x.shape[1])], axis=-1)


def multi_head_right(x, params, num_heads):
    q, k, v = (split_heads(x @ params[f"W_{n}"] + params[f"b_{n}"], num_heads) for n in "qkv")
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])  # (B, h, L, L)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return merge_heads(weights @ v) @ params["W_o"] + params["b_o"]


def test_split_heads():
    assert check_split_heads(split_right)
    assert "✓ split_heads: pass" in str(check_split_heads(split_heads))
    assert "not written yet" in str(check_split_heads(not_written))

    def no_transpose(x, num_heads):
        B, L, d_model = x.shape
        return x.reshape(B, num_heads, L, d_model // num_heads)

    report = check_split_heads(no_transpose)
    assert not report
    assert "entries differ" in str(report) and "reshape to (B, L, h, d_k) first" in str(report)

    def interleaved(x, num_heads):
        B, L, d_model = x.shape
        return x.reshape(B, L, d_model // num_heads, num_heads).transpose(0, 3, 1, 2)

    assert "contiguous block" in str(check_split_heads(interleaved))

    report = check_split_heads(lambda x, num_heads: x)
    assert not report and "shape (2, 3, 8), expected (2, 2, 3, 4)" in str(report)


def test_merge_heads():
    assert "✓ merge_heads: pass" in str(check_merge_heads(merge_right))
    assert "not written yet" in str(check_merge_heads(not_written))

    def no_transpose(x):
        B, h, L, d_k = x.shape
        return x.reshape(B, L, h * d_k)

    report = check_merge_heads(no_transpose)
    assert not report and "swap axes 1 and 2 first" in str(report)

    def interleaved(x):
        B, h, L, d_k = x.shape
        return x.transpose(0, 2, 3, 1).reshape(B, L, h * d_k)

    assert "interleaves" in str(check_merge_heads(interleaved))
    assert "forget `return`" in str(check_merge_heads(lambda x: None))


def test_multi_head():
    report = check_multi_head(multi_head_right)
    assert report and "3 cases agree with minitf" in str(report)

    def with_module(x, params, num_heads):
        mha = MultiHeadAttention(x.shape[-1], num_heads, dtype=np.float64)
        for name, value in params.items():
            mha.params[name][...] = value
        return mha(x)

    assert check_multi_head(with_module)
    assert "not written yet" in str(check_multi_head(not_written))


def test_multi_head_names_the_usual_mistakes():
    def variant(scale_fn=None, w_o=True, bias=True):
        def fn(x, params, num_heads):
            p = {n: (v if bias or not n.startswith("b") else 0 * v) for n, v in params.items()}
            q, k, v = (split_heads(x @ p[f"W_{n}"] + p[f"b_{n}"], num_heads) for n in "qkv")
            scores = q @ k.transpose(0, 1, 3, 2)
            if scale_fn is not None:
                scores = scores / np.sqrt(scale_fn(x.shape[-1], q.shape[-1]))
            weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
            weights /= weights.sum(axis=-1, keepdims=True)
            concat = merge_heads(weights @ v)
            return concat @ p["W_o"] + p["b_o"] if w_o else concat
        return fn

    cases = {
        "divide by √d_k": variant(scale_fn=lambda d_model, d_k: d_model),
        "not divided by √d_k": variant(),
        "without the output projection": variant(scale_fn=lambda d_model, d_k: d_k, w_o=False),
        "biases b_q, b_k, b_v, b_o are left out":
            variant(scale_fn=lambda d_model, d_k: d_k, bias=False),
    }
    for hint, fn in cases.items():
        report = check_multi_head(fn)
        assert not report, hint
        assert "✗ multi_head: not yet" in str(report)
        assert hint in str(report), (hint, str(report))


def test_checker_never_raises_and_keeps_inputs_intact():
    def crashes(x, params, num_heads):
        return x @ np.ones((3, 3))

    report = check_multi_head(crashes)
    assert not report and "raised ValueError" in str(report)

    def vandal(x, params, num_heads):
        for value in params.values():
            value[...] = 0  # changing the inputs must not change the reference
        return multi_head_right(x, params, num_heads)

    assert not check_multi_head(vandal)
    assert check_multi_head(multi_head_right)

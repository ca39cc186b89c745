"""Checkers of notebook 04: right answers pass, usual mistakes are named, stubs read as
"not written yet", and nothing raises."""

import numpy as np

from minitf.check import check_rope, check_sinusoidal
from minitf.positional import rope, sinusoidal_encoding


def not_written(*args):
    raise NotImplementedError  # your code here


def table_with_loops(max_len, d_model):
    pe = np.zeros((max_len, d_model))
    for pos in range(max_len):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            pe[pos, 2 * i], pe[pos, 2 * i + 1] = np.sin(angle), np.cos(angle)
    return pe


def test_sinusoidal_right_answers_pass():
    assert "✓ sinusoidal: pass" in str(check_sinusoidal(table_with_loops))
    assert check_sinusoidal(sinusoidal_encoding)  # float32 is close enough
    assert "not written yet" in str(check_sinusoidal(not_written))


def test_sinusoidal_names_the_usual_mistakes():
    def swapped(max_len, d_model):
        return table_with_loops(max_len, d_model)[:, [j ^ 1 for j in range(d_model)]]

    def column_exponent(max_len, d_model):
        pos, j = np.arange(max_len)[:, None], np.arange(d_model)
        angles = pos / 10000 ** (j / d_model)
        return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))

    def pair_exponent_without_two(max_len, d_model):
        pos, j = np.arange(max_len)[:, None], np.arange(d_model)
        angles = pos / 10000 ** ((j // 2) / d_model)
        return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))

    for fn, hint in [(swapped, "sin and cos are swapped"),
                     (column_exponent, "odd columns use the exponent (2i+1)/d"),
                     (pair_exponent_without_two, "the exponent is i/d")]:
        report = check_sinusoidal(fn)
        assert not report and "✗ sinusoidal: not yet" in str(report)
        assert hint in str(report), str(report)
        assert "entries differ" in str(report)


def test_sinusoidal_other_failures_are_reported():
    report = check_sinusoidal(lambda max_len, d_model: np.zeros((d_model, max_len)))
    assert not report and "shape (2, 4), expected (4, 2)" in str(report)
    assert "hint" not in str(report)
    report = check_sinusoidal(lambda max_len, d_model: None)
    assert "forget `return`" in str(report)


def rope_by_pairs(x):
    """A right answer written with 2x2 rotation matrices, one per position and pair."""
    L, d = x.shape[-2], x.shape[-1]
    out = np.empty_like(x)
    for m in range(L):
        for i in range(d // 2):
            theta = m / 10000 ** (2 * i / d)
            rotation = np.array([[np.cos(theta), np.sin(theta)],
                                 [-np.sin(theta), np.cos(theta)]])  # row-vector form
            out[..., m, 2 * i:2 * i + 2] = x[..., m, 2 * i:2 * i + 2] @ rotation
    return out


def test_rope():
    assert "✓ rope: pass" in str(check_rope(rope_by_pairs))
    assert check_rope(rope)
    assert "not written yet" in str(check_rope(not_written))

    def backwards(x):
        return rope(x, positions=-np.arange(x.shape[-2]))

    report = check_rope(backwards)
    assert not report and "turns the wrong way" in str(report)

    def rotate_half(x):
        d = x.shape[-1]
        interleave = np.arange(d).reshape(2, d // 2).T.reshape(-1)  # 0, d/2, 1, d/2+1, ...
        out = np.empty_like(x)
        out[..., interleave] = rope(x[..., interleave])
        return out

    report = check_rope(rotate_half)
    assert not report and "'rotate half' layout" in str(report)

    report = check_rope(lambda x: x)
    assert not report and "hint" not in str(report)

    def crashes(x):
        return x @ np.ones((3, 3))

    assert "raised ValueError" in str(check_rope(crashes))

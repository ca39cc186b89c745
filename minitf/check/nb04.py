"""Exercises of notebook 04, positional encoding: the sinusoidal table and RoPE (cases,
references, known mistakes)."""

import numpy as np

from ..positional import rope, sinusoidal_encoding
from .core import Case, Exercise, Mistake

__all__ = ["check_rope", "check_sinusoidal"]


def _table(max_len, d_model, *, exponent="2i", swap=False):
    """The sinusoidal table, and (with other flags) the usual wrong versions.

    exponent "2i": the paper's 10000^(2i/d) for both columns of pair i;
    "i": 10000^(i/d); "column": 10000^(j/d) with j the column index (odd columns off by one).
    """
    pos = np.arange(max_len)[:, None]  # (max_len, 1)
    column = np.arange(d_model)  # (d_model,)
    pair = column // 2
    power = {"2i": 2 * pair, "i": pair, "column": column}[exponent] / d_model
    angles = pos / 10000.0 ** power  # (max_len, d_model)
    sin_cols = column % 2 == (1 if swap else 0)
    return np.where(sin_cols, np.sin(angles), np.cos(angles))


SINUSOIDAL = Exercise(
    name="sinusoidal", checker="check_sinusoidal", args=("max_len", "d_model"),
    task={"en": "(max_len, d_model): PE[pos, 2i] = sin(pos / 10000^(2i/d)), "
                "PE[pos, 2i+1] = cos(pos / 10000^(2i/d))",
          "zh": "形状为 (max_len, d_model) 的表：PE[pos, 2i] = sin(pos / 10000^(2i/d))，"
                "PE[pos, 2i+1] = cos(pos / 10000^(2i/d))"},
    cases=lambda: [Case((4, 2), {"en": "one pair of columns", "zh": "只有一对列"}),
                   Case((10, 8)), Case((30, 16))],
    reference=lambda max_len, d_model: sinusoidal_encoding(max_len, d_model, dtype=np.float64),
    atol=1e-5,
    mistakes=(
        Mistake({"en": "sin and cos are swapped: even columns (0, 2, ...) hold sin, odd "
                       "columns hold cos",
                 "zh": "sin 和 cos 弄反了：偶数列（0、2、……）放 sin，奇数列放 cos"},
                lambda n, d: _table(n, d, swap=True)),
        Mistake({"en": "the odd columns use the exponent (2i+1)/d; both columns of a pair "
                       "share 2i/d (column 2i+1 is the cos of the same angle as column 2i)",
                 "zh": "奇数列用了指数 (2i+1)/d；同一对的两列共用 2i/d（第 2i+1 列是与第 2i 列"
                       "同一个角度的 cos）"},
                lambda n, d: _table(n, d, exponent="column")),
        Mistake({"en": "the exponent is i/d; it should be 2i/d, with i the pair number "
                       "(column // 2)",
                 "zh": "指数用成了 i/d；应当是 2i/d，其中 i 是第几对（column // 2）"},
                lambda n, d: _table(n, d, exponent="i")),
    ))


def _rotate(x, *, layout="pairs", sign=1.0):
    """RoPE with positions 0..L-1, and (with other flags) the usual wrong versions.

    layout "pairs": rotate (x[2i], x[2i+1]) as minitf does; "halves": rotate
    (x[i], x[i + d/2]); sign -1 turns the other way.
    """
    L, d = x.shape[-2], x.shape[-1]
    angles = sign * np.arange(L)[:, None] / 10000.0 ** (np.arange(0, d, 2) / d)  # (L, d/2)
    cos, sin = np.cos(angles), np.sin(angles)
    if layout == "pairs":
        first, second = x[..., 0::2], x[..., 1::2]
    else:
        first, second = x[..., : d // 2], x[..., d // 2:]
    new_first, new_second = first * cos - second * sin, first * sin + second * cos
    out = np.empty_like(x)
    if layout == "pairs":
        out[..., 0::2], out[..., 1::2] = new_first, new_second
    else:
        out[..., : d // 2], out[..., d // 2:] = new_first, new_second
    return out


def _rope_cases():
    rng = np.random.default_rng(6)
    return [Case((rng.normal(size=shape),), note)
            for shape, note in [((4, 2), {"en": "L = 4, d = 2", "zh": "L = 4，d = 2"}),
                                ((6, 8), {"en": "L = 6, d = 8", "zh": "L = 6，d = 8"}),
                                ((2, 3, 5, 4), {"en": "a batch of heads (B, h, L, d)",
                                                "zh": "一批多头的输入 (B, h, L, d)"})]]


ROPE = Exercise(
    name="rope", checker="check_rope", args=("x",),
    task={"en": "x (..., L, d) with each pair (x[2i], x[2i+1]) at position m rotated by "
                "m / 10000^(2i/d)",
          "zh": "x (..., L, d)，其中位置 m 上的每一对 (x[2i], x[2i+1]) 都转过角度 "
                "m / 10000^(2i/d)"},
    cases=_rope_cases, reference=rope,
    mistakes=(
        Mistake({"en": "your rotation turns the wrong way: the new pair is "
                       "(x0 cos θ − x1 sin θ, x0 sin θ + x1 cos θ)",
                 "zh": "你的旋转方向反了：新的一对应当是 "
                       "(x0 cos θ − x1 sin θ, x0 sin θ + x1 cos θ)"},
                lambda x: _rotate(x, sign=-1.0)),
        Mistake({"en": "you paired dimension i with i + d/2 (the 'rotate half' layout); "
                       "minitf pairs neighbours: (x[2i], x[2i+1])",
                 "zh": "你把第 i 维和第 i + d/2 维配成了一对（“旋转一半”的排布）；minitf 是"
                       "相邻两维配对：(x[2i], x[2i+1])"},
                lambda x: _rotate(x, layout="halves")),
    ))


def check_sinusoidal(fn):
    """fn(max_len, d_model) -> (max_len, d_model): PE[pos, 2i] = sin(pos / 10000^(2i/d)),
    PE[pos, 2i+1] = cos(pos / 10000^(2i/d)). An exercise of notebook 04."""
    return SINUSOIDAL.check(fn)


def check_rope(fn):
    """fn(x) for x (..., L, d): rotate each pair (x[2i], x[2i+1]) of position m by the angle
    m / 10000^(2i/d). An exercise of notebook 04."""
    return ROPE.check(fn)


EXERCISES = [SINUSOIDAL, ROPE]

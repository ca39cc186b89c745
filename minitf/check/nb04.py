"""Exercises of notebook 04, positional encoding: the sinusoidal table and RoPE (cases,
references, known mistakes)."""

import numpy as np

from ..positional import rope, sinusoidal_encoding
from .core import Case, Exercise, Mistake

__all__ = ["check_rope", "check_sinusoidal"]


def _table(max_len, d_model, *, exponent="2i", swap=False, start=0, base=10000.0,
           multiply=False, halves=False):
    """The sinusoidal table, and (with other flags) the usual wrong versions.

    exponent "2i": the paper's 10000^(2i/d) for both columns of pair i;
    "i": 10000^(i/d); "column": 10000^(j/d) with j the column index (odd columns off by one).
    halves: all the sines, then all the cosines.
    """
    pos = np.arange(start, start + max_len)[:, None]  # (max_len, 1)
    column = np.arange(d_model)  # (d_model,)
    pair = column // 2
    power = {"2i": 2 * pair, "i": pair, "column": column}[exponent] / d_model
    angles = pos * base ** power if multiply else pos / base ** power  # (max_len, d_model)
    if halves:
        half = angles[:, 0::2]
        return np.concatenate([np.sin(half), np.cos(half)], axis=-1)
    sin_cols = column % 2 == (1 if swap else 0)
    return np.where(sin_cols, np.sin(angles), np.cos(angles))


FROM_0_HINT = {"en": "positions count from 0: the first position is m = 0 (sin 0 = 0, cos 0 = 1)",
               "zh": "位置从 0 开始数：第一个位置是 m = 0（sin 0 = 0，cos 0 = 1）"}

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
        Mistake({"en": "sin and cos alternate column by column, PE[:, 0::2] = sin and "
                       "PE[:, 1::2] = cos, not all the sines first and then all the cosines",
                 "zh": "sin 和 cos 逐列交替：PE[:, 0::2] = sin，PE[:, 1::2] = cos，而不是先放"
                       "全部的 sin、再放全部的 cos"},
                lambda n, d: _table(n, d, halves=True)),
        Mistake(FROM_0_HINT, lambda n, d: _table(n, d, start=1)),
        Mistake({"en": "divide the position by 10000^(2i/d), do not multiply: the angles turn "
                       "slower and slower across the columns",
                 "zh": "要用位置除以 10000^(2i/d)，而不是乘以它：越往后的列，角度转得越慢"},
                lambda n, d: _table(n, d, multiply=True)),
        Mistake({"en": "the base is 10000: pos / 10000^(2i/d)",
                 "zh": "底数是 10000：pos / 10000^(2i/d)"},
                lambda n, d: _table(n, d, base=1000.0)),
        Mistake({"en": "the table is (max_len, d_model): one row per position, one column per "
                       "feature",
                 "zh": "这张表的形状是 (max_len, d_model)：每个位置一行，每个特征一列"},
                lambda n, d: _table(n, d).T),
    ))


def _rotate(x, *, layout="pairs", sign=1.0, start=0, length_axis=-2):
    """RoPE with positions 0..L-1, and (with other flags) the usual wrong versions.

    layout "pairs": rotate (x[2i], x[2i+1]) as minitf does; "halves": rotate
    (x[i], x[i + d/2]); sign -1 turns the other way; start 1 counts positions from 1;
    length_axis 0 takes L from the batch axis.
    """
    L, d = x.shape[length_axis], x.shape[-1]
    positions = np.arange(start, start + L)[:, None]
    angles = sign * positions / 10000.0 ** (np.arange(0, d, 2) / d)  # (L, d/2)
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


def _rotate_through_views(x):
    """RoPE written into x itself through views: the second line reads the first line's new
    values."""
    L, d = x.shape[-2:]
    angle = np.arange(L)[:, None] / 10000 ** (np.arange(0, d, 2) / d)
    even, odd = x[..., 0::2], x[..., 1::2]  # views of x
    x[..., 0::2] = even * np.cos(angle) - odd * np.sin(angle)
    x[..., 1::2] = even * np.sin(angle) + odd * np.cos(angle)  # `even` is already rotated
    return x


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
        Mistake({"en": "x[..., 0::2] is a view: once the new even entries are written into x, "
                       "`even` holds them, and the odd entries are computed from rotated "
                       "values; copy the halves first (.copy()) or write into a new array "
                       "(np.empty_like(x))",
                 "zh": "x[..., 0::2] 是视图（view）：新的偶数位一写回 x，`even` 里就已经是新值了，"
                       "奇数位于是用转过的值来算；要先复制两半（.copy()），或者写进一个新数组"
                       "（np.empty_like(x)）"}, _rotate_through_views),
        Mistake(FROM_0_HINT, lambda x: _rotate(x, start=1)),
        Mistake({"en": "L is the number of positions, x.shape[-2]: for a batch of heads "
                       "(B, h, L, d), x.shape[0] is the batch",
                 "zh": "L 是位置的个数 x.shape[-2]：对一批多头的输入 (B, h, L, d)，x.shape[0] "
                       "是批次"},
                lambda x: _rotate(x, length_axis=0)),
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

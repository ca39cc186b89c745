"""Exercises of notebook 10: minitf's W_q, W_k, W_v out of torch's stacked in_proj_weight,
and the masks in torch's convention (True = may NOT attend).

Imported as `from minitf.check.nb10 import ...`: notebook 10 needs torch, so its exercises
stay out of `minitf.check.EXERCISES_BY_CHECKER`, whose tests run without it. The in_proj
reference is minitf.pytorch's parameter map, imported only when the checker runs; the
learner's answers may be numpy arrays or torch tensors.
"""

import numpy as np

from ..attention import causal_mask, padding_mask
from ..tokens import PAD_ID
from .core import Case, Exercise, Mistake

__all__ = ["check_split_in_proj", "check_torch_masks"]


def _numpy(value):
    """A torch tensor (or a tuple of them) -> numpy; anything else as it is."""
    if isinstance(value, (tuple, list)):
        return type(value)(_numpy(v) for v in value)
    detach = getattr(value, "detach", None)
    return np.asarray(detach().cpu()) if callable(detach) else value


def _as_learner_wrote(fn, *args):
    return _numpy(fn(*args))


# ------------------------------------------------------------------ in_proj_weight

def split_in_proj(in_proj_weight):
    """torch's (3d, d) in_proj_weight -> minitf's (W_q, W_k, W_v), each (d, d), by the map
    from_torch uses."""
    from ..pytorch import minitf_arrays, torch_name  # imports torch

    names = [(f"attn.W_{x}", *torch_name(f"attn.W_{x}")) for x in "qkv"]
    d = in_proj_weight.shape[1]
    split = minitf_arrays({"attn.in_proj_weight": in_proj_weight}, d, names)
    return split["attn.W_q"], split["attn.W_k"], split["attn.W_v"]


def _blocks(w):
    """The three (d, d) row blocks of w (3d, d), as torch keeps them (not transposed)."""
    d = w.shape[1]
    return w[:d], w[d:2 * d], w[2 * d:]


def _split_in_proj_cases():
    rng = np.random.default_rng(100)
    return [Case((np.round(rng.standard_normal((3 * d, d)), 2),),
                 {"en": f"d = {d}", "zh": f"d 为 {d}"}) for d in (2, 4)]


SPLIT_IN_PROJ = Exercise(
    name="split_in_proj", checker="check_split_in_proj", args=("in_proj_weight",),
    task={"en": "(W_q, W_k, W_v), each (d, d) as minitf keeps them (y = x W)",
          "zh": "(W_q, W_k, W_v)，每个都是 (d, d)，按 minitf 的存法（y = x W）"},
    cases=_split_in_proj_cases, reference=split_in_proj, labels=("W_q", "W_k", "W_v"),
    run=_as_learner_wrote,
    mistakes=(
        Mistake({"en": "not transposed: torch computes x Wᵀ, so its rows are minitf's columns "
                       "— take each block's .T",
                 "zh": "没有转置：torch 计算的是 x Wᵀ，它的行就是 minitf 的列 —— 每一块都要取 .T"},
                lambda w: _blocks(w)),
        Mistake({"en": "the blocks are in the wrong order: torch stacks queries (rows 0:d), "
                       "keys (d:2d), values (2d:3d)",
                 "zh": "这几块的顺序不对：torch 依次堆叠查询（第 0:d 行）、键（d:2d）、"
                       "值（2d:3d）"},
                lambda w: tuple(b.T for b in _blocks(w))[::-1]),
        Mistake({"en": "keys and values are swapped: torch stacks queries (rows 0:d), keys "
                       "(d:2d), values (2d:3d)",
                 "zh": "键和值弄反了：torch 依次堆叠查询（第 0:d 行）、键（d:2d）、"
                       "值（2d:3d）"},
                lambda w: tuple(_blocks(w)[i].T for i in (0, 2, 1))),
        Mistake({"en": "queries and keys are swapped: torch stacks queries (rows 0:d), keys "
                       "(d:2d), values (2d:3d)",
                 "zh": "查询和键弄反了：torch 依次堆叠查询（第 0:d 行）、键（d:2d）、"
                       "值（2d:3d）"},
                lambda w: tuple(_blocks(w)[i].T for i in (1, 0, 2))),
        Mistake({"en": "torch stacks the three matrices as blocks of ROWS, (3d, d): split along "
                       "axis 0 (np.split(w, 3)), then transpose each block",
                 "zh": "torch 是把三个矩阵按*行*分块堆起来的，形状 (3d, d)：要沿 axis 0 切开"
                       "（np.split(w, 3)），再把每一块转置"},
                lambda w: tuple(np.split(w, 3, axis=1))),
    ))


def check_split_in_proj(fn):
    """fn(in_proj_weight (3d, d), as torch keeps an attention layer's input projections)
    -> (W_q, W_k, W_v), each (d, d) as minitf keeps them. Notebook 10 §1."""
    return SPLIT_IN_PROJ.check(fn)


# ------------------------------------------------------------------ masks

def torch_masks(src, tgt_in):
    """(tgt_mask (L_t, L_t), src_key_padding_mask (B, L_s), tgt_key_padding_mask (B, L_t)),
    bool, True where a query may NOT look: minitf's masks, negated and in torch's shapes."""
    return (~causal_mask(tgt_in.shape[1]), ~padding_mask(src, PAD_ID)[:, 0, 0],
            ~padding_mask(tgt_in, PAD_ID)[:, 0, 0])


def _with_tgt_mask(tgt_mask):
    """torch_masks with its first mask replaced by tgt_mask(L)."""
    return lambda src, tgt_in: (tgt_mask(tgt_in.shape[1]), *torch_masks(src, tgt_in)[1:])


def _float_causal_mask(L):
    """torch's nn.Transformer.generate_square_subsequent_mask(L), in numpy: float32, -inf
    above the diagonal and 0 elsewhere."""
    return np.where(np.triu(np.ones((L, L), dtype=bool), k=1), -np.inf, 0.0).astype(np.float32)


def _torch_masks_cases():
    return [
        Case((np.array([[5, 6, 2, 0], [7, 2, 0, 0]]), np.array([[1, 9, 4], [1, 8, 0]])),
             {"en": "padding in both", "zh": "两边都有填充"}),
        Case((np.array([[4, 4, 4, 2]]), np.array([[1, 5, 6, 7, 8]])),
             {"en": "no padding", "zh": "没有填充"}),
    ]


TORCH_MASKS = Exercise(
    name="torch_masks", checker="check_torch_masks", args=("src", "tgt_in"),
    task={"en": "(tgt_mask (L_t, L_t), src_key_padding_mask (B, L_s), tgt_key_padding_mask "
                "(B, L_t)), bool, True where a query may NOT look",
          "zh": "(tgt_mask (L_t, L_t), src_key_padding_mask (B, L_s), tgt_key_padding_mask "
                "(B, L_t))，都是 bool，查询*不能*看的地方为 True"},
    cases=_torch_masks_cases, reference=torch_masks,
    labels=("tgt_mask", "src_key_padding_mask", "tgt_key_padding_mask"), run=_as_learner_wrote,
    mistakes=(
        Mistake({"en": "these are minitf's masks (True = may look); torch's True means 'may "
                       "NOT look': negate all three",
                 "zh": "这些是 minitf 的掩码（True 表示可以看）；torch 的 True 表示“不能看”："
                       "三个都要取反"},
                lambda s, t: (causal_mask(t.shape[1]), s != PAD_ID, t != PAD_ID)),
        Mistake({"en": "the causal mask is minitf's (True on and below the diagonal); torch's "
                       "marks the future it may NOT see: True above the diagonal, "
                       "np.triu(…, k=1)",
                 "zh": "因果掩码用的是 minitf 的（对角线上及以下为 True）；torch 标出的是不能看的"
                       "未来：对角线以上为 True，即 np.triu(…, k=1)"},
                _with_tgt_mask(causal_mask)),
        Mistake({"en": "the padding masks are minitf's way round; torch's are True at the "
                       "padding (ids == 0)",
                 "zh": "填充掩码还是 minitf 的方向；torch 的填充掩码在填充处为 True（ids == 0）"},
                lambda s, t: (~causal_mask(t.shape[1]), s != PAD_ID, t != PAD_ID)),
        Mistake({"en": "the diagonal is blocked too — a token may look at itself: "
                       "np.triu(…, k=1)",
                 "zh": "对角线也被挡住了 —— 词元可以看它自己：np.triu(…, k=1)"},
                _with_tgt_mask(lambda L: np.triu(np.ones((L, L), dtype=bool)))),
        Mistake({"en": "this blocks the past, not the future: np.triu(…, k=1)",
                 "zh": "这样挡住的是过去，而不是未来：np.triu(…, k=1)"},
                _with_tgt_mask(lambda L: np.tril(np.ones((L, L), dtype=bool), k=-1))),
        Mistake({"en": "that is torch's float mask (−inf where a query may not look, 0 "
                       "elsewhere, added to the scores), as generate_square_subsequent_mask "
                       "gives; torch accepts it, but this exercise asks for the boolean form: "
                       "True where a query may NOT look, np.triu(…, k=1)",
                 "zh": "这是 torch 的浮点掩码（查询不能看的地方为 −inf，其余为 0，加到分数上），"
                       "generate_square_subsequent_mask 给出的就是它；torch 也接受它，但这道"
                       "练习要的是布尔形式：查询不能看的地方为 True，即 np.triu(…, k=1)"},
                _with_tgt_mask(_float_causal_mask)),
        Mistake({"en": "the padding masks have minitf's broadcastable shape (B, 1, 1, L); "
                       "torch wants (B, L)",
                 "zh": "填充掩码用的是 minitf 那种可广播的形状 (B, 1, 1, L)；torch 要的是 (B, L)"},
                lambda s, t: (~causal_mask(t.shape[1]), ~padding_mask(s, PAD_ID),
                              ~padding_mask(t, PAD_ID))),
    ))


def check_torch_masks(fn):
    """fn(src (B, L_s), tgt_in (B, L_t) ids) -> the three masks minitf's model uses, in
    torch's convention and shapes. Notebook 10 §2."""
    return TORCH_MASKS.check(fn)


EXERCISES = (SPLIT_IN_PROJ, TORCH_MASKS)

"""Pieces that the exercise data of several notebooks use to build their cases."""

import numpy as np


def perturb_norms_and_biases(module, seed):
    """Move every LayerNorm γ, β and every bias of `module` away from its initial 1 or 0
    (in place), so that an answer which leaves one of them out gives another output."""
    rng = np.random.default_rng(seed)
    state = module.state_dict()
    for name, value in state.items():
        if name.endswith(("gamma", "beta")) or ".b" in name:
            state[name] = value + 0.3 * rng.standard_normal(value.shape)
    module.load_state_dict(state)
    return module


BY_D_MODEL_HINT = {
    "en": "the scores are divided by √d_model; each head works in d_k = d_model / h "
          "dimensions, so divide by √d_k",
    "zh": "分数除以的是 √d_model；每个头只在 d_k = d_model / h 维里计算，所以要除以 √d_k"}

STRAIGHT_MERGE_HINT = {
    "en": "you reshaped (B, h, L, d_k) straight to (B, L, h*d_k), which mixes positions of "
          "different heads: swap axes 1 and 2 first, then reshape",
    "zh": "你把 (B, h, L, d_k) 直接 reshape 成了 (B, L, h*d_k)，这会把不同头的位置混在一起："
          "先交换第 1 和第 2 个轴，再 reshape"}
STRAIGHT_SPLIT_HINT = {
    "en": "you reshaped straight to (B, h, L, d_k), which cuts the sequence into pieces "
          "instead of the features: reshape to (B, L, h, d_k) first, then swap axes 1 and 2",
    "zh": "你直接 reshape 成了 (B, h, L, d_k)，这样切开的是序列而不是特征：先 reshape 成 "
          "(B, L, h, d_k)，再交换第 1 和第 2 个轴"}


def split_heads_straight(x, num_heads):
    """The usual slip of split_heads (notebooks 03 and 06): (B, L, d_model) reshaped
    straight to (B, h, L, d_k)."""
    B, L, d_model = x.shape
    return x.reshape(B, num_heads, L, d_model // num_heads)

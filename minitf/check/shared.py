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


STRAIGHT_SPLIT_HINT = (
    "you reshaped straight to (B, h, L, d_k), which cuts the sequence into pieces instead of "
    "the features: reshape to (B, L, h, d_k) first, then swap axes 1 and 2")


def split_heads_straight(x, num_heads):
    """The usual slip of split_heads (notebooks 03 and 06): (B, L, d_model) reshaped
    straight to (B, h, L, d_k)."""
    B, L, d_model = x.shape
    return x.reshape(B, num_heads, L, d_model // num_heads)

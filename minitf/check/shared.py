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

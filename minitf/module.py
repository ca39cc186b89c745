"""The protocol every layer follows: parameters, gradients, children, forward and backward.
Met in notebook 03 (minitf's MultiHeadAttention, the first layer with parameters), used by
every layer after it; its backward is the subject of notebook 08 §3.

A Module keeps its own arrays in `params` (with matching zero-initialised `grads`) and its
sub-modules as attributes. `forward` caches what `backward` needs; `backward(dout)` returns
the gradient of each array input of the last `forward` (one array for one input, a tuple for
several, None for token ids) and adds parameter gradients into `grads` (so gradients from
several calls accumulate until `zero_grad()`). The names follow PyTorch's where the concept
is the same: `named_parameters()`, `named_children()`, `state_dict()`, `load_state_dict()`.
"""

import numpy as np

from .validation import FLOAT_DTYPES


def as_rng(rng):
    """An np.random.Generator from a Generator, an int seed, or None (fresh, unseeded).
    Every constructor takes `rng` this way (notebook 03)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer)):
        return np.random.default_rng(rng)
    raise ValueError(
        f"rng must be a numpy Generator, an int seed or None, got {type(rng).__name__}"
    )


class Module:
    """The base of every layer (see the module docstring). Notebook 03, notebook 08 §3."""

    def __init__(self):
        object.__setattr__(self, "params", {})
        object.__setattr__(self, "grads", {})
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "_cache", None)
        object.__setattr__(self, "training", True)

    # Parameters are read as attributes (`self.W`) and live in `params`.
    def __getattr__(self, name):
        params = self.__dict__.get("params", {})
        if name in params:
            return params[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self._children[name] = value
        if name in self.__dict__.get("params", {}):
            raise AttributeError(
                f"{name!r} is a parameter; change it in place or use load_state_dict"
            )
        object.__setattr__(self, name, value)

    def add_param(self, name, value):
        if value.dtype not in FLOAT_DTYPES:
            raise ValueError(f"{type(self).__name__}: dtype must be float32 or float64, "
                             f"got {value.dtype}")
        self.params[name] = value
        self.grads[name] = np.zeros_like(value)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError

    def backward(self, dout):
        raise NotImplementedError

    def saved(self):
        """What the last forward kept for backward; a clear error if there was none."""
        if self._cache is None:
            raise RuntimeError(f"{type(self).__name__}.backward() was called before forward(): "
                               "run forward first, it keeps what backward needs")
        return self._cache

    def train(self, mode=True):
        """Training mode (the default) for this module and every module below it; only
        Dropout behaves differently. Returns the module, as PyTorch's does."""
        if not isinstance(mode, bool):
            raise TypeError(f"mode must be True or False, got {mode!r}")
        self.training = mode
        for child in self.children():
            child.train(mode)
        return self

    def eval(self):
        """Evaluation mode: the same as train(False)."""
        return self.train(False)

    def named_children(self):
        """(name, module) for each direct sub-module, in the order they were set."""
        yield from self._children.items()

    def children(self):
        """The direct sub-modules, in the order they were set."""
        yield from self._children.values()

    def named_parameters(self, prefix=""):
        """(dotted name, array) for every parameter of this module and below."""
        for name, value in self.params.items():
            yield prefix + name, value
        for child_name, child in self._children.items():
            yield from child.named_parameters(prefix + child_name + ".")

    def named_grads(self, prefix=""):
        """(dotted name, gradient) for every parameter, in named_parameters' order."""
        for name, grad in self.grads.items():
            yield prefix + name, grad
        for child_name, child in self._children.items():
            yield from child.named_grads(prefix + child_name + ".")

    def num_parameters(self):
        return sum(p.size for _, p in self.named_parameters())

    def zero_grad(self):
        for _, grad in self.named_grads():
            grad.fill(0)

    def state_dict(self):
        """Flat dict of copies of every parameter, by dotted name."""
        return {name: value.copy() for name, value in self.named_parameters()}

    def load_state_dict(self, state, strict=True):
        """Copy arrays from `state` into the parameters (in place, keeping their dtype).

        Refuses wrongly shaped entries always; missing and unexpected names when `strict`.
        """
        own = dict(self.named_parameters())
        missing = sorted(set(own) - set(state))
        unexpected = sorted(set(state) - set(own))
        wrong_shape = [
            f"{name}: expected {own[name].shape}, got {np.shape(state[name])}"
            for name in own
            if name in state and np.shape(state[name]) != own[name].shape
        ]
        problems = []
        if strict and missing:
            problems.append("missing: " + ", ".join(missing))
        if strict and unexpected:
            problems.append("unexpected: " + ", ".join(unexpected))
        if wrong_shape:
            problems.append("wrong shape: " + "; ".join(wrong_shape))
        if problems:
            raise ValueError(f"cannot load state dict into {type(self).__name__}: "
                             + " | ".join(problems))
        for name, value in own.items():
            if name in state:
                np.copyto(value, state[name], casting="same_kind")


class ModuleList(Module):
    """An ordered list of modules, named "0", "1", … in the state dict. Notebook 05 §6."""

    def __init__(self, modules):
        super().__init__()
        for i, module in enumerate(modules):
            if not isinstance(module, Module):
                raise TypeError(f"modules must hold Modules; item {i} is "
                                f"{type(module).__name__}")
            setattr(self, str(i), module)

    def __getitem__(self, i):
        return list(self._children.values())[i]

    def __len__(self):
        return len(self._children)

    def __iter__(self):
        return iter(self._children.values())

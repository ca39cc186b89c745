"""The protocol every layer follows: parameters, gradients, children, forward and backward.
Met in notebook 03 (minitf's MultiHeadAttention, the first layer with parameters), used by
every layer after it; its backward is the subject of notebook 08 §3.

A Module keeps its own arrays in `params` (with matching zero-initialised `grads`) and its
sub-modules as attributes. `forward` saves what `backward` needs (`save_for_backward`);
`backward(dout)` returns the gradient of each array input of that `forward` (one array for
one input, a tuple for several, None for token ids) and adds parameter gradients into `grads`
(so gradients from several forward-backward pairs accumulate until `zero_grad()`).

`backward(dout)` refuses a dout whose shape is not that of the output of the last forward
(kept when the module is called: `layer(x)`, not `layer.forward(x)`).

One forward, one backward: a layer called on two different inputs before one `backward`
(`lin(x1) + lin(x2)`) keeps only the second call's inputs, so its backward refuses instead of
returning half the gradient. Calls that need no gradient (looking at outputs, generating) run
under `with no_grad(model):`, which saves nothing and counts nothing; calling again on the
same inputs (a cell run twice) is not a second use.
The names follow PyTorch's where the concept is the same: `named_parameters()`,
`named_children()`, `state_dict()`, `load_state_dict()`, `train()`, `eval()`.
"""

from collections.abc import Mapping
from contextlib import contextmanager

import numpy as np

from .validation import FLOAT_DTYPES, shorten

_NOT_GIVEN = object()


def as_rng(rng):
    """An np.random.Generator from a Generator, an int seed, or None (fresh, unseeded).
    Every constructor takes `rng` this way; no notebook calls it by name."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer)):
        return np.random.default_rng(rng)
    raise ValueError(
        f"rng must be a numpy Generator, an int seed or None, got {type(rng).__name__}"
    )


def _same(a, b):
    """True when two saved values hold equal arrays (tuples compared item by item)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and a.shape == b.shape and np.array_equal(a, b))
    return a is b or a == b


@contextmanager
def no_grad(model):
    """`with no_grad(model):` runs the block with nothing kept for backward by `model` and the
    modules below it (as torch.no_grad), then restores them. Generation and gradient checks
    use it; notebook 10 compares it with torch.no_grad."""
    if not isinstance(model, Module):  # a stand-in for a model: nothing to switch
        yield model
        return
    modules = [model, *model.modules()]
    before = [m._keeps for m in modules]
    for m in modules:
        object.__setattr__(m, "_keeps", False)
    try:
        yield model
    finally:
        for m, keeps in zip(modules, before):
            object.__setattr__(m, "_keeps", keeps)


class Module:
    """The base of every layer (see the module docstring). Notebook 08 §3 writes one."""

    def __init__(self):
        object.__setattr__(self, "params", {})
        object.__setattr__(self, "grads", {})
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "_saved", None)  # what the last forward kept for backward
        object.__setattr__(self, "_forwards", 0)  # forwards since that backward
        object.__setattr__(self, "_out_shape", None)  # the shape that forward returned
        object.__setattr__(self, "_keeps", True)  # False inside no_grad
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
        out = self.forward(*args, **kwargs)
        if self._keeps and isinstance(out, np.ndarray):
            object.__setattr__(self, "_out_shape", out.shape)  # what backward's dout must be
        return out

    def forward(self, *args, **kwargs):
        raise NotImplementedError

    def backward(self, dout):
        raise NotImplementedError

    def save_for_backward(self, value):
        """Called by forward: keep `value` for backward; inside no_grad nothing is kept. A call
        that saves the same values as the unread last one (a cell run again) does not count
        as a second use."""
        if not self._keeps:
            return
        if not (self._forwards and _same(value, self._saved)):
            self._saved, self._forwards = value, self._forwards + 1
            self._out_shape = None  # set again when the call returns

    def forget_forwards(self):
        """Drop what earlier forwards kept, here and below, so the next forward starts a new
        computation (the training loop and the gradient checks call it first). Returns the
        module."""
        for m in [self, *self.modules()]:
            object.__setattr__(m, "_saved", None)
            object.__setattr__(m, "_forwards", 0)
            object.__setattr__(m, "_out_shape", None)
        return self

    def saved_for_backward(self, dout=_NOT_GIVEN):
        """Called by backward(dout): what the forward kept; a clear error if there is no single
        forward to differentiate, or if `dout` does not have the shape that forward returned."""
        name = type(self).__name__
        if self._saved is None:
            raise RuntimeError(f"{name}.backward() was called before forward() (or after a "
                               "forward under no_grad, which keeps nothing): run forward first, "
                               "it keeps what backward needs")
        if self._forwards > 1:
            raise RuntimeError(
                f"{name} was called {self._forwards} times before this backward, but it keeps "
                "only the last call's inputs, so backward would return the gradient of that "
                "call alone. Use one layer per call, or run backward after each forward; if the "
                "earlier call was only to look at its output, make it under `with "
                "no_grad(model):`, or call forget_forwards() before the forward you train")
        if dout is not _NOT_GIVEN and self._out_shape not in (None, np.shape(dout)):
            raise ValueError(f"{name}.backward: dout has shape {np.shape(dout)} but forward "
                             f"returned shape {self._out_shape}; dout is the gradient of the "
                             "loss with respect to that output, so it has its shape")
        self._forwards = 0
        return self._saved

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

    def modules(self):
        """Every sub-module below this one, depth first (not this one)."""
        for child in self.children():
            yield child
            yield from child.modules()

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
        if not isinstance(state, Mapping):
            raise TypeError(f"state must be a dict of arrays by parameter name (as state_dict() "
                            f"returns), got {shorten(state)} ({type(state).__name__})")
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
    """An ordered list of modules, named "0", "1", … in the state dict; Encoder and Decoder
    keep their layers in one. No notebook uses it by name."""

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

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

One forward, one backward, as in torch, where a forward's graph serves one backward:
- a module called twice before one `backward` (`lin(x1) + lin(x2)`, and `lin(x) + lin(x)`
  too) keeps only the second call's inputs, so its backward refuses instead of returning
  half the gradient, and forgets both calls: run the forward again, once, then backward;
- a second `backward` after one forward is refused (its gradients were added already);
- calls that need no gradient (looking at outputs, generating, a cell run again) go under
  `with no_grad():`, which keeps nothing and counts nothing (in this thread only);
- a forward in eval mode is a look: the next forward in training mode starts afresh
  (backward after an eval-mode forward still works, as in torch);
- a call that raises keeps nothing: the modules it reached are as they were before it.
A container (a module whose forward only calls its sub-modules) still calls
`self.save_for_backward(True)` in forward and `self.saved_for_backward(dout)` in backward, so
that a misuse is named by the container the user called.

The names follow PyTorch's, with PyTorch's meaning: `named_parameters()`, `named_children()`,
`modules()` (this module included), `state_dict()`, `load_state_dict()`, `train()`, `eval()`,
`no_grad()`.
"""

import contextvars
from collections.abc import Mapping
from contextlib import contextmanager

import numpy as np

from .validation import FLOAT_DTYPES, shorten

_NOT_GIVEN = object()
_NOTHING = object()  # nothing kept: no forward yet, or only under no_grad
_USED = object()  # what the last forward kept has been used by its backward

# Both per thread (and per asyncio task): a no_grad block or a failing call in one thread
# never changes what another keeps.
_GRAD_ENABLED = contextvars.ContextVar("minitf_grad_enabled", default=True)
_CALL = contextvars.ContextVar("minitf_call", default=None)  # {module: state} of the outermost
# call in progress: what to put back if it raises


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


def no_grad(*args):
    """`with no_grad():` runs the block with nothing kept for backward by any module, as
    `with torch.no_grad():` does, in this thread only; the setting before it is restored
    after it. Also a decorator (`@no_grad()`). Generation and gradient checks use it;
    notebook 10 compares it with torch.no_grad."""
    if args:
        raise TypeError(f"no_grad() takes no argument, as torch.no_grad() takes none: write "
                        f"`with no_grad():` (it covers every module), not no_grad("
                        f"{shorten(args[0], 30)})")
    return _no_grad()


@contextmanager
def _no_grad():
    token = _GRAD_ENABLED.set(False)
    try:
        yield
    finally:
        _GRAD_ENABLED.reset(token)


def is_grad_enabled():
    """False inside `with no_grad():`, True otherwise (as torch.is_grad_enabled()).
    No notebook calls it by name."""
    return _GRAD_ENABLED.get()


class Module:
    """The base of every layer (see the module docstring). Notebook 08 §3 writes one."""

    def __init__(self):
        object.__setattr__(self, "params", {})
        object.__setattr__(self, "grads", {})
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "training", True)
        self._set_state(_NOTHING, 0, None, False)  # nothing kept for backward yet

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
        if not _GRAD_ENABLED.get():  # under no_grad nothing is kept, so nothing to put back
            return self.forward(*args, **kwargs)
        outermost = _CALL.get() is None  # the outermost call puts back what a failure changed
        token = _CALL.set({}) if outermost else None
        try:
            out = self.forward(*args, **kwargs)
        except BaseException:
            if outermost:  # a call that raised keeps nothing
                for module, state in _CALL.get().items():
                    module._set_state(*state)
            raise
        finally:
            if outermost:
                _CALL.reset(token)
        if isinstance(out, np.ndarray):
            self._remember()
            object.__setattr__(self, "_out_shape", out.shape)  # what backward's dout must be
        return out

    def forward(self, *args, **kwargs):
        raise NotImplementedError

    def backward(self, dout):
        raise NotImplementedError

    def save_for_backward(self, value):
        """Called by forward: keep `value` for backward, and count the call (see the module
        docstring). Inside no_grad nothing is kept or counted."""
        if not _GRAD_ENABLED.get():
            return
        self._remember()
        forwards = self._forwards
        if forwards and self._looked and self.training:
            forwards = 0  # the forwards before were looks in eval mode: start afresh
        self._set_state(value, forwards + 1, None, not self.training)  # shape: set by __call__

    def _remember(self):
        """Inside a call, note this module's state before the call first changes it."""
        call = _CALL.get()
        if call is not None and self not in call:
            call[self] = (self._saved, self._forwards, self._out_shape, self._looked)

    def _set_state(self, saved, forwards, out_shape, looked):
        object.__setattr__(self, "_saved", saved)  # what the last forward kept for backward
        object.__setattr__(self, "_forwards", forwards)  # forwards since the last backward
        object.__setattr__(self, "_out_shape", out_shape)  # the shape that forward returned
        object.__setattr__(self, "_looked", looked)  # True: they were made in eval mode

    def forget_forwards(self):
        """Drop what earlier forwards kept, here and below, so the next forward starts a new
        computation (the training loop and the gradient checks call it first). Returns the
        module."""
        for m in self.modules():
            m._set_state(_NOTHING, 0, None, False)
        return self

    def saved_for_backward(self, dout=_NOT_GIVEN):
        """Called by backward(dout): what the forward kept; a clear error if there is no single
        forward to differentiate, or if `dout` does not have the shape that forward returned."""
        name = type(self).__name__
        if self._saved is _NOTHING:
            raise RuntimeError(f"{name}.backward() was called before forward() (or after a "
                               "forward under no_grad, which keeps nothing): run forward first, "
                               "it keeps what backward needs")
        if self._saved is _USED:
            raise RuntimeError(f"{name}.backward() was called a second time after one forward: "
                               "its gradients were added by the first backward already (in "
                               "torch too, a forward serves one backward). Run forward again, "
                               "then backward")
        if self._forwards > 1:
            forwards = self._forwards
            self.forget_forwards()  # so that running the forward again, once, starts afresh
            raise RuntimeError(
                f"{name} was called {forwards} times before this backward, but it keeps only "
                "the last call's inputs, so backward would return the gradient of that call "
                "alone; those calls are forgotten now. If a cell with the forward ran twice, "
                "run it once more, then backward. Calls only to look at an output go under "
                "`with no_grad():`; to use a layer twice, use one layer per call, or run "
                "backward after each forward")
        if dout is not _NOT_GIVEN and self._out_shape not in (None, np.shape(dout)):
            raise ValueError(f"{name}.backward: dout has shape {np.shape(dout)} but forward "
                             f"returned shape {self._out_shape}; dout is the gradient of the "
                             "loss with respect to that output, so it has its shape")
        saved = self._saved
        self._set_state(_USED, 0, None, False)
        return saved

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
        """This module and every module below it, depth first, each once (a module used in
        two places too), as torch's modules() gives them."""
        seen, stack = set(), [self]
        while stack:
            module = stack.pop()
            if id(module) not in seen:
                seen.add(id(module))
                yield module
                stack.extend(reversed(list(module.children())))

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

"""The torch side of notebook 10's training-step exercise (minitf.check.nb10 holds its data:
the cases' descriptions, the comparison and the hints; torch stays in this room).

`build_case` makes a fresh tiny translator in torch with its optimiser and two batches;
`run_recording_moves` calls a learner's `train_step(model, batch, optimizer, device)` on each
batch and records which batch tensors it sent to `device`; `step_variant` is the training step
with one thing changed, for the known mistakes.

Where a batch went cannot be seen on a CPU-only machine: there `t.to(device)` returns `t`
itself. So the moves are recorded instead: while the function runs, a
torch.overrides.TorchFunctionMode sees every torch call and notes a `.to(...)`, `.cuda()` or
`device=` call that sends a batch tensor, or a tensor made from one, to `device`, outside the
model's own forward (whose ids TorchTransformer moves itself). That is what the same function
does on a GPU, where a tensor left behind would meet weights on another device and raise.
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from .. import tasks
from ..model import Transformer
from ..tokens import PAD_ID
from . import to_torch

BATCH_NAMES = ("src", "tgt_in", "tgt_out")


def build_case(norm_first, seed, optimizer, numbers):
    """(model, batches, optimizer, device), fresh: a tiny translator in torch (d_model 8,
    float64, on the CPU), "SGD" (lr 0.5) or "Adam" over its parameters, and one batch of
    id tensors per list of `numbers`."""
    model = to_torch(Transformer(len(tasks.SOURCE_VOCAB), len(tasks.TARGET_VOCAB), d_model=8,
                                 num_heads=2, num_layers=1, d_ff=16, max_len=16,
                                 norm_first=norm_first, dtype=np.float64, rng=seed))
    if optimizer == "Adam":
        opt = torch.optim.Adam(model.parameters(), lr=0.01, betas=(0.9, 0.98), eps=1e-9)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
    batches = [tuple(torch.from_numpy(a) for a in tasks.make_batch(np.array(n)))
               for n in numbers]
    return model, batches, opt, torch.device("cpu")


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


def _target(func, args, kwargs):
    """The device a torch call sends its tensor to, or None."""
    name = getattr(func, "__name__", "")
    if name == "to" and args and isinstance(args[0], torch.Tensor):
        try:
            return torch._C._nn._parse_to(*args[1:], **kwargs)[0]  # how Module.to reads them
        except Exception:  # noqa: BLE001 - arguments torch itself would reject
            return None
    if name == "cuda" and args and isinstance(args[0], torch.Tensor):
        index = args[1] if len(args) > 1 else kwargs.get("device")
        return torch.device("cuda" if index is None else index)
    if kwargs.get("device") is not None:
        try:
            return torch.device(kwargs["device"])
        except Exception:  # noqa: BLE001
            return None
    return None


class _MoveRecorder(TorchFunctionMode):
    """Records which batch tensors were sent to `device` outside the model's forward:
    watch(batch) before a call, done() after it; `moved[i]` is True when batch tensor i was
    sent there in every call so far."""

    def __init__(self, device):
        super().__init__()
        self.device = device
        self.depth = 0  # > 0 inside the model's forward
        self.origin, self.kept = {}, []  # id(tensor) -> which batch tensor it was made from
        self.moved = [True] * len(BATCH_NAMES)
        self.now = [False] * len(BATCH_NAMES)

    def watch(self, batch):
        self.origin.clear()
        self.kept = list(_tensors(batch))  # alive, so that no id is reused during the call
        for i, t in enumerate(batch if isinstance(batch, (tuple, list)) else ()):
            if isinstance(t, torch.Tensor) and i < len(BATCH_NAMES):
                self.origin[id(t)] = i
        self.now = [False] * len(BATCH_NAMES)

    def done(self):
        self.moved = [a and b for a, b in zip(self.moved, self.now)]

    def _sends_here(self, where):
        return where is not None and where.type == self.device.type and (
            where.index is None or self.device.index is None or where.index == self.device.index)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.depth == 0:
            sources = {self.origin[id(t)] for t in _tensors((args, kwargs))
                       if id(t) in self.origin}
            if sources:
                if self._sends_here(_target(func, args, kwargs)):
                    for i in sources:
                        self.now[i] = True
                for t in _tensors(out):
                    if id(t) not in self.origin:
                        self.origin[id(t)] = min(sources)
                        self.kept.append(t)
        return out


def run_recording_moves(fn, model, batches, optimizer, device):
    """Call fn(model, batch, optimizer, device) once per batch, gradients on whatever fn
    switches off -> (what each call returned, (sent to device?) for src, tgt_in, tgt_out in
    every call). What fn raises goes to the caller."""
    recorder = _MoveRecorder(device)

    def enter(module, args):
        recorder.depth += 1

    def leave(module, args, output):
        recorder.depth -= 1

    hooks = (model.register_forward_pre_hook(enter),
             model.register_forward_hook(leave, always_call=True))
    returned = []
    try:
        with torch.enable_grad():  # restored afterwards, should fn turn it off for good
            for batch in batches:
                recorder.watch(batch)
                with recorder:
                    value = fn(model, batch, optimizer, device)
                recorder.done()
                returned.append(value)
    finally:
        for hook in hooks:
            hook.remove()
    return returned, tuple(recorder.moved)


def weights(model):
    """name -> a copy of each parameter as a numpy array."""
    return {name: p.detach().cpu().numpy().copy() for name, p in model.named_parameters()}


def step_variant(model, batch, optimizer, device, *, move=BATCH_NAMES, loss="right",
                 order="zbcs", item=True, cuda=False):
    """train_step with one thing changed, for the exercise's known mistakes: `move` names the
    batch tensors sent to device; `loss` is "right", "pad" (padding counted), "smoothing"
    (none), "softmax" (softmax before F.cross_entropy) or "3d" (logits not flattened);
    `order` spells zero_grad, backward, clip, step (z, b, c, s) in the order they run; `item`:
    return loss.item(), not the tensor; `cuda`: .cuda() instead of .to(device)."""
    def place(name, t):
        if name not in move:
            return t
        return t.cuda() if cuda else t.to(device)

    src, tgt_in, tgt_out = (place(n, t) for n, t in zip(BATCH_NAMES, batch))
    logits = model(src, tgt_in)
    if loss == "softmax":
        logits = torch.softmax(logits, dim=-1)
    options = dict(ignore_index=PAD_ID, label_smoothing=0.1)
    if loss == "pad":
        del options["ignore_index"]
    if loss == "smoothing":
        del options["label_smoothing"]
    if loss == "3d":
        value = F.cross_entropy(logits, tgt_out, **options)
    else:
        value = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), **options)
    actions = {"z": optimizer.zero_grad, "b": value.backward, "s": optimizer.step,
               "c": lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)}
    for action in order:
        actions[action]()
    return value.item() if item else value


__all__ = ["BATCH_NAMES", "build_case", "run_recording_moves", "step_variant", "weights"]

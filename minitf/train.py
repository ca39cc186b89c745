"""Training (训练): cross-entropy, Adam with the paper's warm-up, gradient clipping, and the
loop that puts them together for any model and task. Built in notebook 08; the number task's
batches and evaluation are in `minitf.tasks.numbers`, the translator's run in `minitf.translator`.

    loss = −(1/N) Σ_t Σ_v q_t(v) log softmax(z_t)(v),   q_t = (1 − ε) onehot(y_t) + ε / V

over the N target tokens that are not padding (ε is the label smoothing);
∂loss/∂z_t = (softmax(z_t) − q_t) / N.
"""

import dataclasses
import math
import time

import numpy as np

from .attention import log_softmax
from .fast.threads import with_chosen_threads
from .module import Module, as_rng
from .tokens import PAD_ID
from .validation import (
    require_cross_entropy_args,
    require_fits,
    require_instance,
    require_int,
    require_real,
)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """How `train` trains: the optimiser steps, the batch, the schedule and the loss.
    The defaults are the translator's. No notebook names it: notebook 08 §6 passes its fields
    as keywords (steps, warmup, …)."""

    steps: int = 400
    batch_size: int = 64
    warmup: int = 100
    lr_scale: float = 0.25
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    cooldown: float = 0.25  # the share of steps at the end over which lr falls to 0

    def __post_init__(self):
        for name in ("steps", "batch_size", "warmup"):  # stored as Python ints: no wraparound
            object.__setattr__(self, name, require_int(getattr(self, name), name, low=1))
        require_real(self.lr_scale, "lr_scale", low=0, low_open=True)
        require_real(self.label_smoothing, "label_smoothing", 0, 1, high_open=True)
        require_real(self.clip_norm, "clip_norm", low=0)
        require_real(self.cooldown, "cooldown", 0, 1)


def cross_entropy(logits, targets, ignore_index=PAD_ID, label_smoothing=0.0):
    """Cross-entropy (交叉熵), notebook 08 §1.

    logits (..., V), targets (...) int -> (loss: float, dlogits (..., V) in logits' dtype).

    The mean over the targets that are not `ignore_index` (None: every target counts);
    with no such target the loss is 0 and dlogits is zero. A logit of -inf marks a class
    that cannot occur (it gets probability 0); NaN and +inf are refused, and so is a scored
    target whose logit is -inf (its loss would be infinite).
    """
    logits, targets, keep, eps = require_cross_entropy_args(logits, targets, ignore_index,
                                                            label_smoothing)
    V = logits.shape[-1]
    y = np.where(keep, targets.reshape(-1), 0)  # (N,) an ignored row scores class 0, times 0
    n = int(keep.sum())
    dtype = logits.dtype
    z = logits.reshape(-1, V)
    log_probs = log_softmax(z)  # (N, V); a fully masked row is -inf, not NaN
    rows = np.arange(len(y))
    eps = dtype.type(eps)
    token_loss = -(1 - eps) * log_probs[rows, y]
    if eps > 0:  # (never 0 × log 0 for a class whose logit is -inf)
        token_loss -= eps / V * log_probs.sum(axis=1)
    loss = float(token_loss[keep].sum(dtype=np.float64) / max(n, 1))
    grad = np.exp(log_probs)
    grad -= eps / V
    grad[rows, y] -= 1 - eps
    grad *= (keep / dtype.type(max(n, 1)))[:, None]
    return loss, grad.reshape(logits.shape)


def warmup_schedule(step, *, d_model, warmup, scale=1.0):
    """The paper's warm-up schedule (预热), notebook 08 §5, for step ≥ 1:

        lr = scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5).

    It rises linearly for `warmup` steps, peaks at scale · (d_model · warmup)^-0.5, then decays
    as step^-0.5.
    """
    step = require_int(step, "step", low=1)
    d_model, warmup = require_int(d_model, "d_model", low=1), require_int(warmup, "warmup", low=1)
    scale = require_real(scale, "scale", low=0, low_open=True)
    return scale * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def cooldown_factor(step, steps, share):
    """The factor on the learning rate over the last `share` of `steps`: 1 before them, then
    falling linearly towards 0 at the last step. The weights settle instead of stopping at
    whatever the last few large steps left: without it, a run that was exact on every number
    at step 350 can lose 1% of them by step 400.
    Notebook 08 §6."""
    steps = require_int(steps, "steps", low=1)
    step = require_int(step, "step", 1, steps)
    last = round(require_real(share, "share", 0, 1) * steps)
    return min(1.0, (steps - step + 1) / (last + 1))


def global_norm(model):
    """√(Σ grad²) over every gradient of the model.
    clip_grad_norm uses it; no notebook calls it by name."""
    require_instance(model, Module, "model")
    return math.sqrt(sum(float(np.vdot(g, g)) for _, g in model.named_grads()))


def clip_grad_norm(model, max_norm):
    """Scale every gradient in place so that their global norm is at most `max_norm`.

    Returns the norm before clipping.
    Notebook 08 §6.
    """
    max_norm = require_real(max_norm, "max_norm", low=0, low_open=True)
    norm = global_norm(model)
    if norm > max_norm:
        factor = max_norm / norm
        for _, grad in model.named_grads():
            grad *= grad.dtype.type(factor)
    return norm


class Adam:
    """Adam (优化器), notebook 08 §4; the paper's betas (0.9, 0.98) and eps 1e-9.

    Each step, for every parameter p with gradient g (t counts the steps):
        m ← β₁ m + (1 − β₁) g,   v ← β₂ v + (1 − β₂) g²,
        m̂ = m / (1 − β₁ᵗ),       v̂ = v / (1 − β₂ᵗ),      p ← p − lr · m̂ / (√v̂ + ε).
    Parameters change in place. Set `lr` before a `step()` to follow a schedule.
    """

    def __init__(self, model, lr, betas=(0.9, 0.98), eps=1e-9):
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"betas must be a pair (β₁, β₂), got {betas!r}")
        betas = tuple(require_real(b, "betas", 0, 1, high_open=True) for b in betas)
        self.lr = require_real(lr, "lr", low=0)
        self.eps = require_real(eps, "eps", low=0, low_open=True)
        self.betas, self.t = betas, 0
        # the model's arrays are updated in place, never replaced, so these stay valid
        self.params = dict(require_instance(model, Module, "model").named_parameters())
        dtypes = {p.dtype for p in self.params.values()}
        if not dtypes <= {np.dtype(np.float32), np.dtype(np.float64)}:
            raise ValueError(f"Adam needs float32 or float64 parameters, "
                             f"got {sorted(map(str, dtypes))}")
        self.grads = dict(model.named_grads())
        self.m = {name: np.zeros_like(p) for name, p in self.params.items()}
        self.v = {name: np.zeros_like(p) for name, p in self.params.items()}

    def step(self):
        self.t += 1
        beta1, beta2 = self.betas
        for name, p in self.params.items():
            g, m, v, f = self.grads[name], self.m[name], self.v[name], p.dtype.type
            m *= f(beta1)
            m += f(1 - beta1) * g
            v *= f(beta2)
            v += f(1 - beta2) * g * g
            m_hat = m / f(1 - beta1 ** self.t)
            v_hat = v / f(1 - beta2 ** self.t)
            p -= f(self.lr) * m_hat / (np.sqrt(v_hat) + f(self.eps))


def _require_batch_fits(model, batch_size):
    """A batch of `batch_size` sequences of the model's max_len fits in memory: at least its
    float64 logits or activations, whichever is larger, are held (a lower bound)."""
    width = max(getattr(model, "d_model", 1),
                getattr(getattr(model, "config", None), "tgt_vocab_size", 1))
    require_fits(8 * batch_size * getattr(model, "max_len", 1) * width,
                 "one batch's activations", batch_size=batch_size)


def report_line(report, steps, eval_name="held-out"):
    """One progress line: `step 100/400  loss 0.8123  held-out  97.0%  41,203 tok/s`.
    `report` is one entry of train's history (a dict). The command line and the torch engine
    print it; no notebook does."""
    accuracy = report["accuracy"]
    exact = "   --  " if accuracy is None else f"{accuracy:6.1%}"
    return (f"step {report['step']:>{len(str(steps))}}/{steps}  loss {report['loss']:.4f}  "
            f"{eval_name} {exact}  {report['tokens_per_s']:,.0f} tok/s")


@with_chosen_threads  # BLAS on one thread: the steps are small products (fast/threads.py)
def train(model, task, config=TrainConfig(), *, rng=0, log_every=100, max_seconds=None,
          on_report=None, **changes):
    """Train `model` in place on `task` with teacher forcing; returns the history.
    The loop of notebook 08 §6.

    task: what to learn, any object with
      - `batch(rng, batch_size) -> (inputs, targets)`: the model's arguments (a tuple) and
        the target ids its logits are scored against;
      - `ignore_index`: the target id that is not scored (padding), or None;
      - optionally `evaluate(model, final) -> float`: an accuracy, measured at every report
        (`final` is True after the last step).
    config: a TrainConfig; keyword `changes` replace its fields (`train(model, task, steps=150)`).
    rng: a Generator or a seed; batches are drawn from it. The learning rate is
    warmup_schedule × cooldown_factor. Every `log_every` steps, and after the last one (or
    after `max_seconds`), a report is added to the history and passed to `on_report`.

    History: dict of lists `step, loss, accuracy, tokens_per_s, lr`, one entry per report;
    loss is the mean since the previous report, tokens_per_s counts the scored target tokens,
    accuracy is None without `task.evaluate`.
    """
    config = dataclasses.replace(config, **changes)
    require_instance(model, Module, "model")
    if not callable(getattr(task, "batch", None)):
        raise TypeError(f"task must have a batch(rng, batch_size) method, got "
                        f"{type(task).__name__}")
    log_every = require_int(log_every, "log_every", low=1)
    if max_seconds is not None:
        max_seconds = require_real(max_seconds, "max_seconds", low=0)
    rng = as_rng(rng)
    evaluate = getattr(task, "evaluate", None)
    _require_batch_fits(model, config.batch_size)
    optimizer = Adam(model, lr=0.0)
    model.forget_forwards()  # calls made before training (to look at outputs) do not count
    history = {key: [] for key in ("step", "loss", "accuracy", "tokens_per_s", "lr")}
    losses, tokens, start = [], 0, time.perf_counter()
    interval_start = start
    for step in range(1, config.steps + 1):
        inputs, targets = task.batch(rng, config.batch_size)
        logits = model(*inputs)
        loss, dlogits = cross_entropy(logits, targets, task.ignore_index,
                                      config.label_smoothing)
        model.zero_grad()
        model.backward(dlogits)
        if config.clip_norm:
            clip_grad_norm(model, config.clip_norm)
        optimizer.lr = (warmup_schedule(step, d_model=model.d_model, warmup=config.warmup,
                                        scale=config.lr_scale)
                        * cooldown_factor(step, config.steps, config.cooldown))
        optimizer.step()
        losses.append(loss)
        tokens += int(targets.size if task.ignore_index is None
                      else (targets != task.ignore_index).sum())
        out_of_time = max_seconds is not None and time.perf_counter() - start >= max_seconds
        last = step == config.steps or out_of_time
        if step % log_every == 0 or last:
            elapsed = time.perf_counter() - interval_start
            report = {"step": step, "loss": float(np.mean(losses)),
                      "accuracy": evaluate(model, last) if evaluate else None,
                      "tokens_per_s": tokens / max(elapsed, 1e-9),
                      "lr": optimizer.lr}
            for key, value in report.items():
                history[key].append(value)
            if on_report:
                on_report(report)
            losses, tokens, interval_start = [], 0, time.perf_counter()
        if out_of_time:
            break
    return history

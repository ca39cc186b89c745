"""Training (训练): cross-entropy, Adam with the paper's warm-up, gradient clipping, and the
training loop for the number translator. Built in notebook 08; checkpoints are in
`minitf.checkpoint`.

    loss = −(1/N) Σ_t Σ_v q_t(v) log softmax(z_t)(v),   q_t = (1 − ε) onehot(y_t) + ε / V

over the N target tokens that are not padding (ε is the label smoothing);
∂loss/∂z_t = (softmax(z_t) − q_t) / N.
"""

import dataclasses
import math
import sys
import time

import numpy as np

from . import tasks
from .attention import log_softmax
from .generate import beam_search, greedy_decode
from .model import Transformer, TransformerConfig
from .module import Module
from .tasks import PAD_ID
from .validation import (
    require_float_array,
    require_instance,
    require_int,
    require_int_array,
    require_real,
)

# The shipped translator's shape: small enough to train in seconds on one core.
TRANSLATOR_CONFIG = TransformerConfig(len(tasks.SOURCE_VOCAB), len(tasks.TARGET_VOCAB),
                                      d_model=64, num_heads=4, num_layers=2, d_ff=128,
                                      max_len=16)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """How `train` trains: the optimiser steps, the batch, the schedule and the loss.
    Notebook 08 §6."""

    steps: int = 400
    batch_size: int = 64
    warmup: int = 100
    lr_scale: float = 0.25
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    by_shape: float = 0.5  # the share of training numbers drawn shape by shape (see _Batches)
    cooldown: float = 0.25  # the share of steps at the end over which lr falls to 0

    def __post_init__(self):
        for name in ("steps", "batch_size", "warmup"):
            require_int(getattr(self, name), name, low=1)
        require_real(self.lr_scale, "lr_scale", low=0, low_open=True)
        require_real(self.label_smoothing, "label_smoothing", 0, 1, high_open=True)
        require_real(self.clip_norm, "clip_norm", low=0)
        require_real(self.by_shape, "by_shape", 0, 1)
        require_real(self.cooldown, "cooldown", 0, 1)


def cross_entropy(logits, targets, ignore_index=PAD_ID, label_smoothing=0.0):
    """Cross-entropy (交叉熵), notebook 08 §1.

    logits (..., V), targets (...) int -> (loss: float, dlogits (..., V) in logits' dtype).

    The mean over the targets that are not `ignore_index` (None: every target counts);
    with no such target the loss is 0 and dlogits is zero. A logit of -inf marks a class
    that cannot occur (it gets probability 0); NaN and +inf are refused.
    """
    logits = require_float_array(logits, "logits")
    targets = require_int_array(targets, "targets")
    if ignore_index is not None:
        ignore_index = require_int(ignore_index, "ignore_index")
    eps = require_real(label_smoothing, "label_smoothing", 0, 1, high_open=True)
    if logits.ndim < 1 or targets.shape != logits.shape[:-1]:
        raise ValueError(f"targets of shape {targets.shape} do not match logits of shape "
                         f"{logits.shape} (expected targets {logits.shape[:-1]})")
    if np.isnan(logits).any() or np.isposinf(logits).any():
        raise ValueError("logits contain NaN or +inf")
    if eps > 0 and np.isneginf(logits).any():
        raise ValueError("label smoothing gives every class probability ε/V, so a class with "
                         "logit -inf would make the loss infinite; use label_smoothing=0")
    V = logits.shape[-1]
    y = targets.reshape(-1)
    keep = np.ones(y.shape, dtype=bool) if ignore_index is None else y != ignore_index
    if keep.any() and (y[keep].min() < 0 or y[keep].max() >= V):
        raise ValueError(f"targets must be ids in 0..{V - 1} (or ignore_index)")
    y = np.where(keep, y, 0)
    n = int(keep.sum())
    dtype = logits.dtype if np.issubdtype(logits.dtype, np.floating) else np.dtype(np.float64)
    z = logits.reshape(-1, V).astype(dtype)
    log_probs = log_softmax(z)  # (N, V)
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
    Notebook 08 §6 (gradient clipping)."""
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


def new_model(seed=0, **changes):
    """A fresh translator for the number task: TRANSLATOR_CONFIG with `changes` applied.
    Notebook 08 §6."""
    return Transformer.from_config(dataclasses.replace(TRANSLATOR_CONFIG, **changes), rng=seed)


def translate_ids(model, src, beam_size=1):
    """src (B, L_s) ids -> (B, T) target ids, without <bos>.
    Notebook 08 §6."""
    require_instance(model, Transformer, "model")
    if require_int(beam_size, "beam_size", low=1) == 1:
        return greedy_decode(model, src, max_len=model.max_len)
    return beam_search(model, src, beam_size=beam_size, max_len=model.max_len)


def exact_match(model, numbers, batch_size=500, beam_size=1):
    """Fraction of `numbers` whose greedy (or beam) translation equals tasks.chinese(n).
    Notebook 08 §6."""
    require_instance(model, Transformer, "model")
    numbers = require_int_array(numbers, "numbers")
    batch_size = require_int(batch_size, "batch_size", low=1)
    if numbers.ndim != 1 or numbers.size == 0:
        raise ValueError(f"numbers must be a non-empty 1-D list of numbers, got shape "
                         f"{numbers.shape}: an accuracy over no numbers means nothing")
    correct = 0
    for i in range(0, len(numbers), batch_size):
        chunk = numbers[i:i + batch_size]
        src, _, _ = tasks.make_batch(chunk)
        out = translate_ids(model, src, beam_size)
        correct += sum(tasks.decode_target(row) == tasks.chinese(int(n))
                       for row, n in zip(out, chunk))
    return correct / len(numbers)


def number_shape(n):
    """The shape of a number: its digits with every nonzero one written x, and teens marked,
    because Chinese writes them differently (十二, not 一十二): 7 -> 'x', 40 -> 'x0',
    12 -> 'xx teen', 1005 -> 'x00x', 0 -> '0'. There are 18 shapes in 0..9999.
    Notebook 08 §6 (sampling the training numbers)."""
    n = require_int(n, "n", 0, tasks.MAX_NUMBER)
    digits = "".join("0" if c == "0" else "x" for c in str(n))
    return digits + (" teen" if 10 <= n < 20 else "")


class _Batches:
    """Every training pair encoded once; `sample(rng, B)` draws a batch, trimmed of the
    columns that are padding in every row.

    A uniform draw would rarely show the short numbers people type first: 0..99 are 1% of
    0..9999 and the round thousands 0.09%. So a share `by_shape` of the draws picks a shape
    (number_shape) uniformly, then a number of that shape; the rest are uniform.
    """

    def __init__(self, numbers, by_shape=0.0):
        self.src, self.tgt_in, self.tgt_out = tasks.make_batch(numbers)
        self.src_len = (self.src != PAD_ID).sum(axis=1)
        self.tgt_len = (self.tgt_out != PAD_ID).sum(axis=1)
        shapes = [number_shape(n) for n in np.asarray(numbers).tolist()]
        _, shape_of, shape_sizes = np.unique(shapes, return_inverse=True, return_counts=True)
        self.p = ((1 - by_shape) / len(shapes)
                  + by_shape / (len(shape_sizes) * shape_sizes[shape_of]))  # (N,), sums to 1

    def sample(self, rng, batch_size):
        rows = rng.choice(len(self.src), size=batch_size, p=self.p)
        ls, lt = self.src_len[rows].max(), self.tgt_len[rows].max()
        return self.src[rows, :ls], self.tgt_in[rows, :lt], self.tgt_out[rows, :lt]


class _Progress:
    """A bar redrawn in place on a terminal; elsewhere (notebooks, logs) one line per report."""

    def __init__(self, steps, stream, eval_name):
        self.steps, self.stream, self.eval_name = steps, stream, eval_name
        self.tty = getattr(stream, "isatty", lambda: False)()
        self.drawn, self.width = 0.0, 0

    def _text(self, step, loss, accuracy, tokens_per_s):
        exact = "   --  " if accuracy is None else f"{accuracy:6.1%}"
        return (f"step {step:>{len(str(self.steps))}}/{self.steps}  loss {loss:.4f}  "
                f"{self.eval_name} {exact}  {tokens_per_s:,.0f} tok/s")

    def _bar(self, step, text, end=""):
        filled = round(20 * step / self.steps)
        line = f"[{'#' * filled}{'.' * (20 - filled)}] {text}"
        self.width = max(self.width, len(line))
        self.stream.write(f"\r{line.ljust(self.width)}{end}")
        self.stream.flush()
        self.drawn = time.perf_counter()

    def update(self, step, loss, accuracy, tokens_per_s):
        """Between reports: redraw the bar on a terminal, at most five times a second."""
        if self.tty and time.perf_counter() - self.drawn > 0.2:
            self._bar(step, self._text(step, loss, accuracy, tokens_per_s))

    def report(self, step, loss, accuracy, tokens_per_s, final=False):
        text = self._text(step, loss, accuracy, tokens_per_s)
        if self.tty:
            self._bar(step, text, "\n" if final else "")
        else:
            self.stream.write(text + "\n")
            self.stream.flush()


def train(model, config=TrainConfig(), *, seed=0, numbers=None, log_every=100, eval_size=500,
          max_seconds=None, verbose=True, stream=None, eval_name="held-out", **changes):
    """Train `model` in place on the number task with teacher forcing; returns the history.
    The loop of notebook 08 §6.

    config: a TrainConfig; keyword `changes` replace its fields (`train(model, steps=150)`).
    The learning rate is warmup_schedule × cooldown_factor; the batches draw a share
    `config.by_shape` of their numbers shape by shape (number_shape).
    numbers: (train, test) arrays of numbers, default tasks.split(). Every `log_every` steps
    the held-out exact match is measured on `eval_size` test numbers and a progress line is
    written to `stream` (default sys.stdout) when `verbose`; after the last step (or after
    `max_seconds`) it is measured on every test number. `eval_name` names the test numbers in
    the progress lines: "held-out", or "all" when they are every number trained on.

    History: dict of lists `step, loss, accuracy, tokens_per_s, lr`, one entry per report;
    loss is the mean since the previous report, tokens_per_s counts target tokens.
    """
    config = dataclasses.replace(config, **changes)
    steps, batch_size = config.steps, config.batch_size
    train_numbers, test_numbers = tasks.split() if numbers is None else numbers
    rng = np.random.default_rng(seed)
    eval_numbers = rng.permutation(test_numbers)[:eval_size]
    batches = _Batches(train_numbers, config.by_shape)
    optimizer = Adam(model, lr=0.0)
    progress = _Progress(steps, stream or sys.stdout, eval_name) if verbose else None
    history = {key: [] for key in ("step", "loss", "accuracy", "tokens_per_s", "lr")}
    losses, tokens, start = [], 0, time.perf_counter()
    interval_start, step, accuracy = start, 0, None
    while step < steps:
        step += 1
        src, tgt_in, tgt_out = batches.sample(rng, batch_size)
        logits = model.forward(src, tgt_in)
        loss, dlogits = cross_entropy(logits, tgt_out, PAD_ID, config.label_smoothing)
        model.zero_grad()
        model.backward(dlogits)
        if config.clip_norm:
            clip_grad_norm(model, config.clip_norm)
        optimizer.lr = (warmup_schedule(step, d_model=model.d_model, warmup=config.warmup,
                                        scale=config.lr_scale)
                        * cooldown_factor(step, steps, config.cooldown))
        optimizer.step()
        losses.append(loss)
        tokens += int((tgt_out != PAD_ID).sum())
        out_of_time = max_seconds is not None and time.perf_counter() - start >= max_seconds
        last = step == steps or out_of_time
        if step % log_every == 0 or last:
            elapsed = time.perf_counter() - interval_start
            accuracy = exact_match(model, test_numbers if last else eval_numbers)
            history["step"].append(step)
            history["loss"].append(float(np.mean(losses)))
            history["accuracy"].append(accuracy)
            history["tokens_per_s"].append(tokens / max(elapsed, 1e-9))
            history["lr"].append(optimizer.lr)
            if progress:
                progress.report(step, history["loss"][-1], accuracy,
                                history["tokens_per_s"][-1], final=last)
            losses, tokens, interval_start = [], 0, time.perf_counter()
        elif progress:
            progress.update(step, float(np.mean(losses)), accuracy,
                            tokens / max(time.perf_counter() - interval_start, 1e-9))
        if out_of_time:
            break
    return history

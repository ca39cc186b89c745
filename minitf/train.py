"""Training (训练): cross-entropy, Adam with the paper's warm-up, gradient clipping, the training
loop for the number translator, and checkpoints.

    loss = −(1/N) Σ_t Σ_v q_t(v) log softmax(z_t)(v),   q_t = (1 − ε) onehot(y_t) + ε / V

over the N target tokens that are not padding (ε is the label smoothing);
∂loss/∂z_t = (softmax(z_t) − q_t) / N.
"""

import json
import math
import os
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np

from . import tasks
from .attention import log_softmax
from .generate import beam_search, greedy_decode
from .model import Transformer
from .tasks import PAD_ID

MODEL_CONFIG = dict(d_model=64, num_heads=4, num_layers=2, d_ff=128, max_len=16)
TRAIN_CONFIG = dict(steps=400, batch_size=64, warmup=100, lr_scale=0.25, label_smoothing=0.1,
                    clip_norm=1.0)


def cross_entropy(logits, targets, ignore_index=PAD_ID, label_smoothing=0.0):
    """logits (..., V), targets (...) int -> (loss: float, dlogits (..., V) in logits' dtype).

    The mean over the targets that are not `ignore_index` (None: every target counts);
    with no such target the loss is 0 and dlogits is zero.
    """
    logits = np.asarray(logits)
    targets = np.asarray(targets)
    if targets.shape != logits.shape[:-1]:
        raise ValueError(f"targets of shape {targets.shape} do not match logits of shape "
                         f"{logits.shape} (expected targets {logits.shape[:-1]})")
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing!r}")
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
    eps = dtype.type(label_smoothing)
    token_loss = -(1 - eps) * log_probs[rows, y] - eps / V * log_probs.sum(axis=1)
    loss = float(token_loss[keep].sum(dtype=np.float64) / max(n, 1))
    grad = np.exp(log_probs)
    grad -= eps / V
    grad[rows, y] -= 1 - eps
    grad *= (keep / dtype.type(max(n, 1)))[:, None]
    return loss, grad.reshape(logits.shape)


def warmup_schedule(step, *, d_model, warmup, scale=1.0):
    """The paper's rate: scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), step ≥ 1.

    It rises linearly for `warmup` steps, peaks at scale · (d_model · warmup)^-0.5, then decays
    as step^-0.5.
    """
    if step < 1:
        raise ValueError(f"steps count from 1, got {step}")
    return scale * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def global_norm(model):
    """√(Σ grad²) over every gradient of the model."""
    return math.sqrt(sum(float(np.vdot(g, g)) for _, _, g in model.named_parameters()))


def clip_grad_norm(model, max_norm):
    """Scale every gradient in place so that their global norm is at most `max_norm`.

    Returns the norm before clipping.
    """
    norm = global_norm(model)
    if norm > max_norm:
        factor = max_norm / norm
        for _, _, grad in model.named_parameters():
            grad *= grad.dtype.type(factor)
    return norm


class Adam:
    """Adam: m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g², p ← p − lr · m̂ / (√v̂ + ε),
    with m̂ = m / (1 − β₁ᵗ), v̂ = v / (1 − β₂ᵗ). Parameters are updated in place.

    Set `lr` before a `step()` to follow a schedule.
    """

    def __init__(self, model, lr, betas=(0.9, 0.98), eps=1e-9):
        self.model, self.lr, self.betas, self.eps = model, lr, betas, eps
        self.t = 0
        self.m = {name: np.zeros_like(p) for name, p, _ in model.named_parameters()}
        self.v = {name: np.zeros_like(p) for name, p, _ in model.named_parameters()}
        self._params = list(model.named_parameters())  # arrays change in place, never replaced

    def step(self):
        self.t += 1
        beta1, beta2 = self.betas
        step_size = self.lr / (1 - beta1 ** self.t)
        inv_v_correction = 1 / math.sqrt(1 - beta2 ** self.t)  # √v̂ = √v / √(1 − β₂ᵗ)
        for name, p, g in self._params:
            m, v, f = self.m[name], self.v[name], p.dtype.type
            m *= f(beta1)
            m += f(1 - beta1) * g
            v *= f(beta2)
            tmp = np.multiply(g, g)
            tmp *= f(1 - beta2)
            v += tmp
            np.sqrt(v, out=tmp)
            tmp *= f(inv_v_correction)
            tmp += f(self.eps)
            np.divide(m, tmp, out=tmp)
            tmp *= f(step_size)
            p -= tmp


def new_model(seed=0, **config):
    """A fresh translator for the number task; `config` overrides MODEL_CONFIG."""
    config = {**MODEL_CONFIG, **config}
    return Transformer(len(tasks.SOURCE_VOCAB), len(tasks.TARGET_VOCAB), **config, rng=seed)


def translate_ids(model, src, beam_size=1):
    """src (B, L_s) ids -> (B, T) target ids, without <bos>."""
    if beam_size == 1:
        return greedy_decode(model, src, max_len=model.max_len)
    return beam_search(model, src, beam_size=beam_size, max_len=model.max_len)


def exact_match(model, numbers, batch_size=500, beam_size=1):
    """Fraction of `numbers` whose greedy (or beam) translation equals tasks.chinese(n)."""
    numbers = np.asarray(numbers)
    correct = 0
    for i in range(0, len(numbers), batch_size):
        chunk = numbers[i:i + batch_size]
        src, _, _ = tasks.make_batch(chunk)
        out = translate_ids(model, src, beam_size)
        correct += sum(tasks.decode_target(row) == tasks.chinese(int(n))
                       for row, n in zip(out, chunk))
    return correct / max(len(numbers), 1)


class _Batches:
    """Every training pair encoded once; `sample(rng, B)` draws a batch, trimmed of the
    columns that are padding in every row."""

    def __init__(self, numbers):
        self.src, self.tgt_in, self.tgt_out = tasks.make_batch(numbers)
        self.src_len = (self.src != PAD_ID).sum(axis=1)
        self.tgt_len = (self.tgt_out != PAD_ID).sum(axis=1)

    def sample(self, rng, batch_size):
        rows = rng.integers(0, len(self.src), size=batch_size)
        ls, lt = self.src_len[rows].max(), self.tgt_len[rows].max()
        return self.src[rows, :ls], self.tgt_in[rows, :lt], self.tgt_out[rows, :lt]


class _Progress:
    """A bar redrawn in place on a terminal; elsewhere (notebooks, logs) one line per report."""

    def __init__(self, steps, stream):
        self.steps, self.stream = steps, stream
        self.tty = getattr(stream, "isatty", lambda: False)()
        self.drawn, self.width = 0.0, 0

    def _text(self, step, loss, accuracy, tokens_per_s):
        held_out = "   --  " if accuracy is None else f"{accuracy:6.1%}"
        return (f"step {step:>{len(str(self.steps))}}/{self.steps}  loss {loss:.4f}  "
                f"held-out {held_out}  {tokens_per_s:,.0f} tok/s")

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


def train(model, *, steps=TRAIN_CONFIG["steps"], batch_size=TRAIN_CONFIG["batch_size"],
          warmup=TRAIN_CONFIG["warmup"], lr_scale=TRAIN_CONFIG["lr_scale"],
          label_smoothing=TRAIN_CONFIG["label_smoothing"], clip_norm=TRAIN_CONFIG["clip_norm"],
          seed=0, numbers=None, log_every=100, eval_size=500, max_seconds=None,
          verbose=True, stream=None):
    """Train `model` in place on the number task with teacher forcing; returns the history.

    numbers: (train, test) arrays of numbers, default tasks.split(). Every `log_every` steps
    the held-out exact match is measured on `eval_size` test numbers and a progress line is
    written to `stream` (default sys.stdout) when `verbose`; after the last step (or after
    `max_seconds`) it is measured on every test number.

    History: dict of lists `step, loss, accuracy, tokens_per_s, lr`, one entry per report;
    loss is the mean since the previous report, tokens_per_s counts target tokens.
    """
    train_numbers, test_numbers = tasks.split() if numbers is None else numbers
    rng = np.random.default_rng(seed)
    eval_numbers = rng.permutation(test_numbers)[:eval_size]
    batches = _Batches(train_numbers)
    optimizer = Adam(model, lr=0.0)
    progress = _Progress(steps, stream or sys.stdout) if verbose else None
    history = {key: [] for key in ("step", "loss", "accuracy", "tokens_per_s", "lr")}
    losses, tokens, start = [], 0, time.perf_counter()
    interval_start, step, accuracy = start, 0, None
    while step < steps:
        step += 1
        src, tgt_in, tgt_out = batches.sample(rng, batch_size)
        logits = model.forward(src, tgt_in)
        loss, dlogits = cross_entropy(logits, tgt_out, PAD_ID, label_smoothing)
        model.zero_grad()
        model.backward(dlogits)
        if clip_norm:
            clip_grad_norm(model, clip_norm)
        optimizer.lr = warmup_schedule(step, d_model=model.d_model, warmup=warmup,
                                       scale=lr_scale)
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


CHECKPOINT_FORMAT = "minitf-translator-1"
_PARAM_PREFIX = "param/"


def _file_mode(path):
    """The mode a newly created file would get (mkstemp's files are private)."""
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def save_checkpoint(path, model, **metadata):
    """Write the model's weights, config and the task's vocabularies to one .npz at `path`.

    `metadata` (JSON-serialisable values) is stored too. The file is written under a temporary
    name and then renamed, so a failed save leaves an earlier file at `path` as it was.
    """
    path = Path(path)
    arrays = {_PARAM_PREFIX + name: p for name, p, _ in model.named_parameters()}
    arrays.update(
        format=np.array(CHECKPOINT_FORMAT),
        config=np.array(json.dumps(model.config)),
        metadata=np.array(json.dumps(metadata)),
        source_vocab=np.array(tasks.SOURCE_VOCAB.tokens),
        target_vocab=np.array(tasks.TARGET_VOCAB.tokens),
    )
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), _file_mode(path))
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def _read_npz(path):
    """Every array of the .npz at `path`, read eagerly; ValueError if it is not one."""
    unreadable = (ValueError, EOFError, zipfile.BadZipFile, zlib.error)
    try:
        npz = np.load(path, allow_pickle=False)
    except unreadable as e:
        raise ValueError(f"{path}: truncated, corrupt or not an .npz file ({e})") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: not a minitf checkpoint (a single .npy array, not an .npz)")
    with npz:
        try:
            return {key: npz[key] for key in npz.files}
        except unreadable as e:
            raise ValueError(f"{path}: truncated or corrupt checkpoint ({e})") from None


def _text(arrays, key):
    value = arrays[key]
    if value.dtype.kind != "U" or value.ndim != 0:
        raise ValueError(f"{key!r} should be text, got {value.dtype} of shape {value.shape}")
    return str(value)


def _vocab(arrays, key):
    tokens = arrays[key]
    n = len(tasks.SPECIAL_TOKENS)
    if tokens.dtype.kind != "U" or tokens.ndim != 1 or tuple(tokens[:n]) != tasks.SPECIAL_TOKENS:
        raise ValueError(f"{key!r} should list the tokens, starting with {tasks.SPECIAL_TOKENS}")
    return tasks.Vocab(tokens[n:].tolist())


def _model_from(arrays):
    missing = [k for k in ("format", "config", "metadata", "source_vocab", "target_vocab")
               if k not in arrays]
    if missing:
        raise ValueError(f"not a minitf checkpoint (no {', '.join(missing)})")
    if _text(arrays, "format") != CHECKPOINT_FORMAT:
        raise ValueError(f"unknown checkpoint format {_text(arrays, 'format')!r} "
                         f"(expected {CHECKPOINT_FORMAT!r})")
    config = json.loads(_text(arrays, "config"))
    metadata = json.loads(_text(arrays, "metadata"))
    source_vocab, target_vocab = _vocab(arrays, "source_vocab"), _vocab(arrays, "target_vocab")
    sizes = (config.get("src_vocab_size"), config.get("tgt_vocab_size"))
    if sizes != (len(source_vocab), len(target_vocab)):
        raise ValueError(f"the config's vocabulary sizes {sizes} differ from the stored "
                         f"vocabularies ({len(source_vocab)}, {len(target_vocab)})")
    state = {k[len(_PARAM_PREFIX):]: v for k, v in arrays.items() if k.startswith(_PARAM_PREFIX)}
    dtypes = sorted({str(v.dtype) for v in state.values()})
    if len(dtypes) != 1 or not np.issubdtype(dtypes[0], np.floating):
        raise ValueError(f"expected weights of one float dtype, got {dtypes}")
    model = Transformer(**config, dtype=dtypes[0], rng=0)
    model.load_state_dict(state)
    meta = dict(config=config, source_vocab=source_vocab, target_vocab=target_vocab,
                metadata=metadata)
    return model, meta


def load_checkpoint(path):
    """A checkpoint written by save_checkpoint -> (model, meta).

    meta: {"config", "source_vocab", "target_vocab" (tasks.Vocab), "metadata"}. A truncated,
    corrupt or foreign file, or weights that do not fit the stored config, is a ValueError
    naming the path.
    """
    arrays = _read_npz(path)
    try:
        return _model_from(arrays)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: {e}") from None

"""Training the translator with torch, across processes (分布式数据并行).

Built in notebook 10 §5; run as ``python -m minitf train --engine torch [--nproc N] [--device
cpu|cuda]``, or under torchrun on several machines (README).

The same task, batches, loss, clipping and learning-rate schedule as
`minitf.translator.train_translator`, with
torch doing the arithmetic: the model is `to_torch` of a new minitf model, the optimiser
torch's Adam under a LambdaLR that follows minitf's `warmup_schedule` × `cooldown_factor`.
Every process draws the same batch (same seed), runs its own shard of the rows, and
DistributedDataParallel averages the gradients in backward; each process scales its summed
token losses by world size / (target tokens of the whole batch), so the average is the gradient
of the whole batch's mean loss — the same step as one process on the whole batch. Process 0
measures the held-out exact match with minitf (`from_torch`) and hands back the minitf model.
"""

import dataclasses
import os
import pickle
import socket
import sys
import tempfile
import time
from contextlib import contextmanager

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from .. import tasks
from ..model import Transformer, TransformerConfig
from ..tokens import PAD_ID
from ..train import TrainConfig, cooldown_factor, report_line, warmup_schedule
from ..validation import require_bool, require_instance, require_int, require_real
from . import from_torch, to_torch

TORCHRUN_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def started_by_torchrun():
    """True when torchrun (or another launcher) has set this process's rank and world."""
    return all(v in os.environ for v in TORCHRUN_VARIABLES)


def train_with_torch(config, *, model_config, numbers, by_shape, nproc=1, device="cpu",
                     seed=0, log_every=100, eval_size=500, max_seconds=None, verbose=True,
                     threads=None, header=None, stream=None, eval_name="held-out", **changes):
    """Train a new model for the number task with torch in `nproc` processes -> (minitf model,
    history). The caller says what to train (the translator's command line passes its own
    config, shape and numbers):

    config: a minitf.train.TrainConfig, with keyword `changes` applied (`steps=150`);
    model_config: the TransformerConfig of the new model (the number task's vocabulary
    sizes), built as Transformer.from_config(model_config, rng=seed);
    numbers: (train, test) arrays of numbers (tasks.require_train_test; None: tasks.split());
    by_shape: the share of each batch drawn shape by shape (tasks.NumberTask);
    the other arguments mean what they mean for minitf.translator.train_translator.
    `header`: a line process 0 prints first, followed by how the processes run. Under
    torchrun (which sets the processes) leave nproc at 1; there every process but the first
    returns (None, None). Notebook 10 §5.
    """
    config = dataclasses.replace(_require_configs(config, model_config), **changes)
    numbers = tasks.require_train_test(numbers)
    by_shape = require_real(by_shape, "by_shape", 0, 1)
    _require_run_options(seed=seed, log_every=log_every, eval_size=eval_size,
                       max_seconds=max_seconds, verbose=verbose, threads=threads)
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: this torch finds no CUDA device "
                         f"(torch {torch.__version__})")
    if isinstance(nproc, bool) or not isinstance(nproc, int) or nproc < 1:
        raise ValueError(f"nproc must be an int >= 1, got {nproc!r}")
    if device == "cuda" and nproc > torch.cuda.device_count():
        raise ValueError(f"nproc={nproc} processes on cuda need a GPU each; this machine has "
                         f"{torch.cuda.device_count()}")
    if started_by_torchrun() and nproc != 1:
        raise ValueError("under torchrun, --nproc-per-node sets the processes; leave --nproc out")
    if config.batch_size < nproc:
        raise ValueError(f"batch_size={config.batch_size} leaves some of the {nproc} "
                         "processes without rows")
    job = dict(config=config, model_config=model_config, device=device, seed=seed,
               numbers=numbers, by_shape=by_shape, log_every=log_every,
               eval_size=eval_size, max_seconds=max_seconds, verbose=verbose,
               threads=threads, header=header, eval_name=eval_name)
    if started_by_torchrun():
        job["init_method"] = "env://"
        return _run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]),
                    int(os.environ["LOCAL_RANK"]), job, stream or sys.stdout)
    # One machine: nproc processes meet at a free port on the loopback address.
    job["init_method"] = f"tcp://127.0.0.1:{_free_port()}"
    with _gloo_on_loopback():
        if nproc == 1:
            return _run(0, 1, 0, job, stream or sys.stdout)
        with tempfile.TemporaryDirectory() as tmp:
            result = os.path.join(tmp, "result.pickle")  # process 0 leaves its model here
            mp.spawn(_spawned, args=(nproc, job, result), nprocs=nproc, join=True)
            with open(result, "rb") as f:
                return pickle.load(f)


def _require_configs(config, model_config):
    """config, after checking that it is a TrainConfig and that model_config is a
    TransformerConfig with the number task's vocabulary sizes."""
    require_instance(config, TrainConfig, "config")
    require_instance(model_config, TransformerConfig, "model_config")
    sizes = (model_config.src_vocab_size, model_config.tgt_vocab_size)
    task_sizes = (len(tasks.SOURCE_VOCAB), len(tasks.TARGET_VOCAB))
    if sizes != task_sizes:
        raise ValueError(f"model_config has vocabulary sizes {sizes}, not the number task's "
                         f"{task_sizes}")
    return config


def _require_run_options(*, seed, log_every, eval_size, max_seconds, verbose, threads):
    """The options train_translator checks too, checked before any process starts."""
    require_int(seed, "seed", low=0)
    require_int(log_every, "log_every", low=1)
    require_int(eval_size, "eval_size", low=1)
    if max_seconds is not None:
        require_real(max_seconds, "max_seconds", low=0)
    require_bool(verbose, "verbose")
    if threads is not None:
        require_int(threads, "threads", low=1)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _gloo_on_loopback():
    """gloo's processes talk over the loopback interface (unless the user chose one)."""
    loopback = [name for _, name in socket.if_nameindex() if name.startswith("lo")]
    if not loopback or "GLOO_SOCKET_IFNAME" in os.environ:
        yield
        return
    os.environ["GLOO_SOCKET_IFNAME"] = loopback[0]
    try:
        yield
    finally:
        del os.environ["GLOO_SOCKET_IFNAME"]


def _spawned(rank, world_size, job, result):
    model, history = _run(rank, world_size, rank, job, sys.stdout)
    if rank == 0:
        with open(result, "wb") as f:
            pickle.dump((model, history), f)


def _run(rank, world_size, local_rank, job, stream):
    """One process's share of the training; -> (minitf model, history) on rank 0."""
    cuda = job["device"] == "cuda"
    if cuda:
        torch.cuda.set_device(local_rank)
    # Unless told otherwise, the processes of one machine share its cores.
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
    torch.set_num_threads(job["threads"] or max(1, torch.get_num_threads() // local_world))
    backend = "nccl" if cuda else "gloo"
    dist.init_process_group(backend, init_method=job["init_method"], rank=rank,
                            world_size=world_size)
    try:
        if rank == 0 and job["verbose"] and job["header"]:
            print(f"{job['header']}; torch {torch.__version__}, {world_size} process"
                  f"{'es' if world_size > 1 else ''} ({backend}, {job['device']}), "
                  f"{torch.get_num_threads()} thread{'s' if torch.get_num_threads() > 1 else ''}"
                  " each", file=stream, flush=True)
        return _loop(rank, world_size, local_rank if cuda else None, job, stream)
    finally:
        dist.destroy_process_group()


def _loop(rank, world_size, cuda_index, job, stream):
    cfg = job["config"]
    train_numbers, test_numbers = job["numbers"]
    rng = np.random.default_rng(job["seed"])  # drawn in the order train_translator draws
    task = tasks.NumberTask(train_numbers, test_numbers, by_shape=job["by_shape"],
                            eval_size=job["eval_size"], rng=rng)
    device = "cpu" if cuda_index is None else f"cuda:{cuda_index}"
    first = Transformer.from_config(job["model_config"], rng=job["seed"])  # as new_model does
    module = to_torch(first, device=device)
    model = DistributedDataParallel(module, device_ids=None if cuda_index is None
                                    else [cuda_index], forward_sync_buffers=False)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: warmup_schedule(
        i + 1, d_model=module.d_model, warmup=cfg.warmup, scale=cfg.lr_scale)
        * cooldown_factor(min(i + 1, cfg.steps), cfg.steps, cfg.cooldown))
    # (LambdaLR also asks for the rate after the last step, which is never used)
    is_first = rank == 0
    verbose = is_first and job["verbose"]
    history = {key: [] for key in ("step", "loss", "accuracy", "tokens_per_s", "lr")}
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)  # this rank's, since report
    steps_since, tokens, start = 0, 0, time.perf_counter()
    interval_start, step = start, 0
    while step < cfg.steps:
        step += 1
        (src, tgt_in), tgt_out = task.batch(rng, cfg.batch_size)
        n_tokens = int((tgt_out != PAD_ID).sum())  # of the whole batch, over every process
        rows = np.array_split(np.arange(len(src)), world_size)[rank]  # this process's shard
        lr = schedule.get_last_lr()[0]
        logits = model(torch.from_numpy(src[rows]), torch.from_numpy(tgt_in[rows]))
        shard_loss = F.cross_entropy(
            logits.flatten(0, 1), torch.from_numpy(tgt_out[rows]).flatten().to(device),
            ignore_index=PAD_ID, label_smoothing=cfg.label_smoothing, reduction="sum")
        optimizer.zero_grad()
        # DDP averages over processes: scaled by world / n, the average is d(mean loss).
        (shard_loss * (world_size / n_tokens)).backward()
        if cfg.clip_norm:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
        optimizer.step()
        schedule.step()
        loss_sum += shard_loss.detach() / n_tokens
        steps_since += 1
        tokens += n_tokens
        last = step == cfg.steps or _out_of_time(job["max_seconds"], start, device)
        if step % job["log_every"] == 0 or last:
            dist.all_reduce(loss_sum)  # Σ over processes: the whole batches' mean losses
            if is_first:
                elapsed = time.perf_counter() - interval_start
                report = {"step": step, "loss": loss_sum.item() / steps_since,
                          "accuracy": task.evaluate(from_torch(model), last),
                          "tokens_per_s": tokens / max(elapsed, 1e-9), "lr": lr}
                for key, value in report.items():
                    history[key].append(value)
                if verbose:
                    print(report_line(report, cfg.steps, job["eval_name"]), file=stream,
                          flush=True)
            loss_sum.zero_()
            steps_since, tokens, interval_start = 0, 0, time.perf_counter()
        if last:
            break
    dist.barrier()  # the others wait while process 0 measures the last exact match
    return (from_torch(model), history) if is_first else (None, None)


def _out_of_time(max_seconds, start, device):
    """Process 0's clock decides for everyone, so that all stop after the same step."""
    if max_seconds is None:
        return False
    flag = torch.tensor([time.perf_counter() - start >= max_seconds], device=device)
    dist.broadcast(flag, src=0)
    return bool(flag.item())

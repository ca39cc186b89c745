"""The command line: `python -m minitf train …` and `python -m minitf translate …`."""

import argparse
import dataclasses
import os
import subprocess
import sys
import time

from . import train as training
from .checkpoint import save_checkpoint
from .translate import translate

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _blas_threads_to_set(args):
    """The BLAS thread count train must run with, or None when the process already has it.

    --threads, else 1 unless the environment chooses: the model's matrices are so small
    that more threads only add waiting, and a busy machine makes that far worse.
    """
    wanted = args.threads
    if wanted is None and not any(v in os.environ for v in BLAS_THREAD_VARIABLES):
        wanted = 1
    if wanted is None or all(os.environ.get(v) == str(wanted) for v in BLAS_THREAD_VARIABLES):
        return None
    return wanted


def _rerun_with_blas_threads(threads, argv):
    """numpy has loaded its BLAS before this module runs, and BLAS reads its thread count
    when it loads: so run the same command again in a process that has it set."""
    env = {**os.environ, **{v: str(threads) for v in BLAS_THREAD_VARIABLES}}
    command = [sys.executable, "-m", "minitf", *argv]
    if os.name == "posix":
        sys.stdout.flush()
        os.execve(sys.executable, command, env)
    return subprocess.call(command, env=env)


def _train(args):
    config = dataclasses.replace(training.TrainConfig(), steps=args.steps)
    settings = {**dataclasses.asdict(training.TRANSLATOR_CONFIG), **dataclasses.asdict(config)}
    header = "training " + ", ".join(f"{k}={v}" for k, v in settings.items()) + \
        f", seed={args.seed}"
    start = time.perf_counter()
    if args.engine == "torch":
        model, history = _train_with_torch(args, config, header)
        if model is None:  # a torchrun process other than the first: it saves nothing
            return 0
    else:
        threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
        print(f"{header}; BLAS threads {threads}")
        model = training.new_model(args.seed)
        history = training.train(model, config, seed=args.seed, max_seconds=args.max_seconds,
                                 verbose=not args.quiet)
    seconds = time.perf_counter() - start
    path = save_checkpoint(
        args.out, model, seed=args.seed, steps=history["step"][-1],
        held_out_exact_match=history["accuracy"][-1], train_config=dataclasses.asdict(config),
        engine=args.engine)
    print(f"held-out exact match {history['accuracy'][-1]:.2%} after {history['step'][-1]} "
          f"steps in {seconds:.1f} s; saved to {path}")
    return 0


def _train_with_torch(args, config, header):
    try:
        from .pytorch_train import train  # imports torch: only here
    except ModuleNotFoundError as e:
        if e.name != "torch":
            raise
        raise ValueError("--engine torch needs PyTorch: pip install -e '.[torch]'") from None
    return train(config, nproc=args.nproc, device=args.device, seed=args.seed,
                 max_seconds=args.max_seconds, verbose=not args.quiet, threads=args.threads,
                 header=header)


def _lines(args):
    if args.texts:
        yield from args.texts
    else:
        for line in sys.stdin:
            if line.strip():
                yield line


def _translate(args):
    for text in _lines(args):
        print(translate(text, checkpoint=args.checkpoint, beam_size=args.beam), flush=True)
    return 0


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m minitf",
        description="Translate English number words to Chinese numerals with a small "
                    "Transformer, or train one.")
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("train", help="train the translator from scratch and save it")
    p.add_argument("--steps", type=int, default=training.TrainConfig.steps,
                   help="optimiser steps (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default %(default)s)")
    p.add_argument("--out", default="translator.npz",
                   help="where to save the checkpoint (default %(default)s)")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="stop after this many seconds of training")
    p.add_argument("--threads", type=int, default=None,
                   help="BLAS threads (default 1, unless OPENBLAS_NUM_THREADS or "
                        "OMP_NUM_THREADS is set): this small model gains nothing from more")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--engine", choices=("numpy", "torch"), default="numpy",
                   help="numpy: minitf's own forward and backward (default); torch: the same "
                        "model in PyTorch under torch.distributed (needs torch installed)")
    p.add_argument("--nproc", type=int, default=1,
                   help="with --engine torch: processes on this machine, each training on "
                        "its share of every batch (default %(default)s)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="with --engine torch: where each process computes (default %(default)s)")
    p.set_defaults(run=_train)

    p = commands.add_parser("translate", help="translate number words, e.g. 'one thousand five'")
    p.add_argument("texts", nargs="*",
                   help="phrases to translate; without any, one per line from stdin")
    p.add_argument("--checkpoint", default=None,
                   help="a checkpoint saved by train (default: the shipped weights)")
    p.add_argument("--beam", type=int, default=1, help="beam size (default 1: greedy)")
    p.set_defaults(run=_translate)
    return parser


def main(argv=None):
    """Run a command; argv None means this process's command line, and only then may train
    restart the process to set the BLAS threads."""
    args = _parser().parse_args(argv)
    if args.command == "train" and args.steps < 1:
        _parser().error("--steps must be at least 1")
    if args.command == "train" and args.threads is not None and args.threads < 1:
        _parser().error("--threads must be at least 1")
    if args.command == "train" and args.nproc < 1:
        _parser().error("--nproc must be at least 1")
    if args.command == "train" and args.engine == "numpy" and (args.nproc, args.device) != (
            1, "cpu"):
        _parser().error("--nproc and --device need --engine torch")
    if args.command == "train" and argv is None:
        threads = _blas_threads_to_set(args)
        if threads is not None:
            return _rerun_with_blas_threads(threads, sys.argv[1:])
    if args.command == "translate" and args.beam < 1:
        _parser().error("--beam must be at least 1")
    try:
        return args.run(args)
    except (ValueError, FileNotFoundError, IsADirectoryError, PermissionError) as e:
        print(str(e).splitlines()[0] if str(e) else type(e).__name__, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `… | head -1`: stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())

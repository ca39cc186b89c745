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
    model = training.new_model(args.seed)
    config = dataclasses.replace(training.TrainConfig(), steps=args.steps)
    settings = {**dataclasses.asdict(training.TRANSLATOR_CONFIG), **dataclasses.asdict(config)}
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print("training " + ", ".join(f"{k}={v}" for k, v in settings.items())
          + f", seed={args.seed}; BLAS threads {threads}")
    start = time.perf_counter()
    history = training.train(model, config, seed=args.seed, max_seconds=args.max_seconds,
                             verbose=not args.quiet)
    seconds = time.perf_counter() - start
    path = save_checkpoint(
        args.out, model, seed=args.seed, steps=history["step"][-1],
        held_out_exact_match=history["accuracy"][-1], train_config=dataclasses.asdict(config))
    print(f"held-out exact match {history['accuracy'][-1]:.2%} after {history['step'][-1]} "
          f"steps in {seconds:.1f} s; saved to {path}")
    return 0


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

"""The command line: `python -m minitf train …` and `python -m minitf translate …`.

Every mistake on the command line is one line on stderr and exit status 2, found before any
work starts; so is a file that cannot be read. A trained model that cannot be saved where
--out says is saved in the temporary folder instead (exit status 1, saying where).
"""

import argparse
import dataclasses
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .. import tasks
from ..fast import blas_threads
from ..train import TrainConfig
from ..validation import require_int, require_real, shorten
from . import (
    BY_SHAPE,
    MAX_BEAM,
    TRANSLATOR_CONFIG,
    load_translator,
    new_model,
    save_translator,
    train_translator,
    translate_each,
)
from .checkpoint import check_save_path

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
STDIN_BATCH = 1000  # lines of piped stdin translated together
MAX_LINE = 1 << 16  # characters of one stdin line; a longer one stops the reading, named


def _say(message):
    """One line on stderr; nothing when stderr is closed (`2>&-`), where print would write
    to stdout among the translations."""
    if sys.stderr is not None:
        print(message, file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (it prints the usage first otherwise)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


# train


def _blas_threads(args):
    """The BLAS threads numpy training runs on: --threads, else OPENBLAS_NUM_THREADS or
    OMP_NUM_THREADS when set to a count, else 1 (the model's matrices are so small that more
    threads only add waiting, and a busy machine makes that far worse). Set with
    threadpoolctl (minitf.fast.blas_threads), in this process."""
    if args.threads is not None:
        return args.threads
    for variable in BLAS_THREAD_VARIABLES:
        value = os.environ.get(variable, "").strip()
        if value.isdigit() and int(value) >= 1:
            return int(value)
    return 1


def _require_out(out):
    """--out must name a file, or nothing yet, in a folder that exists and can be written
    to; a device such as /dev/null, a FIFO or a socket is not replaced (check_save_path)."""
    path = Path(out)
    if path.is_dir():
        raise ValueError(f"--out {shorten(out)} is a folder; give a file name, "
                         f"e.g. {shorten(str(path / 'translator.npz'))}")
    folder = path.parent
    if not folder.is_dir():
        problem = "is not a folder" if folder.exists() else "does not exist"
        raise ValueError(f"--out {shorten(out)}: {shorten(str(folder))} {problem}")
    try:
        check_save_path(out)
    except ValueError as e:
        raise ValueError(f"--out {e}") from None
    except OSError as e:  # a symlink loop, a name too long
        raise ValueError(f"--out {shorten(out)}: {_reason(e)}") from None
    try:  # a trial file: permissions, read-only file systems and the like all show here
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise ValueError(f"--out {shorten(out)}: cannot write in {shorten(str(folder))} "
                         f"({e.strerror or e})") from None


def _require_train_options(args):
    """Every train option, checked before anything is trained."""
    require_int(args.steps, "--steps", low=1)
    require_int(args.seed, "--seed", low=0)
    if args.max_seconds is not None:
        require_real(args.max_seconds, "--max-seconds", 0, low_open=True)
    if args.threads is not None:
        require_int(args.threads, "--threads", low=1)
    require_int(args.nproc, "--nproc", low=1)
    if args.engine == "numpy" and (args.nproc, args.device) != (1, "cpu"):
        raise ValueError("--nproc and --device need --engine torch")
    _require_out(args.out)


def _train(args):
    config = dataclasses.replace(TrainConfig(), steps=args.steps)
    if args.all_numbers:
        every = np.arange(tasks.MAX_NUMBER + 1)
        numbers, trained_on, measured_on = (every, every), "all numbers 0..9999", "all"
    else:
        numbers, measured_on = tasks.split(), "held-out"
        trained_on = "the training numbers of tasks.split() (2000 held out)"
    train_config = {**dataclasses.asdict(config), "by_shape": BY_SHAPE}
    settings = {**dataclasses.asdict(TRANSLATOR_CONFIG), **train_config}
    header = (f"training on {trained_on}: " + ", ".join(f"{k}={v}" for k, v in settings.items())
              + f", seed={args.seed}")
    start, cpu_start = time.perf_counter(), time.process_time()
    if args.engine == "torch":
        model, history = _train_with_torch(args, config, numbers, header, measured_on)
        if model is None:  # a torchrun process other than the first: it saves nothing
            return 0
    else:
        with blas_threads(_blas_threads(args)) as threads:
            print(f"{header}; BLAS threads {threads}")
            model = new_model(args.seed)
            history = train_translator(model, config, seed=args.seed, numbers=numbers,
                                       max_seconds=args.max_seconds, verbose=not args.quiet,
                                       eval_name=measured_on)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    accuracy, tested = history["accuracy"][-1], len(numbers[1])
    score = {"exact_match_all" if args.all_numbers else "held_out_exact_match": accuracy}
    path, status = _save_somewhere(args.out, model, seed=args.seed, steps=history["step"][-1],
                                   trained_on=trained_on, command=args.command_line, **score,
                                   train_config=train_config, engine=args.engine)
    print(f"exact match on {measured_on} {tested} numbers: {accuracy:.2%} "
          f"({round(accuracy * tested)}/{tested}) after {history['step'][-1]} steps in "
          f"{seconds:.1f} s ({cpu:.1f} s of CPU in this process); saved to {path}")
    return status


def _save_somewhere(out, model, **metadata):
    """(path, exit status): the trained model saved to `out` (status 0), or, when that fails
    after training (a full disk, a file size limit), to a new file in the temporary folder
    (status 1, and one line on stderr saying both). A model that cannot be saved anywhere
    is a SaveError naming `out`."""
    try:
        return save_translator(out, model, **metadata), 0
    except OSError as e:
        failure = e
    try:
        fd, fallback = tempfile.mkstemp(prefix="minitf-translator-", suffix=".npz")
        os.close(fd)
        save_translator(fallback, model, **metadata)
    except OSError as e:
        raise SaveError(f"cannot save the trained model to {out} ({_reason(failure)}), nor "
                        f"to the temporary folder ({_reason(e)})") from None
    _say(f"cannot save to {out} ({_reason(failure)}); saved the trained model to {fallback} "
         "instead")
    return Path(fallback), 1


def _reason(error):
    """An OSError in a few words: "No space left on device"."""
    return (error.strerror or str(error)).removeprefix("cannot save: ")


def _train_with_torch(args, config, numbers, header, eval_name):
    try:
        from ..pytorch.engine import train_with_torch  # imports torch: only here
    except ModuleNotFoundError as e:
        if e.name != "torch":
            raise
        raise ValueError("--engine torch needs PyTorch: install it with `make torch`") from None
    return train_with_torch(config, model_config=TRANSLATOR_CONFIG, numbers=numbers,
                            by_shape=BY_SHAPE, nproc=args.nproc, device=args.device,
                            seed=args.seed, max_seconds=args.max_seconds,
                            verbose=not args.quiet, threads=args.threads, header=header,
                            eval_name=eval_name)


def _add_train(commands):
    p = commands.add_parser("train", help="train the translator from scratch and save it")
    p.add_argument("--steps", type=int, default=TrainConfig.steps,
                   help="optimiser steps (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default %(default)s)")
    p.add_argument("--out", default="translator.npz",
                   help="where to save the checkpoint (default %(default)s)")
    p.add_argument("--all-numbers", action="store_true",
                   help="train on every number 0..9999 and measure on all of them, as the "
                        "shipped weights were; by default 2000 numbers are held out and the "
                        "exact match is measured on them")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="stop after this many seconds of training")
    p.add_argument("--threads", type=int, default=None,
                   help="BLAS threads (default 1, unless OPENBLAS_NUM_THREADS or "
                        "OMP_NUM_THREADS is set): this small model gains nothing from more, "
                        "and a busy core makes more far slower")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--engine", choices=("numpy", "torch"), default="numpy",
                   help="numpy: minitf's own forward and backward (default); torch: the same "
                        "model in PyTorch under torch.distributed (needs torch installed)")
    p.add_argument("--nproc", type=int, default=1,
                   help="with --engine torch: processes on this machine, each training on "
                        "its share of every batch (default %(default)s)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="with --engine torch: where each process computes (default %(default)s)")
    p.set_defaults(run=_train, validate=_require_train_options)


# translate


def _utf8_output():
    """Chinese numerals need an encoding that has them: a console that cannot write them
    (an ASCII locale, PYTHONIOENCODING=ascii) gets UTF-8 anyway, rather than a traceback."""
    try:
        "零".encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        if hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(encoding="utf-8")
    for stream, errors in ((sys.stderr, "backslashreplace"), (sys.stdin, "replace")):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=errors)


def _stdin_batches():
    """Lists of (line number, text) from stdin, text None for a blank line: one line at a
    time from a terminal, so each answer comes as soon as its line is typed; STDIN_BATCH
    lines at a time from a pipe. A closed stdin (`<&-`) reads as empty input; a byte-order
    mark before the first line (Notepad's "UTF-8 with BOM") is dropped. A line longer than
    MAX_LINE characters (`< /dev/zero`) is a ValueError naming it, after the lines before it
    are answered: reading it to its end could take all the memory there is."""
    if sys.stdin is None:
        return
    size = 1 if sys.stdin.isatty() else STDIN_BATCH
    batch = []
    for number in range(1, sys.maxsize):
        try:
            line = sys.stdin.readline(MAX_LINE + 1)
        except OSError as e:  # e.g. stdin opened for writing only (`0>/dev/null`)
            raise ValueError(f"cannot read stdin: {_reason(e)}") from None
        if not line:
            break
        if len(line) > MAX_LINE and not line.endswith("\n"):
            if batch:
                yield batch
            raise ValueError(f"line {number} is longer than {MAX_LINE:,} characters; give one "
                             "number per line")
        if number == 1:
            line = line.removeprefix("\ufeff")
        batch.append((f"line {number}", line.rstrip("\r\n") if line.strip() else None))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class OutputError(Exception):
    """stdout could not be written (a full disk, a closed file): one line, exit status 1."""


class SaveError(Exception):
    """The trained model could be saved neither at --out nor in the temporary folder: one
    line, exit status 1."""


def _translate(args):
    if sys.stdout is None:
        raise ValueError("stdout is closed: there is nowhere to write the translations")
    _utf8_output()
    load_translator(args.checkpoint)  # a bad checkpoint is refused before any input is read
    if args.texts:
        batches = [[(f"argument {i}", text) for i, text in enumerate(args.texts, 1)]]
    else:
        batches = _stdin_batches()
    refused = 0
    for batch in batches:
        texts = [text for _, text in batch if text is not None]
        answers = iter(translate_each(texts, checkpoint=args.checkpoint, beam_size=args.beam))
        lines = []
        for where, text in batch:
            answer = "" if text is None else next(answers)  # a blank line for a blank line
            if isinstance(answer, ValueError):
                _say(f"{where} {shorten(text)}: {answer}")
                refused += 1
                answer = ""
            lines.append(answer)
        _write_lines(lines)
    return 2 if refused else 0


def _write_lines(lines):
    try:
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OutputError(f"cannot write the translations to stdout: {e.strerror or e}") from None


def _require_translate_options(args):
    require_int(args.beam, "--beam", low=1, high=MAX_BEAM)


def _add_translate(commands):
    p = commands.add_parser(
        "translate", help="translate number words, e.g. 'one thousand five'",
        description="Translate English number words (0..9999, as people write them: "
                    "'Twenty-one', 'one hundred and five') to Chinese numerals. One output "
                    "line per input, in order; an input that cannot be read gives an empty "
                    "line, is named on stderr, and makes the exit status 2.")
    p.add_argument("texts", nargs="*",
                   help="phrases to translate; without any, one per line from stdin (a blank "
                        "line is answered with a blank line)")
    p.add_argument("--checkpoint", default=None,
                   help="a checkpoint saved by train (default: the shipped weights)")
    p.add_argument("--beam", type=int, default=1,
                   help=f"beam size, 1..{MAX_BEAM} (default 1: greedy)")
    p.set_defaults(run=_translate, validate=_require_translate_options)


def _parser():
    parser = _Parser(
        prog="python -m minitf",
        description="Translate English number words to Chinese numerals with a small "
                    "Transformer, or train one.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_train(commands)
    _add_translate(commands)
    return parser


def main(argv=None):
    """Run a command; argv None means this process's command line."""
    words = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(words)
    args.command_line = shlex.join(["python", "-m", "minitf", *words])
    try:
        args.validate(args)
        return args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `… | head -1`: stop quietly, as other tools do
        _discard_stdout()
        return 1
    except OutputError as e:  # e.g. `… > /dev/full`: one line, and no second try at exit
        _discard_stdout()
        _say(e)
        return 1
    except SaveError as e:
        _say(e)
        return 1
    except (ValueError, OSError) as e:  # a symlink loop, an unreadable stdin, a failed save
        _say(_one_line(e))
        return 2


def _one_line(error):
    """An error as one line: "path: No such file" for an OSError that names its file."""
    if isinstance(error, OSError) and error.strerror and error.filename is not None:
        name = str(error.filename)
        return f"{name if len(name) <= 200 else name[:199] + '…'}: {error.strerror}"
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


def _discard_stdout():
    """What is still buffered for stdout goes nowhere (Python flushes it again at exit)."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())

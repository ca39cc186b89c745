"""The decoder alone against the encoder-decoder, on the number task: their parameters, the
steps and seconds of training each needs to be exact on 99% of the held-out numbers, and the
exact match after the last step.

    python benchmarks/decoder_only.py [--seeds 1] [--every 10] [--dtype float64] [--threads 1]

decoder-only: minitf.GPT of tasks.sequence.GPT_CONFIG on the task as one sequence
(tasks.sequence.SequenceTask; notebook 11). encoder-decoder: minitf.Transformer of
translator.TRANSLATOR_CONFIG on the pairs (tasks.NumberTask; notebooks 06–08). Both are
trained with minitf.train.train, batches from the seed, on the numbers of tasks.split(); the
encoder-decoder once with the same run as the decoder-only (tasks.sequence.GPT_TRAINING) and
once with the translator's own (translator.TRANSLATOR_TRAINING). Every --every steps the
exact match (greedy, with the KV cache) is measured on all 2000 held-out numbers; the seconds
are those of training alone (the measurements are left out), with BLAS on --threads threads
(1 by default, as in the notebooks). With --seeds N each row is the median over seeds
0..N-1, with the range after it.
"""

import argparse
import os
import sys
import time
from pathlib import Path


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1 (default 1)")
    parser.add_argument("--every", type=int, default=10,
                        help="measure the held-out exact match every this many steps")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="the models' dtype (default float64, as in notebooks 08 and 11)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    return parser.parse_args()


ARGS = parse_args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # before numpy
    os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402
from common import machine_line  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # minitf without installing
from minitf import GPT, Transformer, tasks  # noqa: E402
from minitf.tasks import sequence  # noqa: E402
from minitf.train import train  # noqa: E402
from minitf.translator import TRANSLATOR_CONFIG, TRANSLATOR_TRAINING  # noqa: E402

TARGET = 0.99
TRAIN_NUMBERS, TEST_NUMBERS = tasks.split()
ROWS = [  # name, the model's class and config, the task's class, the training run
    ("decoder-only", GPT, sequence.GPT_CONFIG, sequence.SequenceTask, "GPT_TRAINING",
     sequence.GPT_TRAINING),
    ("encoder-decoder", Transformer, TRANSLATOR_CONFIG, tasks.NumberTask, "GPT_TRAINING",
     sequence.GPT_TRAINING),
    ("encoder-decoder", Transformer, TRANSLATOR_CONFIG, tasks.NumberTask,
     "TRANSLATOR_TRAINING", TRANSLATOR_TRAINING),
]


def run(model_class, config, task_class, training, seed):
    """Trains one model; returns (parameters, first step at TARGET or None, training seconds
    to it, final exact match, training seconds in all)."""
    model = model_class.from_config(config, dtype=np.dtype(ARGS.dtype), rng=seed)
    rng = np.random.default_rng(seed)
    task = task_class(TRAIN_NUMBERS, TEST_NUMBERS, eval_size=len(TEST_NUMBERS), rng=rng)
    measuring = [0.0]  # seconds spent measuring the exact match, left out of the training's
    evaluate = task.evaluate

    def timed_evaluate(model, final=False):
        start = time.perf_counter()
        accuracy = evaluate(model, final)
        measuring[0] += time.perf_counter() - start
        return accuracy

    task.evaluate = timed_evaluate
    reports = []  # (step, exact match, training seconds so far)
    start = time.perf_counter()
    train(model, task, training, rng=rng, log_every=ARGS.every,
          on_report=lambda r: reports.append(
              (r["step"], r["accuracy"], time.perf_counter() - start - measuring[0])))
    reached = next((r for r in reports if r[1] >= TARGET), (None, None, None))
    return model.num_parameters(), reached[0], reached[2], reports[-1][1], reports[-1][2]


def spread(values, fmt):
    """The median of `values`, then their range when they differ: '2.4 (2.1–3.0)'."""
    if any(v is None for v in values):
        return "never" if all(v is None for v in values) else \
            f"{sum(v is not None for v in values)}/{len(values)} seeds"
    text = fmt.format(np.median(values))
    if len(values) > 1 and min(values) != max(values):
        text += f" ({fmt.format(min(values))}–{fmt.format(max(values))})"
    return text


def main():
    print(machine_line())
    print(f"{ARGS.dtype}, BLAS threads {ARGS.threads}, seeds 0..{ARGS.seeds - 1}; exact match "
          f"on all {len(TEST_NUMBERS)} held-out numbers every {ARGS.every} steps")
    header = ("model", "training run", "parameters", f"steps to {TARGET:.0%}",
              f"seconds to {TARGET:.0%}", "final exact match", "seconds, all steps")
    widths = (16, 26, 10, 13, 16, 24, 18)
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for name, model_class, config, task_class, run_name, training in ROWS:
        results = [run(model_class, config, task_class, training, seed)
                   for seed in range(ARGS.seeds)]
        params, steps, seconds, final, total = zip(*results)
        cells = (name, f"{run_name} ({training.steps})", f"{params[0]:,}",
                 spread(steps, "{:.0f}"), spread(seconds, "{:.1f}"), spread(final, "{:.2%}"),
                 spread(total, "{:.1f}"))
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths)), flush=True)


if __name__ == "__main__":
    main()

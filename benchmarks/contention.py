"""Attention on a busy machine: minitf.fast.blocked_attention against torch, quiet and with
another process spinning on one core (a browser tab, a second notebook).

    python benchmarks/contention.py [--rounds 3] [--runs 7] [--length 512] [--no-pin]

Each round measures `runs` calls of each in turns, first quiet, then with a competitor
(a busy loop in another process, pinned to the last core unless --no-pin) started before
and stopped after; every figure is the median over all rounds of the run-by-run ratio
minitf / torch. BLAS and torch keep the threads they choose themselves, as in a learner's
session: run it without OPENBLAS_NUM_THREADS set (`make bench` unsets it for this script).
It prints figures and is never a pass/fail test.
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np
from common import machine_line, times_in_turns

from minitf.attention import causal_mask
from minitf.fast import blocked_attention
from minitf.figures.cost import random_qkv

SPIN = "while True:\n    pass"


def start_competitor(pin):
    """A busy-loop process, pinned to the last core when `pin` (and the OS lets us)."""
    process = subprocess.Popen([sys.executable, "-c", SPIN])
    if pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(process.pid, {max(os.sched_getaffinity(0))})
    time.sleep(0.3)  # let it reach the loop
    return process


def stop_competitor(process):
    process.kill()
    process.wait()


def torch_attention():
    """torch's CPU scaled_dot_product_attention (causal) at torch's own thread count."""
    import torch
    import torch.nn.functional as F

    def run(q, k, v):
        with torch.no_grad():
            return F.scaled_dot_product_attention(*map(torch.from_numpy, (q, k, v)),
                                                  is_causal=True).numpy()

    return run, torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=7, help="calls of each per condition and round")
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--no-pin", dest="pin", action="store_false",
                        help="let the competitor run on any core")
    args = parser.parse_args()
    try:
        torch_fn, torch = torch_attention()
    except ImportError:
        print("contention: torch is not installed (make torch); nothing to compare with")
        return
    print(f"{machine_line()} | torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    variables = {v: os.environ[v] for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
                 if v in os.environ}
    print(f"thread variables: {variables or 'none set'}; load average before: "
          f"{os.getloadavg()[0]:.2f}")
    L = args.length
    q, k, v = random_qkv(L, 64, (8, 8))
    mask = causal_mask(L)
    fns = [lambda: blocked_attention(q, k, v, mask), lambda: torch_fn(q, k, v)]
    where = "pinned to the last core" if args.pin else "unpinned"
    print(f"B=8, H=8, L={L}, d=64, float32, causal; {args.rounds} rounds x {args.runs} calls "
          f"in turns per condition; competitor {where}")
    results = {"quiet": ([], []), "busy core": ([], [])}
    for _ in range(args.rounds):
        for condition, (ours, theirs) in results.items():
            competitor = start_competitor(args.pin) if condition != "quiet" else None
            try:
                mine, torch_times = times_in_turns(fns, args.runs)
            finally:
                if competitor is not None:
                    stop_competitor(competitor)
            ours.extend(mine)
            theirs.extend(torch_times)
    for condition, (ours, theirs) in results.items():
        ours, theirs = np.array(ours), np.array(theirs)
        ratios = ours / theirs
        print(f"  {condition:>9}: minitf.fast median {np.median(ours) * 1e3:7.1f} ms, torch "
              f"median {np.median(theirs) * 1e3:6.1f} ms; minitf / torch median "
              f"{np.median(ratios):.2f}x (middle half {np.quantile(ratios, 0.25):.2f}-"
              f"{np.quantile(ratios, 0.75):.2f}x; target <= 2x)")


if __name__ == "__main__":
    main()

"""Attention speed against sequence length: minitf's reference vs minitf.fast.blocked_attention
(vs PyTorch if installed).

    python benchmarks/attention.py [--lengths 128 256 512 1024] [--repeats 5] [--runs 30]

Prints time and GFLOP/s per length, the target configuration (B=8, H=8, L=512, d=64,
float32, causal mask) against torch's scaled_dot_product_attention with the same number of
threads (the two run in turns, and the ratio is the median of the run-by-run ratios), and
the peak memory of full vs chunked attention at L=4096.
"""

import argparse
import os

import numpy as np
from common import machine_line, times_in_turns

from minitf.attention import causal_mask, scaled_dot_product_attention
from minitf.fast import blocked_attention, chunked_attention
from minitf.figures.cost import attention_flops, peak_memory, random_qkv, time_attention

D = 64  # features per head, in every case below
TARGET = (8, 8, 512)  # the target: batch, heads, length (causal)
MEMORY_LENGTH = 4096  # where full and chunked attention's peak memory is compared


def torch_sdpa():
    """torch's CPU scaled_dot_product_attention as fn(q, k, v, mask), or None."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None, None
    torch.set_num_threads(int(os.environ.get("OPENBLAS_NUM_THREADS", os.cpu_count())))

    def run(q, k, v, mask):
        q, k, v = (torch.from_numpy(a) for a in (q, k, v))
        with torch.no_grad():
            return F.scaled_dot_product_attention(q, k, v, is_causal=mask is not None).numpy()

    return run, torch.__version__


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256, 512, 1024, 2048])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--runs", type=int, default=30,
                        help="alternating minitf/torch runs for the target configuration")
    args = parser.parse_args()
    torch_fn, torch_version = torch_sdpa()
    torch_note = f"torch {torch_version}" if torch_version else "torch: not installed"
    print(f"{machine_line()} | {torch_note}")
    d, heads = D, (args.heads,)

    print(f"\nbatch (h={args.heads}), d={d}, float32, no mask: best of {args.repeats}")
    print(f"{'L':>6} {'reference ms':>12} {'fast ms':>10} {'GFLOP/s':>8}"
          + (f" {'torch ms':>9}" if torch_fn else ""))
    for n in args.lengths:
        flops = attention_flops(n, n, d, batch=args.heads)
        t_naive = time_attention(n, d, heads, args.repeats, fn=scaled_dot_product_attention)
        t_ours = time_attention(n, d, heads, args.repeats, fn=blocked_attention)
        line = f"{n:>6} {t_naive * 1e3:>12.2f} {t_ours * 1e3:>10.2f} {flops / t_ours / 1e9:>8.1f}"
        if torch_fn:
            line += f" {time_attention(n, d, heads, args.repeats, fn=torch_fn) * 1e3:>9.2f}"
        print(line)

    B, H, L = TARGET
    print(f"\ntarget: B={B}, H={H}, L={L}, d={d}, float32, causal mask")
    t_ours = time_attention(L, d, (B, H), args.repeats, causal=True, fn=blocked_attention)
    t_naive = time_attention(L, d, (B, H), args.repeats, causal=True,
                             fn=scaled_dot_product_attention)
    print(f"  reference {t_naive * 1e3:.1f} ms, fast {t_ours * 1e3:.1f} ms")
    if torch_fn:
        q, k, v = random_qkv(L, d, (B, H))
        mask = causal_mask(L)
        ours, theirs = times_in_turns([lambda: blocked_attention(q, k, v, mask),
                                       lambda: torch_fn(q, k, v, mask)], args.runs)
        ratios = ours / theirs
        print(f"  {args.runs} runs in turns: minitf best {ours.min() * 1e3:.1f} ms, "
              f"median {np.median(ours) * 1e3:.1f} ms; torch best {theirs.min() * 1e3:.1f} ms, "
              f"median {np.median(theirs) * 1e3:.1f} ms")
        print(f"  minitf / torch: median {np.median(ratios):.2f}x, middle half "
              f"{np.quantile(ratios, 0.25):.2f}-{np.quantile(ratios, 0.75):.2f}x "
              f"(target <= 1.5x)")

    n = MEMORY_LENGTH
    q, k, v = random_qkv(n, d)
    full = peak_memory(blocked_attention, q, k, v)
    chunked = peak_memory(chunked_attention, q, k, v, chunk_size=256)
    print(f"\npeak memory at L={n}, d={d}, float32: full {full / 2**20:.1f} MiB, "
          f"chunked (256 queries) {chunked / 2**20:.1f} MiB ({full / chunked:.0f}x less)")


if __name__ == "__main__":
    main()

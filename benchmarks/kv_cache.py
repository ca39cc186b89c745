"""How much the key/value cache speeds up generation: greedy decoding of a randomly
initialised Transformer of TransformerConfig's default shape, with the cache (one token per
step) and without (the whole prefix recomputed every step), eos_id=None so every run makes
exactly --tokens tokens.

    python benchmarks/kv_cache.py [--tokens 256] [--batch 1 8] [--repeats 3]
    OPENBLAS_NUM_THREADS=1 python benchmarks/kv_cache.py
"""

import argparse
import os

import numpy as np
from common import best_time, machine_line

from minitf.generate import greedy_decode
from minitf.model import Transformer, TransformerConfig


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=256, help="tokens to generate")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8], help="batch sizes")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--src-len", type=int, default=20, help="source length")
    parser.add_argument("--vocab", type=int, default=20, help="source and target vocabulary")
    args = parser.parse_args(argv)

    # TransformerConfig's default shape, with room for the tokens generated
    config = TransformerConfig(args.vocab, args.vocab, max_len=max(300, args.tokens))
    model = Transformer.from_config(config, rng=0)
    threads = {k: os.environ[k] for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
               if k in os.environ}
    print(machine_line())
    print(f"thread variables: {threads or 'none set'}")
    print(f"model: {config}, float32, source length {args.src_len}; "
          f"{args.tokens} tokens with eos_id=None, best of {args.repeats}")
    rng = np.random.default_rng(0)
    for batch in args.batch:
        src = rng.integers(3, args.vocab, size=(batch, args.src_len))
        outputs, seconds = {}, {}
        for use_cache in (True, False):
            def run(c=use_cache, s=src):
                return greedy_decode(model, s, max_len=args.tokens, eos_id=None, use_cache=c)
            outputs[use_cache] = run()  # also the warm-up
            seconds[use_cache] = best_time(run, args.repeats, warmup=0)
        ms = {c: 1e3 * s / args.tokens for c, s in seconds.items()}
        print(f"batch {batch}: cache {seconds[True]:.3f} s ({ms[True]:.2f} ms/token), "
              f"no cache {seconds[False]:.3f} s ({ms[False]:.2f} ms/token), "
              f"speedup {seconds[False] / seconds[True]:.1f}x, "
              f"same tokens: {np.array_equal(outputs[True], outputs[False])}")


if __name__ == "__main__":
    main()

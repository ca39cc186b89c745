"""Shared by the benchmark scripts: a description of the machine and a timer."""

import os
import platform
import time

import numpy as np


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_info():
    """'openblas 0.3.x, 1 thread(s)' from threadpoolctl when available, else numpy's config."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        config = np.show_config(mode="dicts") if np.__version__ >= "1.25" else {}
        blas = config.get("Build Dependencies", {}).get("blas", {})
        threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
        return f"{blas.get('name', '?')} {blas.get('version', '')}, threads={threads}".strip()
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    return "; ".join(f"{p['internal_api']} {p['version']}, {p['num_threads']} thread(s)"
                     for p in pools) or "no BLAS found"


def machine_line():
    return (f"machine: {cpu_model()}, {os.cpu_count()} cores | python {platform.python_version()}"
            f" | numpy {np.__version__} | BLAS {blas_info()}")


def best_time(fn, repeats=5, warmup=1):
    """Best wall time of fn() in seconds over `repeats` runs, after `warmup` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def times_in_turns(fns, rounds, warmup=1):
    """Wall times (s) of each function in `fns`, called in turns `rounds` times after
    `warmup` untimed calls each: one array per function.

    On a shared machine the speed drifts from second to second; taking turns exposes every
    function to the same drift, so the ratio of their times is steadier than the ratio of
    two bests taken at different moments.
    """
    for fn in fns:
        for _ in range(warmup):
            fn()
    times = [[] for _ in fns]
    for _ in range(rounds):
        for fn, spent in zip(fns, times):
            start = time.perf_counter()
            fn()
            spent.append(time.perf_counter() - start)
    return [np.array(spent) for spent in times]

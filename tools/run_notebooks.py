"""Re-execute notebooks in place, each in a fresh kernel, stopping at the first error.

Usage: python tools/run_notebooks.py [NOTEBOOK ...]    (default: notebooks/*.ipynb)

Run it through `make notebooks` so the environment matches `make test` (see the Makefile).
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"


def run(path):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        # Keeps the kernel's own log quiet (it warns that local TCP is unencrypted); cell
        # output, stderr included, is recorded as usual.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        # Stable diffs: no per-cell timestamps, and print() output stored as one stream per
        # cell however the kernel happened to chunk it.
        record_timing=False,
        coalesce_streams=True,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},  # the kernel's working directory
    )
    client.execute()
    nbformat.write(nb, path)


def main(args):
    paths = [Path(a) for a in args] or sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    if not paths:
        print(f"No notebooks found in {NOTEBOOK_DIR}.")
        return 0
    for path in paths:
        print(f"running {path}", flush=True)
        try:
            run(path)
        except Exception as err:  # CellExecutionError, timeouts, a dead kernel...
            print(f"\n{path} failed (left unchanged):\n{err}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

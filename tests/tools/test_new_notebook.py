"""`make new-notebook` (tools/new_notebook.py) writes a notebook that passes the course's tests as
it stands: run in a copy of the repository, the notebook tests, the format, the checkers' tests
and nbval pass with the new notebook in the course, and the tool refuses to overwrite it."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _copy_of_the_repository(dest):
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def _run(args, cwd, env):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)


def test_a_new_notebook_passes_every_test_as_it_stands(tmp_path):
    repo = _copy_of_the_repository(tmp_path / "repo")
    number = f"{len(list((ROOT / 'notebooks').glob('*.ipynb'))):02d}"
    # the copy's package, not the installed one, in the tool, its kernel and the tests
    env = dict(os.environ, PYTHONPATH=str(repo), MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    made = _run([sys.executable, "tools/new_notebook.py", number, "example_topic",
                 "An example", "一个例子"], repo, env)
    assert made.returncode == 0, made.stdout + made.stderr
    notebook = repo / "notebooks" / f"{number}_example_topic.ipynb"
    for path in (notebook, repo / "notebooks" / "zh" / notebook.name,
                 repo / "minitf" / "check" / f"nb{number}.py",
                 repo / "translations" / "zh" / f"{number}_example_topic.md"):
        assert path.is_file(), path
    tests = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m",
                  "not slow", "tests/notebooks", "tests/check",
                  "tests/reference/test_docstrings.py"], repo, env)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    nbval = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
                  "--nbval-current-env", str(notebook)], repo, env)
    assert nbval.returncode == 0, nbval.stdout[-3000:]
    again = _run([sys.executable, "tools/new_notebook.py", number, "example_topic",
                  "An example", "一个例子"], repo, env)
    assert again.returncode == 2 and "already there" in again.stderr

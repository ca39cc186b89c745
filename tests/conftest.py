"""Tests that need PyTorch (an optional extra) run only where it is installed.

Without torch the files in TORCH_TESTS are not collected, and the end of the run says so in
one line; `make test` then leaves notebook 10 out of nbval too (see the Makefile). CI sets
MINITF_REQUIRE_TORCH=1 (.ci/run): then a missing torch is an error, so the torch tests can
never quietly vanish from a CI run.
"""

import importlib.util
import os

import pytest

TORCH_TESTS = ("test_pytorch.py", "test_pytorch_train.py", "test_check_nb10.py")
HAVE_TORCH = importlib.util.find_spec("torch") is not None
_left_out = set()


def pytest_configure(config):
    if not HAVE_TORCH and os.environ.get("MINITF_REQUIRE_TORCH") == "1":
        raise pytest.UsageError(
            "MINITF_REQUIRE_TORCH=1 but torch is not installed: the torch tests and "
            "notebook 10 would be left out (pip install -e '.[torch]')")


def pytest_ignore_collect(collection_path, config):
    if not HAVE_TORCH and collection_path.name in TORCH_TESTS:
        _left_out.add(collection_path.name)
        return True
    return None


def pytest_terminal_summary(terminalreporter):
    if _left_out:
        terminalreporter.write_line(
            f"torch is not installed: left out the torch tests ({', '.join(sorted(_left_out))})"
            " and notebook 10; pip install -e '.[torch]' to run them", yellow=True, bold=True)

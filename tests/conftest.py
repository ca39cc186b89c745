"""Tests that need PyTorch (an optional extra) run only where it is installed.

Without torch the files in TORCH_TESTS are not collected, and the end of the run says so in
one line; `make test` then leaves notebook 10 out of nbval too (see the Makefile). CI sets
MINITF_REQUIRE_TORCH=1 (.ci/run): then a missing torch is an error, so the torch tests can
never quietly vanish from a CI run.

The same for the browser tests of the slides (test_slides_browser.py; test_rise_browser.py for
the live slides in JupyterLab, test_lab_browser.py for its notebook view): they need the `slides`
extra (playwright) and a Chromium; without them they are left out with one line at the end, and
MINITF_REQUIRE_SLIDES=1 (set by .ci/run) makes that an error. The two JupyterLab ones share one
real `make lab` server, the `lab` fixture.
"""

import importlib.util
import os

import inspect_decks
import pytest

TORCH_TESTS = ("test_pytorch.py", "test_pytorch_train.py", "test_pytorch_round4.py",
               "test_check_nb10.py")
HAVE_TORCH = importlib.util.find_spec("torch") is not None
_left_out = set()

SLIDES_BROWSER_TESTS = ("test_slides_browser.py", "test_rise_browser.py", "test_lab_browser.py")

NO_SLIDES_BROWSER = inspect_decks.unavailable()  # why decks cannot be opened here, or None
_slides_left_out = set()


def pytest_configure(config):
    if not HAVE_TORCH and os.environ.get("MINITF_REQUIRE_TORCH") == "1":
        raise pytest.UsageError(
            "MINITF_REQUIRE_TORCH=1 but torch is not installed: the torch tests and "
            "notebook 10 would be left out (make torch)")
    if NO_SLIDES_BROWSER and os.environ.get("MINITF_REQUIRE_SLIDES") == "1":
        raise pytest.UsageError(
            f"MINITF_REQUIRE_SLIDES=1 but {NO_SLIDES_BROWSER}: the slides' browser test "
            "would be left out")


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """The base url and token of one real `make lab` server (on a free loopback port, with
    no browser), shared by the JupyterLab browser tests and stopped after the session."""
    from test_make_lab import running_lab

    with running_lab(tmp_path_factory.mktemp("lab")) as served:
        yield served


def pytest_ignore_collect(collection_path, config):
    if not HAVE_TORCH and collection_path.name in TORCH_TESTS:
        _left_out.add(collection_path.name)
        return True
    if NO_SLIDES_BROWSER and collection_path.name in SLIDES_BROWSER_TESTS:
        _slides_left_out.add(collection_path.name)
        return True
    return None


def pytest_terminal_summary(terminalreporter):
    """What was left out, in one line."""
    parts = []
    if _left_out:
        parts.append(f"the torch tests ({', '.join(sorted(_left_out))}) and notebook 10, "
                     "as torch is not installed (make torch)")
    if _slides_left_out:
        parts.append(f"the slides' browser tests ({', '.join(sorted(_slides_left_out))}), as "
                     f"{NO_SLIDES_BROWSER}")
    if parts:
        terminalreporter.write_line("left out: " + "; ".join(parts), yellow=True, bold=True)

"""The checkers' time limit holds however the learner's code catches exceptions (robustness
review P10): a bare `except:` or `except BaseException` in a loop, a `finally:` that loops, an
answer whose `__array__` never returns or raises SystemExit. Each is stopped and reported in
one line, the checker never raises, and the kernel's state (numpy's error state, the warnings
filters, tracing, the SIGALRM handler) is as it was.

The learners run in a child process with a watchdog: a limit that failed would hang the test
run instead of failing it."""

import json
import subprocess
import sys
import textwrap

import pytest

LEARNERS = '''
import contextlib, time
import numpy as np


def bare_except(x):
    while True:
        try:
            np.exp(x)
        except:  # noqa: E722
            pass


def except_base_exception(x):
    while True:
        try:
            x = x + 1
        except BaseException:
            pass


def sleeps_in_a_bare_except(x):
    while True:
        try:
            time.sleep(10)
        except:  # noqa: E722
            pass


def _retry():
    while True:
        try:
            np.exp(1.0)
        except BaseException:
            continue


def nested_across_functions(x):
    while True:
        try:
            _retry()
        except:  # noqa: E722
            pass


def nested_in_one_function(x):
    while True:
        try:
            while True:
                try:
                    np.exp(x)
                except:  # noqa: E722
                    pass
        except:  # noqa: E722
            pass


def loops_in_finally(x):
    try:
        while True:
            pass
    finally:
        while True:
            pass


def suppresses(x):
    while True:
        with contextlib.suppress(BaseException):
            while True:
                pass


def returns_once_stopped(x):
    try:
        while True:
            pass
    except:  # noqa: E722
        return 2 * x


class NeverAnArray:
    def __array__(self, *args, **kwargs):
        while True:
            try:
                pass
            except:  # noqa: E722
                pass


def returns_never_an_array(x):
    return NeverAnArray()
'''

DRIVER = '''
import json, signal, sys, time, warnings
import numpy as np
from minitf.check import check_function, check_softmax, core
exec(LEARNERS)
np.seterr(all="warn")
warnings.simplefilter("default")
filters = list(warnings.filters)
for name in NAMES:
    start = time.perf_counter()
    try:
        result = check_function("double", globals()[name], lambda x: 2 * x, [(1.0,), (2.0,)],
                                time_limit=0.2)
        text, raised = str(result), None
    except BaseException as error:  # what must not happen
        text, raised = "", repr(error)
    seconds = time.perf_counter() - start
    state = (np.geterr()["over"] == "warn" and warnings.filters == filters
             and sys.gettrace() is None and sys.getprofile() is None
             and signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
             and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0))
    print(json.dumps({"name": name, "seconds": seconds, "text": text, "raised": raised,
                      "state": state}), flush=True)
'''

STOPPED = ["bare_except", "except_base_exception", "sleeps_in_a_bare_except",
           "nested_across_functions", "nested_in_one_function", "loops_in_finally",
           "suppresses", "returns_once_stopped", "returns_never_an_array"]


@pytest.fixture(scope="module")
def runs():
    program = f"LEARNERS = {LEARNERS!r}\nNAMES = {STOPPED!r}\n{textwrap.dedent(DRIVER)}"
    try:
        done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                              timeout=120)
        out = done.stdout
    except subprocess.TimeoutExpired as hung:
        out = (hung.stdout or b"").decode() if isinstance(hung.stdout, bytes) else hung.stdout
    return {r["name"]: r for r in map(json.loads, (out or "").splitlines())}


@pytest.mark.parametrize("name", STOPPED)
def test_the_limit_holds_however_the_learner_catches_exceptions(runs, name):
    assert name in runs, f"{name}: the check did not return (the limit did not hold)"
    run = runs[name]
    assert run["raised"] is None, run
    assert run["seconds"] < 3, run
    lines = run["text"].splitlines()
    assert lines[0] == "✗ double: not yet", run
    assert lines[1].startswith("  ") and "took longer than 0.2 s on case 1" in lines[1], run
    assert len(lines) == 2, run  # the verdict, and one line that says what happened
    assert run["state"], f"{name}: numpy, warnings, tracing or the alarm not restored"


def test_an_answer_whose_array_raises_system_exit_is_reported():
    from minitf.check import check_softmax

    class Leaves:
        def __array__(self, *args, **kwargs):
            raise SystemExit(3)

    result = check_softmax(lambda x: Leaves())
    assert not result and "which is not an array of numbers" in str(result)


def test_endless_cases_are_refused():
    import itertools

    from minitf.check import check_function

    result = check_function("f", lambda x: x, lambda x: x, itertools.repeat((1.0,)))
    assert not result and "more than 1000 tuples (an endless generator?)" in str(result)

    def broken():
        yield (1.0,)
        raise ValueError("no more")

    result = check_function("f", lambda x: x, lambda x: x, broken())
    assert not result and "making the cases raised ValueError: no more" in str(result)


def test_nothing_is_traced_before_the_limit():
    """The limit costs nothing until it is reached: no trace or profile function is set while
    the learner's code runs in time."""
    import sys

    from minitf.check import check_function

    seen = []

    def looks(x):
        seen.append((sys.gettrace(), sys.getprofile()))
        return 2 * x

    assert check_function("double", looks, lambda x: 2 * x, [(1.0,)], time_limit=5)
    assert seen == [(None, None)]

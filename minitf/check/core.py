"""The machinery behind the exercise checkers: run the learner's function on a few cases,
compare with the reference, and report — never raise.

A checker returns a CheckResult: truthy when every case passed, and shown in a notebook
as a short report (what differs, where, by how much).
"""

import warnings

import numpy as np


class CheckResult:
    def __init__(self, name, passed, lines):
        self.name, self.passed, self.lines = name, passed, list(lines)

    def __bool__(self):
        return self.passed

    def __str__(self):
        head = f"✓ {self.name}: pass" if self.passed else f"✗ {self.name}: not yet"
        return "\n".join([head] + [f"  {line}" for line in self.lines])

    __repr__ = __str__


def describe_difference(got, expected, rtol=1e-5, atol=1e-6):
    """None when `got` matches `expected`; otherwise one sentence saying what differs."""
    try:
        got_arr = np.asarray(got)
    except Exception:  # noqa: BLE001 - anything unconvertible is reported, not raised
        return f"returned a {type(got).__name__}, expected an array"
    expected = np.asarray(expected)
    if got is None:
        return "returned None — did you forget `return`?"
    if got_arr.shape != expected.shape:
        return f"shape {got_arr.shape}, expected {expected.shape}"
    if expected.dtype == bool or not np.issubdtype(expected.dtype, np.number):
        if got_arr.dtype != expected.dtype and expected.dtype == bool:
            return f"dtype {got_arr.dtype}, expected bool"
        wrong = np.argwhere(got_arr != expected)
    else:
        if not np.issubdtype(got_arr.dtype, np.number):
            return f"dtype {got_arr.dtype}, expected numbers"
        bad = ~np.isfinite(got_arr) & np.isfinite(expected)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            return f"contains {got_arr[where]} at index {where} (overflow?)"
        close = np.isclose(got_arr, expected, rtol=rtol, atol=atol, equal_nan=True)
        wrong = np.argwhere(~close)
    if len(wrong) == 0:
        return None
    where = tuple(int(i) for i in wrong[0])
    if expected.ndim == 0:
        return f"got {got_arr.item()}, expected {expected.item()}"
    return (f"{len(wrong)} of {expected.size} entries differ; first at index {where}: "
            f"got {got_arr[where]}, expected {expected[where]}")


def check_function(name, fn, reference, cases, rtol=1e-5, atol=1e-6):
    """Call fn(*case) and reference(*case) for each case (a tuple of arguments) and compare.

    Exceptions from the learner's function are reported, not raised; NotImplementedError
    reads as "not written yet".
    """
    lines, passed = [], True
    for i, case in enumerate(cases, 1):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")  # overflow shows up as NaN/inf in the report
                got = fn(*case)
        except NotImplementedError:
            return CheckResult(name, False, ["not written yet: replace `raise NotImplementedError`"
                                             " with your code"])
        except Exception as error:  # noqa: BLE001 - a checker reports, it never raises
            lines.append(f"case {i}: raised {type(error).__name__}: {error}")
            passed = False
            continue
        problem = describe_difference(got, reference(*case), rtol, atol)
        if problem:
            lines.append(f"case {i}: {problem}")
            passed = False
    if passed:
        lines.append("1 case agrees with minitf" if len(cases) == 1
                     else f"{len(cases)} cases agree with minitf")
    return CheckResult(name, passed, lines)

"""The exercise checkers: they must pass right answers, name what differs in wrong ones,
and never raise."""

import numpy as np

from minitf.attention import softmax
from minitf.check import check_function, describe_difference

CASES = [(np.arange(3.0),), (np.array([1000.0, 0.0]),), (np.ones((2, 2)),)]


def test_right_answer_passes():
    result = check_function("softmax", softmax, softmax, CASES)
    assert result.passed and bool(result)
    assert "✓ softmax: pass" in str(result)


def test_wrong_answers_are_reported_not_raised():
    def naive(x):
        return np.exp(x) / np.exp(x).sum()

    result = check_function("softmax", naive, softmax, CASES)
    assert not result
    text = str(result)
    assert "case 2: contains nan" in text
    assert "case 3: 4 of 4 entries differ; first at index (0, 0): got 0.25, expected 0.5" in text
    assert "case 1" not in text


def test_unwritten_crashing_and_missing_return():
    def todo(x):
        raise NotImplementedError

    assert "not written yet" in str(check_function("f", todo, softmax, CASES))
    crash = check_function("f", lambda x: x @ np.ones((5, 5)), softmax, CASES[:1])
    assert "raised ValueError" in str(crash) and not crash
    assert "forget `return`" in str(check_function("f", lambda x: None, softmax, CASES[:1]))


def test_describe_difference():
    assert describe_difference(np.ones(3), np.ones(3)) is None
    assert describe_difference(np.ones(2), np.ones(3)) == "shape (2,), expected (3,)"
    assert "dtype int64, expected bool" in describe_difference(np.ones(2, int), np.ones(2, bool))
    assert describe_difference(np.array([True, False]), np.array([True, True])).startswith(
        "1 of 2 entries differ; first at index (1,)")


def test_star_import_gives_every_checker():
    import minitf.check as check

    namespace = {}
    exec("from minitf.check import *", namespace)
    checkers = [n for n in dir(check) if n.startswith("check_") and n != "check_function"]
    assert checkers and all(name in namespace for name in checkers)

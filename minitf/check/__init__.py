"""Exercise checkers for the notebooks: `from minitf.check import check_softmax` and call it
on your function. A checker prints a short report and never raises."""

from .core import CheckResult, check_function, describe_difference

__all__ = ["CheckResult", "check_function", "describe_difference"]

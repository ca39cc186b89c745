"""The one engine behind every exercise checker.

An `Exercise` is data: the cases, the reference, and the known mistakes (each a wrong
function with the learner's signature and a hint). `Exercise.check(fn)`:

1. builds fresh cases; the reference runs on a deep copy of each case, and so does the
   learner's function, so code that changes its inputs in place is judged on what it
   returns, and cannot spoil the reference or the next case;
2. compares the learner's output with the reference's, one case at a time;
3. gives a hint only for a mistake that explains the answer: the learner's output matches
   the mistake's (same comparison, same tolerance as for a right answer) on every case where
   the learner returned something, and differs from the reference on the case reported.
   One bug, one hint: a right answer never gets one, and two hints never contradict;
4. never raises: whatever the learner's function returns or raises, or if it is not a
   function at all, the result is a `CheckResult` that says what happened;
5. stops a case that runs longer than TIME_LIMIT seconds (a loop that never ends) and reports
   it, even when the learner's code catches every exception (`limit.time_limit`); the
   comparison of what it returned runs under the same limit. Where there is no SIGALRM, off
   the main thread, or inside a shorter alarm of the caller's, there is no limit.

The result is structured (`status`, per-case reports) and renders itself as the short text
the notebooks show, in the language of the course's edition (`messages.use_language`): every
word it says comes from messages.MESSAGES or from the exercise's own {"en": ..., "zh": ...}
texts.
"""

import copy
import itertools
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .limit import TooSlow as _TooSlow
from .limit import time_limit
from .messages import current_language, pick, say

NOT_WRITTEN = say("not written", "en")  # the English a notebook stores for a stub's check
# Seconds one case may take. The slowest case of any built-in checker's right answer (the
# notebooks' solutions, nb10's included) takes about 2 ms on a shared 2-core machine, so
# even a learner's pure-Python loops a thousand times slower pass.
TIME_LIMIT = 5.0


# ------------------------------------------------------------------ the result

@dataclass(frozen=True)
class CaseReport:
    """What went wrong on one case: `number` counts from 1, `inputs` names the arguments
    (shapes, small values) and what the case is about, `problem` says what differs, `hint`
    names the mistake that explains it (or None)."""
    number: int
    inputs: str
    problem: str
    hint: str | None = None


@dataclass(frozen=True)
class CheckResult:
    """The verdict of a checker: truthy when every case passed.

    status is "pass", "not written" (the function still raises NotImplementedError) or
    "fail"; `cases` holds a CaseReport per failed case; `message` a reason that concerns no
    single case (e.g. a non-callable was passed); `task` what was asked. Shown in a notebook
    as a short report, in `language`, the language the checker spoke when it ran.
    """
    SHOWN = 3  # failed cases shown in full; the case with the hint is always shown

    name: str
    status: str
    total: int = 0
    cases: tuple = ()
    task: str = ""
    message: str = ""
    language: str = "en"

    @property
    def passed(self):
        return self.status == "pass"

    @property
    def hints(self):
        """The hints shown, in order."""
        return [case.hint for case in self.cases if case.hint]

    def __bool__(self):
        return self.passed

    def __str__(self):
        def words(key, **fields):
            return say(key, self.language, **fields)

        if self.status == "pass":
            agree = words("agree.one") if self.total == 1 else words("agree.many",
                                                                      total=self.total)
            return f"{words('pass', name=self.name)}\n  {agree}"
        head = words("not yet", name=self.name)
        if self.status == "not written":
            return f"{head}\n  {words('not written')}"
        if self.cases:
            head += words("cases differ", failed=len(self.cases), total=self.total)
        lines = [head]
        if self.message:
            lines.append(f"  {self.message}")
        if self.task and self.cases:
            lines.append(f"  {self.task}")
        shown = [c for i, c in enumerate(self.cases) if i < self.SHOWN or c.hint]
        for case in shown:
            lines.append(f"  {words('case', number=case.number, inputs=case.inputs)}")
            lines.append(f"    {case.problem}")
            if case.hint:
                lines.append(f"    {words('hint', hint=case.hint)}")
        rest = [str(c.number) for c in self.cases if c not in shown]
        if rest:
            numbers = words("list").join(rest)
            lines.append("  " + words("differ too.many" if len(rest) > 1 else "differ too.one",
                                      numbers=numbers))
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_pretty_(self, printer, cycle):
        printer.text(str(self))


# ------------------------------------------------------------- what differs

@dataclass(frozen=True)
class Raised:
    """Stands for an exception raised instead of a result (by the learner or a mistake);
    `where` names a helper of the learner's that is not written yet."""
    kind: type
    message: str
    where: str = ""

    def __str__(self):
        if self.where:
            text = say("raised in", kind=self.kind.__name__,
                       where=say("written yet", name=self.where))
        else:
            text = say("raised", kind=self.kind.__name__)
        return say("raised message", raised=text, message=self.message) if self.message \
            else text


def _fmt(value, digits=4):
    """One number as a short, readable string (`digits` significant digits)."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    try:
        return f"{float(value):.{digits}g}"
    except (TypeError, ValueError):
        return repr(value)


NEAR = 1e-2  # a relative gap below this is a near miss: digits to tell apart, and the gap


def _as_float(value):
    """float(value) for a real number that is not a bool or an int; None otherwise."""
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def shown_pair(got, expected, tolerance=None):
    """(got, expected, gap) as text, so that the two read as two numbers. Plainly different
    ones get 4 significant digits ("9", "6", ""); for a near miss (less than 1 % apart) both
    get the same number of significant digits, as many as it takes to tell them apart, and
    the gap follows, with the tolerance it exceeds:
    ("0.06070", "0.06069", " (off by 1.0e-05, tolerance 1.6e-06)")."""
    g, e = _as_float(got), _as_float(expected)
    if g is None or e is None or not (np.isfinite(g) and np.isfinite(e)):
        return _fmt(got), _fmt(expected), ""
    gap = abs(g - e)
    if gap >= NEAR * max(abs(g), abs(e)):
        return _fmt(g), _fmt(e), ""
    for digits in range(4, 18):  # "#" keeps the trailing zeros: 0.06070, not 0.0607
        shown = [f"{x:#.{digits}g}".rstrip(".") for x in (g, e)]
        if shown[0] != shown[1]:
            break
    off = say("off by", gap=f"{gap:.1e}") if tolerance is None else say(
        "off by, tolerance", gap=f"{gap:.1e}", tolerance=f"{tolerance:.2g}")
    return shown[0], shown[1], off


def got_expected(got, expected, tolerance=None):
    """"got X, expected Y", the two numbers as shown_pair prints them:
    "got 0.06070, expected 0.06069 (off by 1.0e-05, tolerance 1.6e-06)"."""
    g, e, off = shown_pair(got, expected, tolerance)
    return say("got", got=g, expected=e) + off


def _at(index):
    """An array index as numpy writes it: [1, 2]."""
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def kind_of(value):
    """What a value is, in a few words with its article: "an array of shape (2, 3)"."""
    if value is None:
        return "None"
    if isinstance(value, np.ndarray):
        return say("kind.array", shape=value.shape)
    if isinstance(value, (tuple, list)):
        return say("kind.sequence", type=type(value).__name__, n=len(value))
    if isinstance(value, (bool, int, float, np.number)):
        return say("kind.number", value=value)
    if isinstance(value, str):
        return say("kind.string", value=repr(value[:30]))
    name = type(value).__name__
    return say("kind.other", type=name, article="an" if name[:1].lower() in "aeiou" else "a")


def _as_numbers(got):
    """(array, None) for anything numpy reads as numbers; (None, why not) otherwise."""
    if isinstance(got, str):
        return None, say("expected numbers", kind=kind_of(got))
    if isinstance(got, tuple) and any(
            isinstance(item, np.ndarray) and item.ndim > 0 for item in got):
        return None, say("expected one array", type=type(got).__name__, n=len(got))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.asarray(got)
    except (KeyboardInterrupt, _TooSlow):
        raise
    except BaseException:  # noqa: BLE001 - ragged lists, objects that refuse (even SystemExit)
        return None, say("not numbers", kind=kind_of(got))
    if arr.dtype.kind not in "biuf":
        return None, say("expected numbers", kind=kind_of(got))
    return arr, None


def describe_difference(got, expected, rtol=1e-5, atol=1e-6, labels=None):
    """None when `got` matches `expected` (an array, a number, or a tuple of them, whose
    items `labels` names); otherwise one sentence saying what differs."""
    if isinstance(expected, tuple):
        labels = labels or [say("item", i=i) for i in range(len(expected))]
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return say("expected tuple", kind=kind_of(got), labels=", ".join(labels))
        for label, g, e in zip(labels, got, expected):
            problem = describe_difference(g, e, rtol, atol)
            if problem:
                return say("labelled", label=label, problem=problem)
        return None
    if got is None:
        return say("no return")
    expected = np.asarray(expected)
    arr, problem = _as_numbers(got)
    if problem:
        return problem
    if arr.shape != expected.shape:
        if expected.ndim == 0:
            return say("expected a number", shape=arr.shape)
        return say("shape", shape=arr.shape, expected=expected.shape)
    if expected.dtype == bool or (expected.ndim and expected.dtype.kind in "iu"):
        want = say("want bool" if expected.dtype == bool else "want integers")
        if (arr.dtype == bool) != (expected.dtype == bool) or arr.dtype.kind == "f":
            same = np.array_equal(arr, expected)
            return say("right values, dtype" if same else "dtype", dtype=arr.dtype, want=want)
        wrong = np.argwhere(arr != expected)
    elif arr.dtype == bool:
        return say("booleans", dtype=expected.dtype)
    else:
        with np.errstate(all="ignore"):
            close = np.isclose(arr, expected, rtol=rtol, atol=atol, equal_nan=True)
        wrong = np.argwhere(~close)
    if len(wrong) == 0:
        return None
    where = tuple(int(i) for i in wrong[0])
    tolerance = None
    if expected.dtype.kind == "f":
        tolerance = atol + rtol * abs(float(expected[where]))
    if expected.ndim == 0:
        return got_expected(arr.item(), expected.item(), tolerance)
    return say("entries differ", wrong=len(wrong), size=expected.size, at=_at(where),
               detail=got_expected(arr[where], expected[where], tolerance))


# ------------------------------------------------------------- describing a case

def describe_value(name, value, values=True):
    """One argument in a few words: arrays by shape (and, if `values`, values when tiny)."""
    if isinstance(value, np.ndarray):
        text = f"{name} {value.shape}"
        if value.dtype == bool:
            return text + " bool"
        small = value.size <= (12 if value.dtype.kind in "iu" else 6)
        if values and small and value.ndim <= 2 and value.size:
            with np.printoptions(precision=4, suppress=True):
                text += " = " + " ".join(np.array2string(value, separator=" ").split())
        return text
    if value is None or isinstance(value, (bool, int, float, np.number, str)):
        return f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}"
    if isinstance(value, (list, tuple)):
        text = repr(value)
        return f"{name}={text}" if len(text) <= 50 else f"{name}: {kind_of(value)}"
    if isinstance(value, dict):
        return say("value.dict", name=name, keys=", ".join(map(str, value)))
    if callable(value) and not hasattr(value, "params"):
        return say("value.function", name=name)
    return say("value.kind", name=name, kind=kind_of(value))


@dataclass(frozen=True)
class Case:
    """One call of the learner's function: its arguments and a few words on what the case
    is about (shown when it fails), {"en": ..., "zh": ...}."""
    args: tuple
    note: dict | str = ""


@dataclass(frozen=True)
class Mistake:
    """A known mistake: `fn` has the learner's signature and makes the mistake; `hint` says
    what to change, {"en": ..., "zh": ...}, in the learner's terms."""
    hint: dict
    fn: Callable


# ------------------------------------------------------------------ the engine

class _NotWritten(Exception):
    pass


def _innermost_function(error):
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return None if tb is None else tb.tb_frame.f_code


def call_quietly(fn, *args, own=None):
    """fn(*args), or a Raised standing for what it raised. Numpy's warnings are silenced
    (NaN and overflow show in the result). NotImplementedError raised by the body of `own`
    (default fn; the exercise's placeholder) stops the check as "not written yet"."""
    own = fn if own is None else own
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return fn(*args)
    except (KeyboardInterrupt, _NotWritten, _TooSlow):
        raise
    except NotImplementedError as error:
        code = _innermost_function(error)
        if code is None or code is getattr(own, "__code__", code):
            raise _NotWritten() from None
        return Raised(NotImplementedError, str(error), code.co_name)
    except BaseException as error:  # noqa: BLE001 - a checker reports, it never raises
        return Raised(type(error), str(error))


def _snapshot(value):
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - an odd object is compared as it is
        return value


def _call_name(fn):
    name = getattr(fn, "__name__", "")
    return name if isinstance(name, str) and name.isidentifier() else "fn"


@dataclass
class Exercise:
    """An exercise's data, and the checker built on it.

    name: the title of the report (a function's name, or {"en": ..., "zh": ...}); checker:
    the public function's name; args: the names of a case's arguments, which are the
    learner's parameters unless `signature` names others; task: what the function should
    return (shown on failure), {"en": ..., "zh": ...};
    cases: a function returning fresh Cases (or argument tuples); reference: the right
    answer, with the learner's signature; mistakes: Mistakes; answers: other right answers,
    written differently (in place, say), which must pass too (tests/check runs them).
    run(fn, *args) calls a learner-like function on one case (default fn(*args)); a
    checker whose exercise is a loop (a cache fed back step by step) drives it here.
    expected(*args) gives the right output directly when it is not run(reference, ...).
    compare(got, expected) -> None or what differs (default: describe_difference with
    rtol, atol, and labels naming the items of a tuple result). The same comparison
    decides a pass and a mistake's match.
    """
    name: dict | str
    checker: str
    args: tuple
    task: dict
    cases: Callable
    reference: Callable
    mistakes: tuple = ()
    answers: tuple = ()
    run: Callable | None = None
    expected: Callable | None = None
    compare: Callable | None = None
    labels: tuple | None = None
    signature: tuple | None = None
    rtol: float = 1e-5
    atol: float = 1e-6
    time_limit: float | None = None  # seconds per case; None: TIME_LIMIT
    yours: bool = False  # the reference is the caller's own (check_function), not minitf's

    def _limit(self):
        return time_limit(TIME_LIMIT if self.time_limit is None else self.time_limit)

    def _run(self, fn, case):
        args = copy.deepcopy(case.args)
        if self.run is None:
            return _snapshot(call_quietly(fn, *args))
        return _snapshot(call_quietly(self.run, fn, *args, own=fn))

    def _expected(self, case):
        if self.expected is not None:
            return call_quietly(self.expected, *copy.deepcopy(case.args))
        return self._run(self.reference, case)

    def differs(self, got, expected):
        """None when `got` counts as `expected`, else what differs. A Raised matches only
        the same exception with the same message."""
        if isinstance(got, Raised) or isinstance(expected, Raised):
            if isinstance(got, Raised) and isinstance(expected, Raised):
                return None if got == expected else str(got)
            return str(got) if isinstance(got, Raised) else say("differs")
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                if self.compare is not None:
                    return self.compare(got, expected)
                return describe_difference(got, expected, self.rtol, self.atol, self.labels)
        except (KeyboardInterrupt, _TooSlow):
            raise
        except BaseException as error:  # noqa: BLE001 - an answer the comparison cannot read
            return say("cannot read", error=f"{type(error).__name__}: {error}")

    def describe_case(self, case):
        """The case's arguments (values too when the line stays short) and its note."""
        names = self.args if len(self.args) == len(case.args) else [
            f"arg{i + 1}" for i in range(len(case.args))]
        text = ", ".join(describe_value(n, v) for n, v in zip(names, case.args))
        if len(text) > 100:
            text = ", ".join(describe_value(n, v, False) for n, v in zip(names, case.args))
        return say("case note", inputs=text, note=pick(case.note)) if case.note else text

    def _result(self, status, total=0, cases=(), task="", message=""):
        return CheckResult(pick(self.name), status, total, cases, task, message,
                           current_language())

    def check(self, fn):
        """Run `fn` on every case; a CheckResult, never an exception."""
        if not callable(fn):
            shown = repr(fn) if len(repr(fn)) <= 30 else type(fn).__name__
            return self._result("fail", message=say(
                "not a function", checker=self.checker, shown=shown, type=type(fn).__name__))
        try:
            cases = [c if isinstance(c, Case) else Case(tuple(c)) for c in self.cases()]
        except Exception as error:  # noqa: BLE001 - a bug in the checker, reported
            return self._internal_error(error)
        got, expected, problems = [], [], []
        try:
            for number, case in enumerate(cases, 1):
                want, out, problem = self._expected_and_output(fn, case)
                if isinstance(want, Raised):
                    return self._reference_failed(want, number, case)
                expected.append(want)
                got.append(out)
                problems.append(problem)
        except _NotWritten:
            return self._result("not written", len(cases))
        except _TooSlow:
            return self._too_slow(fn, number, case, len(cases))
        if not any(problems):
            return self._result("pass", len(cases))
        hint_case, hint = self._diagnose(cases, got, problems)
        reports = tuple(
            CaseReport(i + 1, self.describe_case(case), problem,
                       hint if i == hint_case else None)
            for i, (case, problem) in enumerate(zip(cases, problems)) if problem)
        params = ", ".join(self.signature or self.args) or "..."
        task = say("asked", call=f"{_call_name(fn)}({params})", task=pick(self.task))
        return self._result("fail", len(cases), reports, task)

    def _expected_and_output(self, fn, case):
        """(the reference's output, fn's output, what differs) on one case: fn's output and
        its comparison under the time limit, and the reference's too when it is the caller's
        own; (Raised, None, None) if the reference raised. _TooSlow leaves it."""
        if self.yours:
            with self._limit():
                want = self._expected(case)
        else:
            want = self._expected(case)
        if isinstance(want, Raised):
            return want, None, None
        with self._limit():
            out = self._run(fn, case)
            return want, out, self.differs(out, want)

    def _too_slow(self, fn, number, case, total):
        seconds = TIME_LIMIT if self.time_limit is None else self.time_limit
        return self._result("fail", total, message=say(
            "too slow.yours" if self.yours else "too slow", fn=_call_name(fn),
            seconds=f"{seconds:g}", number=number, case=self.describe_case(case)))

    def _reference_failed(self, raised, number, case):
        if not self.yours:
            return self._internal_error(raised)
        return self._result("fail", message=say(
            "reference failed", raised=raised, number=number, case=self.describe_case(case)))

    def _diagnose(self, cases, got, problems):
        """(index of the case to hint at, hint) for the first mistake that explains every
        output; (None, None) when none does."""
        for mistake in self.mistakes:
            first = None
            for i, (case, out) in enumerate(zip(cases, got)):
                try:
                    wrong = self._run(mistake.fn, case)
                except _NotWritten:
                    wrong = Raised(NotImplementedError, "")
                if isinstance(out, Raised) and not isinstance(wrong, Raised):
                    continue  # no output to compare on this case
                if not self._same(out, wrong):
                    break
                if problems[i] and first is None:
                    first = i
            else:
                if first is not None:
                    return first, pick(mistake.hint)
        return None, None

    def _same(self, got, wrong):
        """True when the learner's output `got` counts as the mistake's (compared under the
        time limit: what the learner returned may be slow to read)."""
        try:
            with self._limit():
                return self.differs(got, wrong) is None
        except _TooSlow:
            return False

    def _internal_error(self, error):
        return self._result("fail", message=say("internal error", error=error))


def check_function(name, fn, reference, cases, rtol=1e-5, atol=1e-6, time_limit=None):
    """Call fn(*case) and reference(*case) for each case (a tuple of arguments) and compare,
    with no known mistakes: a quick checker for a function of your own. Never raises: a
    mistake in its own arguments (cases that are not tuples, a reference that raises) is
    reported as yours. time_limit: seconds per case (None: TIME_LIMIT)."""
    cases, problem = _argument_tuples(cases, TIME_LIMIT if time_limit is None else time_limit)
    if problem is None and not callable(reference):
        problem = say("reference not a function", kind=kind_of(reference))
    if problem is not None:
        return CheckResult(str(name), "fail", message=say("check_function", problem=problem),
                           language=current_language())
    exercise = Exercise(str(name), "check_function", (), {
        language: say("reference task", language) for language in ("en", "zh")},
        lambda: cases, reference, rtol=rtol, atol=atol, time_limit=time_limit, yours=True)
    return exercise.check(fn)


MAX_CASES = 1000  # check_function's cases, at most (an endless generator is refused)


def _argument_tuples(cases, seconds):
    """(cases as a list, None), or (None, what is wrong with them). A generator of cases
    runs under the time limit (`seconds`)."""
    example = say("cases example")
    try:
        if isinstance(cases, (str, bytes, np.ndarray)):
            raise TypeError
        with time_limit(seconds):
            cases = list(itertools.islice(cases, MAX_CASES + 1))
    except TypeError:
        return None, say("cases not tuples", example=example, kind=kind_of(cases))
    except _TooSlow:
        return None, say("cases too slow", seconds=f"{seconds:g}")
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - the caller's generator: reported
        return None, say("cases raised", raised=Raised(type(error), str(error)))
    if len(cases) > MAX_CASES:
        return None, say("cases endless", most=MAX_CASES)
    if not cases:
        return None, say("cases empty", example=example)
    for i, case in enumerate(cases):
        if not isinstance(case, (tuple, Case)):
            return None, say("case not a tuple", i=i, kind=kind_of(case), example=example)
    return cases, None

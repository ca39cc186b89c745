"""The time limit of one case: the learner's code is stopped after `seconds`, however it
catches exceptions.

At the limit an alarm (SIGALRM) raises TooSlow in the learner's code. A learner's
`while True: try: ... except: pass` would swallow that one exception, so from then on
- a trace function raises TooSlow again at every line of the learner's code, the first line of
  the `except:` (or `finally:`) block that caught it included: the exception leaves that block;
- CPython turns tracing off when a trace function raises, so a profile function (which never
  raises) turns it back on at the next call, return or exception of any function, and the
  exception climbs out of frame after frame of the learner's code;
- the alarm rings again every EVERY seconds (a learner blocked in `time.sleep`, or whose trace
  was turned off, is reached that way).
Only the learner's code is interrupted: code of the standard library, of installed packages and
of minitf runs to its end, so the `with` blocks and `finally` clauses of the checker itself
(numpy's error state, the warnings filters) are always restored, and a late ring in the checker
does nothing. (Library code still running GRACE seconds after the limit is interrupted too: a
learner's loop may sit inside it.)

Why not something else: a child process per case (fork) would stop anything, but it costs a
fork per case, cannot send back what a learner may return (a generator, an object that will not
pickle), loses what the learner's code prints in a notebook, is unsafe with threads on macOS and
does not exist on Windows. A one-shot alarm, the previous design, is swallowed by a bare
`except:`. Tracing from the start would slow every learner's loop; here nothing is traced before
the limit, so a case costs two setitimer calls and a signal handler.

Limits: POSIX, main thread (a notebook's kernel runs there); elsewhere there is no limit.
CPython calls no hook between two handlers of ONE frame, so bare-`except:` loops nested in one
function are left one level per ring, when a ring lands between them: two levels take a fraction
of a second more, three or more can hold the exception for good (nesting across functions is
fine). Code stuck inside one C call (a huge numpy product) is stopped when the call returns.
"""

import os
import signal
import site
import sys
import sysconfig
import threading
import time
from functools import lru_cache

EVERY = 0.02  # seconds between rings once the time is up
GRACE = 1.0  # seconds after the limit after which library code is interrupted too


class TooSlow(BaseException):
    """Raised into the learner's code when its case runs out of time (a BaseException, so that
    an `except Exception` does not even catch it once)."""


def _library_roots():
    """The folders whose code is not the learner's: minitf, the standard library, the
    installed packages."""
    paths = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]  # minitf/
    paths += [sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib",
                                                          "platlib")]
    paths += getattr(site, "getsitepackages", list)()
    paths.append(getattr(site, "getusersitepackages", lambda: None)())
    return tuple(sorted({os.path.realpath(p) for p in paths if p}))


_LIBRARY = _library_roots()
_CHECKER = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))


@lru_cache(maxsize=4096)
def whose(filename):
    """"learner", "checker" (minitf.check) or "library", for a code object's co_filename.
    Code typed in a notebook or a test (no file of the library) is the learner's."""
    if filename.startswith("<frozen"):
        return "library"
    if filename.startswith("<"):  # <string>, <stdin>, <ipython-input-…>
        return "learner"
    path = os.path.realpath(filename)

    def under(root):
        return path == root or path.startswith(root + os.sep)

    if under(_CHECKER):
        return "checker"
    return "library" if any(under(root) for root in _LIBRARY) else "learner"


def _of(frame):
    return whose(frame.f_code.co_filename)


class time_limit:  # noqa: N801 - used as `with time_limit(5):`, like a function
    """`with time_limit(seconds):` raises TooSlow in the block's learner code once it has run
    `seconds`, and keeps raising it until it leaves that code (see the module's docstring).
    No limit when seconds is None, off the main thread, without setitimer, or when the
    caller's own alarm would ring first (it is restored afterwards, less the time spent)."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.armed = False

    def __enter__(self):
        if (self.seconds is None or not hasattr(signal, "setitimer")
                or threading.current_thread() is not threading.main_thread()):
            return self
        self.outer = signal.getitimer(signal.ITIMER_REAL)
        if self.outer[0] and self.outer[0] <= self.seconds:
            return self
        self.previous = signal.signal(signal.SIGALRM, self._ring)
        self.start, self.up = time.monotonic(), None
        self.traced = {}  # learner frames whose f_trace is ours -> what it was
        self.before = sys.gettrace(), sys.getprofile()
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, self.seconds, EVERY)
        return self

    def __exit__(self, *error):
        if not self.armed:
            return False
        self.armed = False  # first: a late ring or trace event now does nothing
        signal.setitimer(signal.ITIMER_REAL, 0)
        if self.up is not None:
            sys.settrace(self.before[0])
            sys.setprofile(self.before[1])
            for frame, f_trace in self.traced.items():
                frame.f_trace = f_trace
            self.traced.clear()
        signal.signal(signal.SIGALRM, signal.SIG_DFL if self.previous is None else self.previous)
        left, every = self.outer
        if left:
            left -= time.monotonic() - self.start
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3), every)
        return False

    @property
    def expired(self):
        return self.up is not None

    def _trace_from(self, frame):
        """Trace every learner frame from `frame` up, and the frames started from now on."""
        sys.settrace(self._trace)
        while frame is not None:
            if _of(frame) == "learner":
                if frame not in self.traced:
                    self.traced[frame] = frame.f_trace
                frame.f_trace = self._trace
            frame = frame.f_back

    def _ring(self, signum, frame):
        if not self.armed:
            return
        now = time.monotonic()
        if self.up is None:
            self.up = now
            sys.setprofile(self._profile)
        self._trace_from(frame)
        where = "library" if frame is None else _of(frame)
        if where == "learner" or (where == "library" and now - self.up > GRACE):
            raise TooSlow()

    def _trace(self, frame, event, arg):
        if not self.armed or _of(frame) != "learner":
            return None  # no line events in this frame
        if event == "line":
            raise TooSlow()  # CPython now turns tracing off; _profile turns it back on
        return self._trace

    def _profile(self, frame, event, arg):
        if self.armed and sys.gettrace() is not self._trace:
            self._trace_from(frame)

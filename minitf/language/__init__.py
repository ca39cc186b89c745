"""The language the course speaks to its learner: English or Chinese (issue 35).

One switch for the whole edition: every notebook's setup cell calls
`minitf.check.use_language(...)` ("en" in the English notebooks, "zh" in the Chinese ones,
notebook 00 on), and from then on the checkers' verdicts (minitf.check), the words the
figures draw (minitf.figures) and notebook 09's training log (minitf.tasks.referent) are in
that language. English is the default, so a learner never sets it. A text in both languages
is a pair {"en": ..., "zh": ...}; `pick` takes the current one. (Not a language model: this
is the language of the course's prose.)

It is a room of its own because check, figures and tasks all read it, and figures may not
import check (check → figures already exists, for notebook 02's FLOP count; CONTRIBUTING.md).
"""

import re

__all__ = ["LANGUAGES", "current_language", "pick", "spaced", "use_language"]

LANGUAGES = ("en", "zh")
_current = ["en"]


def use_language(language):
    """Make the checkers and the figures speak `language` from now on: "en" (the default) or
    "zh". Every notebook's setup cell calls it (notebook 00 on), the Chinese edition with
    "zh". Returns None, so that the call prints nothing as a cell's last line."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(map(repr, LANGUAGES))}, "
                         f"got {language!r}")
    _current[0] = language


def current_language():
    """The language the checkers and the figures speak now ("en" or "zh"). No notebook
    calls it: they set it with use_language."""
    return _current[0]


def pick(text, language=None):
    """A text in `language` (default: the current one): text is {"en": ..., "zh": ...}, or a
    plain str that reads the same in every language (a function's name, code). No notebook
    calls it: the checkers and the figures do."""
    if isinstance(text, dict):
        return text[language or _current[0]]
    return text


_HAN = "\u4e00-\u9fff"
_MEETS = re.compile(f"(?<=[{_HAN}])(?=[A-Za-z0-9(\\[<`])|(?<=[A-Za-z0-9)\\]>`])(?=[{_HAN}])")


def spaced(text):
    """Chinese typography: a space where a Chinese character meets a Latin letter, a digit or
    a half-width bracket ("返回的是None" -> "返回的是 None", "返回(z_t" -> "返回 (z_t").
    No notebook calls it: the checkers' messages and the figures' labels do."""
    return _MEETS.sub(" ", text)

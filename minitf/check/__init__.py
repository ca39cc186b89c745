"""Exercise checkers for the notebooks: `from minitf.check import check_softmax` and call it
on your function. A checker runs your function on copies of a few cases, returns a short
report (shown by the notebook) and never raises; a hint appears only for the mistake your
answer actually makes. The report speaks the edition's language: the Chinese notebooks' setup
cell calls `use_language("zh")`; English is the default.

The engine is `core.Exercise`; each nbXX module holds one notebook's exercises as data
(cases, the reference, the known mistakes), listed in its EXERCISES. EXERCISES_BY_CHECKER
maps every checker's name to its Exercise.
"""

from . import nb00, nb01, nb02, nb03, nb04, nb05, nb06, nb07, nb08, nb09, nb11
from .core import CheckResult, check_function, describe_difference
from .messages import current_language, use_language
from .nb00 import *  # noqa: F403
from .nb01 import *  # noqa: F403
from .nb02 import *  # noqa: F403
from .nb03 import *  # noqa: F403
from .nb04 import *  # noqa: F403
from .nb05 import *  # noqa: F403
from .nb06 import *  # noqa: F403
from .nb07 import *  # noqa: F403
from .nb08 import *  # noqa: F403
from .nb09 import *  # noqa: F403
from .nb11 import *  # noqa: F403

_NOTEBOOKS = (nb00, nb01, nb02, nb03, nb04, nb05, nb06, nb07, nb08, nb09, nb11)

EXERCISES_BY_CHECKER = {exercise.checker: exercise for nb in _NOTEBOOKS
                        for exercise in nb.EXERCISES}

__all__ = ["CheckResult", "check_function", "current_language", "describe_difference",
           "use_language"] + [
    name for nb in _NOTEBOOKS for name in nb.__all__
]

"""Exercise checkers for the notebooks: `from minitf.check import check_softmax` and call it
on your function. A checker returns a short report (shown by the notebook) and never raises."""

from . import nb00, nb01, nb02, nb03, nb04, nb05, nb06, nb07, nb08, nb10
from .core import CheckResult, check_function, describe_difference
from .nb00 import *  # noqa: F403
from .nb01 import *  # noqa: F403
from .nb02 import *  # noqa: F403
from .nb03 import *  # noqa: F403
from .nb04 import *  # noqa: F403
from .nb05 import *  # noqa: F403
from .nb06 import *  # noqa: F403
from .nb07 import *  # noqa: F403
from .nb08 import *  # noqa: F403
from .nb10 import *  # noqa: F403 - imports torch only when a checker runs

__all__ = ["CheckResult", "check_function", "describe_difference"] + [
    name for nb in (nb00, nb01, nb02, nb03, nb04, nb05, nb06, nb07, nb08, nb10)
    for name in nb.__all__
]

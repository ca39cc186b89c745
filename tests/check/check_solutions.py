"""The learners' right answers for every exercise checker: each notebook's own solution (the
code in the exercise's `solution` cell, tools/course_format.py), run with the notebook's
imports, as the function its `checker` cell passes to the checker."""

import ast
from pathlib import Path

import course_format as fmt

from minitf.check import EXERCISES_BY_CHECKER

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def imports(nb):
    """The notebook's import statements, in order."""
    found = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse(fmt.source(cell))
        except SyntaxError:
            continue
        found += [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return found


def notebook_solutions(checkers=frozenset(EXERCISES_BY_CHECKER), paths=None):
    """checker name -> the learner's function, built from the exercise's solution cell, for
    the exercises that call one of `checkers` in `paths` (default: every notebook)."""
    found = {}
    for path in paths or sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = fmt.load(path)
        for exercise in fmt.exercises(nb):
            call = ast.parse(fmt.checker_call(nb["cells"][exercise.checker])).body[0].value
            checker, name = call.func.id, call.args[0].id
            if checker not in checkers:
                continue  # notebook 10's need torch: tests/check/test_check_nb10.py runs them
            code = fmt.solution_code(nb["cells"][exercise.solution])
            namespace = {}
            exec("\n".join(imports(nb)), namespace)  # noqa: S102 - the repository's own notebooks
            for block in code:
                exec(block, namespace)  # noqa: S102
            assert name in namespace, (
                f"{path.name}: no solution defines {name}, checked by {checker}")
            found[checker] = namespace[name]
    return found


SOLUTIONS = notebook_solutions()

"""The learners' right answers for every exercise checker: each notebook's own solution,
taken from its <details> block and run with the notebook's imports."""

import ast
import json
import re
from pathlib import Path

from minitf.check import EXERCISES_BY_CHECKER

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def notebook_solutions():
    """checker name -> the learner's function, built from the solution in the notebook's
    <details> block, run with the notebook's imports."""
    found = {}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        imports, calls, solutions = [], {}, []
        for cell in cells:
            source = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                if "<details" in source:
                    solutions += re.findall(r"```python\n(.*?)```", source, re.S)
                continue
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            for node in tree.body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    imports.append(ast.unparse(node))
                call = node.value if isinstance(node, ast.Expr) else None
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                        and call.func.id in EXERCISES_BY_CHECKER and call.args
                        and isinstance(call.args[0], ast.Name)):
                    calls[call.func.id] = call.args[0].id
        for checker, name in calls.items():
            source = next((s for s in solutions if re.search(rf"^def {name}\(", s, re.M)), None)
            assert source, f"{path.name}: no solution defines {name}, checked by {checker}"
            namespace = {}
            exec("\n".join(imports), namespace)  # noqa: S102 - the repository's own notebooks
            exec(source, namespace)  # noqa: S102
            found[checker] = namespace[name]
    return found


SOLUTIONS = notebook_solutions()

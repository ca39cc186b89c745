"""The learners' right answers for every exercise checker: each notebook's own solution,
taken from its <details> block and run with the notebook's imports, and the solutions of the
two exercises notebook 07 does not have yet."""

import ast
import json
import re
from pathlib import Path

import numpy as np

from minitf import tasks
from minitf.attention import softmax
from minitf.check import EXERCISES

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
                        and call.func.id in EXERCISES and call.args
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


# The two checkers of notebook 07 that issue #17 adds; their exercise cells are added to the
# notebook separately. Until then these are the solutions for its <details> blocks, and once
# the notebook has them, the notebook's own are tested instead.
NEW_SOLUTIONS = {
    "check_beam_search": '''
def beam_search_mine(step, beam_size, max_len, length_penalty):
    beam = [([tasks.BOS_ID], 0.0)]                   # live hypotheses: (tokens, log p)
    finished = []
    for _ in range(max_len):
        candidates = []
        for tokens, logp in beam:
            next_logp = step(tokens)                 # (V,) log-probabilities
            for token, token_logp in enumerate(next_logp):
                candidates.append((tokens + [token], logp + token_logp))
        candidates.sort(key=lambda c: -c[1])         # best total log p first (stable)
        beam = []
        for tokens, logp in candidates[:beam_size - len(finished)]:
            if tokens[-1] == tasks.EOS_ID:
                finished.append((tokens, logp))      # done: it leaves the beam
            else:
                beam.append((tokens, logp))
        if not beam:
            break
    n_best = [(tokens[1:], logp / ((5 + len(tokens) - 1) / 6) ** length_penalty)
              for tokens, logp in finished + beam]   # still live at max_len: counted too
    return sorted(n_best, key=lambda h: -h[1])       # best first
''',
    "check_kv_cache": '''
def kv_step_mine(x_t, cache, W_q, W_k, W_v):
    q, k, v = x_t @ W_q, x_t @ W_k, x_t @ W_v                             # (..., d_k/d_k/d_v)
    cache["k"] = np.concatenate([cache["k"], k[..., None, :]], axis=-2)  # (..., t+1, d_k)
    cache["v"] = np.concatenate([cache["v"], v[..., None, :]], axis=-2)  # (..., t+1, d_v)
    scores = np.sum(cache["k"] * q[..., None, :], axis=-1) / np.sqrt(q.shape[-1])  # (..., t+1)
    weights = softmax(scores)                                            # over every position
    z = np.sum(weights[..., None] * cache["v"], axis=-2)                 # (..., d_v)
    return z, cache
''',
}


def solutions():
    found = notebook_solutions()
    for checker, source in NEW_SOLUTIONS.items():
        if checker not in found:
            namespace = {"np": np, "tasks": tasks, "softmax": softmax}
            exec(source, namespace)  # noqa: S102
            found[checker] = next(v for k, v in namespace.items() if k.endswith("_mine"))
    return found


SOLUTIONS = solutions()

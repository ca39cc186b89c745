"""Every public object of the package says which notebook builds or uses it (the way d2l points
each library object back to its section), and the pointer is true: a notebook it names
mentions the object. An object no notebook uses says so ("no notebook")."""

import importlib
import inspect
import json
import pkgutil
import re
from pathlib import Path

import pytest

import minitf

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
# The checkers are exercise data (their notebooks call them); the bridge to torch imports
# torch; the argument validators guard every notebook alike. They are documented per module.
SKIP = ("minitf.check", "minitf.pytorch", "minitf.__main__", "minitf.translator.cli")
PER_MODULE = ("minitf.validation",)
# "notebook 08", "Notebooks 07 and 08", "notebooks 01–02", "notebook 02 §5, notebook 03"
POINTER = re.compile(r"[Nn]otebooks? ((?:\d\d)(?:(?:,\s*|\s+and\s+|\s+to\s+|–|-)\d\d)*)")


def notebook_text(number):
    """The source of every cell of notebook `number` (code and prose), as one string."""
    (path,) = NOTEBOOKS.glob(f"{number}_*.ipynb")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells)


def named_notebooks(doc):
    numbers = set()
    for run in POINTER.findall(doc):
        found = [int(n) for n in re.findall(r"\d\d", run)]
        if re.search(r"\d\d(\s+to\s+|–|-)\d\d", run):  # a range
            found = range(min(found), max(found) + 1)
        numbers.update(f"{n:02d}" for n in found)
    return sorted(numbers)


def public_objects():
    for info in pkgutil.walk_packages(minitf.__path__, "minitf."):
        if info.name.startswith(SKIP):
            continue
        module = importlib.import_module(info.name)
        yield info.name, module
        if info.name in PER_MODULE:
            continue
        for name, obj in vars(module).items():
            if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if obj.__module__ == module.__name__:
                yield f"{info.name}.{name}", obj


@pytest.mark.parametrize("name, obj", list(public_objects()), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_docstring_names_a_notebook_that_mentions_it(name, obj):
    doc = inspect.getdoc(obj) or ""
    if "no notebook" in doc.lower():
        return
    numbers = named_notebooks(doc)
    assert numbers, f"{name}: its docstring should name the notebook (or say 'no notebook')"
    # a module counts as mentioned when its name appears (`multihead`, `tasks.referent`)
    words = name.split(".")[1:] if inspect.ismodule(obj) else [name.split(".")[-1]]
    texts = [notebook_text(n) for n in numbers]
    mentions = (re.search(rf"\b{re.escape(w)}\b", t, re.IGNORECASE) for w in words for t in texts)
    assert any(mentions), (
        f"{name}: its docstring names notebook {', '.join(numbers)}, which never mentions "
        f"{' or '.join(words)}")


def test_the_pointer_test_catches_a_false_pointer():
    assert named_notebooks("Built in notebook 01 §3–6 and notebook 02 §1.") == ["01", "02"]
    assert named_notebooks("Notebooks 02 to 04 run it.") == ["02", "03", "04"]
    assert not re.search(r"\bchunked_attention\b", notebook_text("02"))

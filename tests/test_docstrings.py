"""Every public object of the package says which notebook builds it (the way d2l points each
library object back to its section), so a learner reading the code can find the lesson."""

import importlib
import inspect
import pkgutil

import pytest

import minitf

# The checkers are exercise data (their notebooks call them); the bridge to torch imports
# torch; the argument validators guard every notebook alike. They are documented per module.
SKIP = ("minitf.check", "minitf.pytorch", "minitf.__main__")
PER_MODULE = ("minitf.validation",)


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
def test_docstring_names_its_notebook(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert "notebook" in doc.lower(), f"{name}: its docstring should name the notebook"

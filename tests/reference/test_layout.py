"""The package's edge: minitf/'s root is the reference Transformer (with fast/ beside it), each
other role has a room of its own, and the rooms import the reference, never the reverse.
CONTRIBUTING.md states the same rule."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "minitf"
ROOMS = {"tasks", "check", "figures", "translator", "pytorch"}
REFERENCE_PACKAGES = {"fast"}
# The front door (`from minitf import …`, `python -m minitf`) is allowed to reach a room.
FRONT_DOOR = {"__init__.py", "__main__.py"}
ONLY_IN_A_ROOM = {"matplotlib": "figures", "torch": "pytorch"}


def reference_files():
    files = [p for p in PACKAGE.glob("*.py") if p.name not in FRONT_DOOR]
    for name in REFERENCE_PACKAGES:
        files += sorted((PACKAGE / name).rglob("*.py"))
    return files


def imported_modules(path, text=None):
    """Every module `path` imports, anywhere in it (inside functions too), as absolute names;
    `text` stands in for the file's contents when given."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    text = path.read_text(encoding="utf-8") if text is None else text
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def test_the_root_holds_the_reference_and_the_rooms_only():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == ROOMS | REFERENCE_PACKAGES, folders
    assert len(reference_files()) >= 10


@pytest.mark.parametrize("path", reference_files(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_the_reference_never_imports_a_room_or_a_rooms_library(path):
    rooms = {f"minitf.{room}" for room in ROOMS}
    bad = sorted({m for m in imported_modules(path)
                  if any(m == r or m.startswith(r + ".") for r in rooms)
                  or m.split(".")[0] in ONLY_IN_A_ROOM})
    assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}: the reference imports numpy " \
                    "and itself only (see CONTRIBUTING.md)"


@pytest.mark.parametrize("library, room", ONLY_IN_A_ROOM.items())
def test_a_heavy_library_lives_in_its_room_only(library, room):
    users = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                   if any(m.split(".")[0] == library for m in imported_modules(p))
                   and p.relative_to(PACKAGE).parts[0] != room)
    assert not users, f"{library} is imported outside minitf/{room}/: {users}"


def test_the_rule_sees_relative_and_late_imports():
    text = ("from .tasks import PAD_ID\n"
            "def f():\n    import matplotlib.pyplot as plt\n    from . import figures\n")
    found = set(imported_modules(PACKAGE / "model.py", text))
    assert {"minitf.tasks", "matplotlib.pyplot", "minitf.figures"} <= found
    found = set(imported_modules(PACKAGE / "fast" / "attention.py", "from ..tasks import x\n"))
    assert "minitf.tasks" in found

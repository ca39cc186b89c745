"""The package's edge: minitf/'s root is the reference Transformer (with fast/ beside it), each
other role has a room of its own, and the rooms import the reference, never the reverse; no
two rooms import each other, even through a third; and a private name (`_like_this`) is used
only in the module that defines it. CONTRIBUTING.md states the same rules.

The checks are functions of a package folder, so that each can also be shown failing on a
small made-up package (the tests at the end)."""

import ast
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "minitf"
ROOMS = {"tasks", "check", "figures", "language", "translator", "pytorch"}
REFERENCE_PACKAGES = {"fast"}
# The front door (`from minitf import …`, `python -m minitf`) is allowed to reach a room.
FRONT_DOOR = {"__init__.py", "__main__.py"}
ONLY_IN_A_ROOM = {"matplotlib": "figures", "torch": "pytorch"}


def reference_files():
    files = [p for p in PACKAGE.glob("*.py") if p.name not in FRONT_DOOR]
    for name in REFERENCE_PACKAGES:
        files += sorted((PACKAGE / name).rglob("*.py"))
    return files


def module_name(path, package=PACKAGE):
    """minitf/fast/attention.py -> "minitf.fast.attention"; a package's __init__.py -> its name."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path, text=None, package=PACKAGE):
    """(node, absolute module name) for every import statement of `path`, anywhere in it
    (inside functions too); `text` stands in for the file's contents when given."""
    here = ".".join(path.relative_to(package.parent).with_suffix("").parts[:-1])
    text = path.read_text(encoding="utf-8") if text is None else text
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")[:len(here.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            yield node, base


def imported_modules(path, text=None, package=PACKAGE):
    """Every module `path` imports, as absolute names (and `base.name` for each name of a
    `from base import name`, which may be a module too)."""
    for node, base in _imports(path, text, package):
        yield base
        if isinstance(node, ast.ImportFrom):
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(package=PACKAGE):
    """["layers.py imports minitf.attention._x", …]: every `from X import _name` of a
    module X other than the file's own, and every `X._name` read on a module X the file
    imported (`from . import layers` … `layers._matmul_rows`)."""
    found = []
    known = {module_name(path, package) for path in package.rglob("*.py")}
    for path in sorted(package.rglob("*.py")):
        where, own = path.relative_to(package).as_posix(), module_name(path, package)
        modules = {}  # local name -> the module it is bound to
        for node, base in _imports(path, package=package):
            for alias in node.names:
                if isinstance(node, ast.ImportFrom):
                    if _private(alias.name) and base != own:
                        found.append(f"{where} imports {base}.{alias.name}")
                    modules[alias.asname or alias.name] = f"{base}.{alias.name}"
                elif alias.asname:
                    modules[alias.asname] = alias.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and _private(node.attr)
                    and isinstance(node.value, ast.Name)
                    and modules.get(node.value.id) in known):
                found.append(f"{where} reads {modules[node.value.id]}.{node.attr}")
    return found


def room_of(module, rooms=ROOMS, package_name=PACKAGE.name):
    """The room an absolute module name is in; "reference" for the root and fast/, None for
    the front door (`minitf` itself, __main__) and anything outside the package."""
    parts = module.split(".")
    if parts[0] != package_name or len(parts) == 1 or parts[1] == "__main__":
        return None
    return parts[1] if parts[1] in rooms else "reference"


def room_imports(package=PACKAGE, rooms=ROOMS):
    """{(room, other room): [files]} for every import from one room into another."""
    edges = {}
    for path in sorted(package.rglob("*.py")):
        source = room_of(module_name(path, package), rooms, package.name)
        if source not in rooms:
            continue
        for module in imported_modules(path, package=package):
            target = room_of(module, rooms, package.name)
            if target in rooms and target != source:
                edges.setdefault((source, target), []).append(
                    path.relative_to(package).as_posix())
    return edges


def room_cycles(edges):
    """Every cycle of rooms in `edges` (pairs), each as a list from its smallest room back to
    it: [["pytorch", "translator", "pytorch"]]."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    cycles = set()

    def walk(path):
        for nxt in sorted(graph.get(path[-1], ())):
            if nxt == path[0]:
                cycles.add(tuple(path + [nxt]))
            elif nxt not in path and nxt > path[0]:  # each cycle once, from its smallest room
                walk(path + [nxt])

    for start in sorted(graph):
        walk([start])
    return sorted(list(c) for c in cycles)


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


def test_no_module_uses_another_modules_private_names():
    found = private_imports()
    assert not found, f"{found}: a private name stays in its module; make it public where it " \
                      "belongs (CONTRIBUTING.md)"


def test_no_two_rooms_import_each_other_even_through_a_third():
    edges = room_imports()
    cycles = room_cycles(edges)
    assert not cycles, "rooms that import each other: " + "; ".join(
        " -> ".join(c) + " (" + ", ".join(f for a, b in zip(c, c[1:]) for f in edges[a, b])
        + ")" for c in cycles)


def test_the_room_imports_are_the_ones_contributing_lists():
    """CONTRIBUTING.md names every room-to-room import; a new one is a decision to write
    down there (and this test's list)."""
    assert set(room_imports()) == {
        ("check", "tasks"), ("check", "figures"), ("check", "pytorch"), ("check", "language"),
        ("figures", "language"), ("translator", "tasks"), ("translator", "pytorch"),
        ("pytorch", "tasks"), ("tasks", "language")}
    text = (PACKAGE.parent / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for a, b in room_imports():
        assert f"`{a}` → `{b}`" in text, f"CONTRIBUTING.md does not list {a} → {b}"


def make_package(root, files):
    """A made-up package `minitf` under `root` with the given {relative path: source}."""
    package = root / "minitf"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return package


def test_the_checks_find_a_private_import_and_a_cycle_in_a_made_up_package(tmp_path):
    package = make_package(tmp_path, {
        "__init__.py": "from .layers import Linear\n",
        "layers.py": "def _matmul_rows(x, W):\n    return x @ W\n",
        "multihead.py": "from .layers import _matmul_rows\n",
        "generate.py": "from . import layers\n\ndef f(x):\n    return layers._matmul_rows(x, x)\n",
        "translator/__init__.py": "def main():\n    from ..pytorch import engine\n",
        "pytorch/__init__.py": "",
        "pytorch/engine.py": "from ..translator import TRANSLATOR_CONFIG\n",
        "tasks/__init__.py": "from .. import layers\n",
    })
    assert private_imports(package) == [
        "generate.py reads minitf.layers._matmul_rows",
        "multihead.py imports minitf.layers._matmul_rows"]
    edges = room_imports(package)
    assert set(edges) == {("translator", "pytorch"), ("pytorch", "translator")}
    assert room_cycles(edges) == [["pytorch", "translator", "pytorch"]]


def test_the_checks_pass_a_clean_made_up_package_and_find_a_longer_cycle(tmp_path):
    clean = make_package(tmp_path / "clean", {
        "layers.py": "def matmul_rows(x, W):\n    return x @ W\n\ndef _own():\n    "
                     "return _own\n",
        "multihead.py": "from .layers import matmul_rows\nfrom ._version import __version__\n",
        "tasks/numbers.py": "from ..layers import matmul_rows\n",
        "check/nb00.py": "from ..tasks import numbers\n",
    })
    assert private_imports(clean) == []
    assert room_cycles(room_imports(clean)) == []
    assert room_cycles({("check", "tasks"), ("tasks", "figures"), ("figures", "check"),
                        ("translator", "tasks")}) == [["check", "tasks", "figures", "check"]]

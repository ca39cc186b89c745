"""Issue #36 (P22): every dotted `minitf.…` name the package's docstrings, comments and
READMEs give (`python -m minitf.figures.diagrams`, `minitf.figures.viz.use_cjk_font()`)
names a module or an attribute that exists."""

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = re.compile(r"(?<![\w/.])minitf(?:\.[A-Za-z_]\w*)+")
# Left for minitf/check/'s owner in issue #36 (that folder is another change's): its
# docstring should say minitf.tasks.referent.
NOT_YET = {("minitf/check/nb09.py", "minitf.referent")}


def resolves(reference):
    """True when the longest importable prefix of `reference` has the rest as attributes."""
    parts = reference.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def references():
    files = [p for p in (ROOT / "minitf").rglob("*") if p.suffix in (".py", ".md")]
    for path in files + [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]:
        for ref in sorted(set(REFERENCE.findall(path.read_text(encoding="utf-8")))):
            yield path.relative_to(ROOT).as_posix(), ref


def test_every_dotted_name_exists():
    found = list(references())
    assert len(found) > 20
    broken = {(path, ref) for path, ref in found if not resolves(ref)}
    assert broken <= NOT_YET, f"names that do not exist: {sorted(broken - NOT_YET)}"


def test_the_check_catches_a_moved_module():
    assert not resolves("minitf.diagrams") and not resolves("minitf.viz.use_cjk_font")
    assert resolves("minitf.figures.diagrams") and resolves("minitf.figures.viz.use_cjk_font")

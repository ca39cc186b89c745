"""pyproject.toml and environment.yml must stay in step, and the package must ship its data."""

import fnmatch
import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
ENVIRONMENT = (ROOT / "environment.yml").read_text(encoding="utf-8")


def name_of(spec):
    """Normalised distribution name of a requirement such as ``numpy>=1.24`` or ``nbval``."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def conda_dependencies(text):
    """(conda specs, pip specs) from the ``dependencies:`` list of a simple environment.yml.

    Handles exactly what ours uses: top-level keys, ``- item`` lines and one nested
    ``- pip:`` list. Anything else there is an error, so the file cannot drift into YAML
    this reader would silently misread.
    """
    conda, pip = [], []
    section, pip_indent = None, None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            section, pip_indent = line.split(":", 1)[0], None
            continue
        if section != "dependencies":
            continue
        item = line.strip()
        if not item.startswith("- "):
            raise ValueError(f"environment.yml line {number}: expected '- item', got {raw!r}")
        item = item[2:].strip()
        if pip_indent is not None and indent > pip_indent:
            pip.append(item)
        elif item == "pip:":
            pip_indent = indent
        else:
            pip_indent = None
            conda.append(item)
    return conda, pip


def mismatches(pyproject_text, environment_text):
    """Every way the two files disagree, as sentences; empty when they are in step."""
    project = tomllib.loads(pyproject_text)["project"]
    runtime = {name_of(r) for r in project["dependencies"]}
    extras = project.get("optional-dependencies", {})
    declared = runtime | {name_of(r) for reqs in extras.values() for r in reqs}
    conda, pip = conda_dependencies(environment_text)
    conda_names = {name_of(spec) for spec in conda}

    problems = [f"runtime dependency {n} is missing from environment.yml"
                for n in sorted(runtime - conda_names)]
    problems += [f"conda package {n} is not declared in pyproject.toml"
                 for n in sorted(conda_names - declared - {"python", "pip"})]
    python = [spec for spec in conda if name_of(spec) == "python"]
    wanted = "python" + project["requires-python"].replace(" ", "")
    if [spec.replace(" ", "") for spec in python] != [wanted]:
        problems.append(f"environment.yml should pin {wanted!r} (requires-python), has {python}")
    if "pip" not in conda_names:
        problems.append("environment.yml does not install pip")
    if "-e .[dev]" not in pip:
        problems.append("environment.yml's pip list does not install the package: '-e .[dev]'")
    return problems


def test_pyproject_and_environment_are_in_step():
    assert mismatches(PYPROJECT, ENVIRONMENT) == []


def test_mismatch_checker_notices_drift():
    without_numpy = ENVIRONMENT.replace("  - numpy\n", "")
    assert without_numpy != ENVIRONMENT
    assert any("numpy" in p for p in mismatches(PYPROJECT, without_numpy))

    extra = ENVIRONMENT.replace("  - pytest\n", "  - pytest\n  - scipy\n")
    assert any("scipy" in p for p in mismatches(PYPROJECT, extra))

    old_python = ENVIRONMENT.replace("python>=3.10", "python>=3.9")
    assert any("requires-python" in p for p in mismatches(PYPROJECT, old_python))

    no_install = ENVIRONMENT.replace("-e .[dev]", "minitf")
    assert any("-e .[dev]" in p for p in mismatches(PYPROJECT, no_install))


def test_package_data_covers_weights_and_fonts():
    setuptools = tomllib.loads(PYPROJECT)["tool"]["setuptools"]
    data = setuptools["package-data"]

    def shipped(package, relative):
        return any(fnmatch.fnmatch(relative, p) for p in data.get(package, ()))

    assert shipped("minitf.translator", "weights/translator.npz")
    folder = ROOT / "minitf" / "figures"
    fonts = [p.relative_to(folder).as_posix() for p in (folder / "fonts").iterdir()]
    assert "fonts/OFL.txt" in fonts  # the font's licence must travel with it
    assert all(shipped("minitf.figures", f) for f in fonts), fonts
    assert setuptools["packages"]["find"]["include"] == ["minitf*"]

"""torch is an optional extra: minitf imports without it, the torch engine says what to
install, and every test file that needs torch is one tests/conftest.py can leave out.

Runs with or without torch.
"""

import re
import subprocess
import sys
from pathlib import Path

from conftest import TORCH_TESTS

TESTS = Path(__file__).resolve().parents[1]
NEEDS_TORCH = re.compile(r"^\s*(import torch|from torch|from minitf\.pytorch|import minitf\.pytorch"
                         r"|from minitf import pytorch)", re.MULTILINE)


def run_python(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def test_every_test_file_that_needs_torch_can_be_left_out():
    needing = sorted(p.name for p in TESTS.rglob("test_*.py")
                     if NEEDS_TORCH.search(p.read_text(encoding="utf-8")))
    assert "test_pytorch.py" in needing  # the pattern finds them
    assert set(needing) <= set(TORCH_TESTS), (
        f"add {sorted(set(needing) - set(TORCH_TESTS))} to TORCH_TESTS in tests/conftest.py")


def test_importing_minitf_does_not_import_torch():
    run = run_python("import sys, minitf, minitf.train, minitf.check, minitf.__main__; "
                     "print('torch' in sys.modules)")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"


def test_the_torch_engine_without_torch_says_what_to_install():
    # sys.modules["torch"] = None makes `import torch` fail as if torch were not installed.
    run = run_python("import sys; sys.modules['torch'] = None\n"
                     "from minitf.__main__ import main\n"
                     "sys.exit(main(['train', '--engine', 'torch', '--steps', '1']))")
    assert run.returncode == 2
    assert run.stderr.strip() == "--engine torch needs PyTorch: install it with `make torch`"

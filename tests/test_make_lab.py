"""`make lab` serves the course in JupyterLab for every user, root included (a Docker container
or a cloud VM, where JupyterLab refuses to start unless it is given --allow-root).

The server test starts the real `make lab` on a free loopback port with no browser, waits until
http://127.0.0.1:PORT/lab answers, then stops the whole process group.
"""

import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STARTUP_SECONDS = 90  # JupyterLab starts in ~10 s; the machine running the tests may be busy
ROOT_NOTE = "so JupyterLab gets --allow-root"


def make(*args, **kwargs):
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, text=True,
                          capture_output=True, check=True, **kwargs).stdout


@pytest.mark.parametrize("user_id, as_root", [("0", True), ("1000", False)],
                         ids=["root", "user"])
def test_allow_root_only_for_root(user_id, as_root):
    commands = make("-n", "lab", f"USER_ID={user_id}")
    [jupyter] = [line for line in commands.splitlines() if "jupyter lab" in line]
    assert ("--allow-root" in jupyter.split()) == as_root, jupyter
    assert (ROOT_NOTE in commands) == as_root, commands


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_answer(url, process, seconds):
    """The HTTP status of url once the server answers; None if it never did in time."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as err:
            return err.code
        except OSError:  # not listening yet
            time.sleep(0.5)
    return None


def stop_group(process):
    """Stop make and the JupyterLab server it started (one process group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:  # the whole group has exited already
            pass
        try:
            process.wait(timeout=30)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.mark.slow
def test_make_lab_serves_jupyterlab(tmp_path):
    port, token = free_port(), secrets.token_hex(16)
    lab_args = (f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} "
                f"--ServerApp.port_retries=0 --IdentityProvider.token={token}")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    log_path = tmp_path / "make_lab.log"
    with open(log_path, "wb") as log:
        lab = subprocess.Popen(["make", "--no-print-directory", "lab", f"LAB_ARGS={lab_args}"],
                               cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        status = first_answer(f"http://127.0.0.1:{port}/lab?token={token}", lab, STARTUP_SECONDS)
        exited = lab.poll()
    finally:
        stop_group(lab)
    log = log_path.read_text(errors="replace")
    assert status == 200, (
        f"/lab answered {status} (make exited with {exited}) within {STARTUP_SECONDS} s; "
        f"make lab printed:\n{log[-3000:]}")
    assert (ROOT_NOTE in log) == (os.geteuid() == 0), log[-3000:]

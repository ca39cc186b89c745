"""`make lab` serves the course in JupyterLab for every user, root included (a Docker container
or a cloud VM, where JupyterLab refuses to start unless it is given --allow-root).

The server test starts the real `make lab` on a free loopback port with no browser, waits until
http://127.0.0.1:PORT/lab answers, then checks what the live slides (RISE) need: the file
browser opens on notebooks/, RISE's /files/notebooks/rise.css is served, and so is the Chinese
font that rise.css names (a url relative to rise.css, so only served when JupyterLab's root is
the repository root). Then it stops the whole process group.
"""

import os
import re
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urljoin

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


def status_of(url, token):
    """HTTP status and body of url fetched with the server's token."""
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, b""


def font_urls(css):
    """The url(...) of every font file a stylesheet names."""
    return re.findall(r"""url\(["']?([^"')]+\.(?:otf|ttf|woff2?))["']?\)""", css)


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
    base = f"http://127.0.0.1:{port}"
    try:
        status = first_answer(f"{base}/lab?token={token}", lab, STARTUP_SECONDS)
        exited = lab.poll()
        if status == 200:
            _, lab_page = status_of(f"{base}/lab", token)
            # where RISE asks for it: beside the notebook, through JupyterLab's /files/
            css_url = f"{base}/files/notebooks/rise.css"
            css_status, css = status_of(css_url, token)
            fonts = {urljoin(css_url, url): status_of(urljoin(css_url, url), token)
                     for url in font_urls(css.decode())}
    finally:
        stop_group(lab)
    log = log_path.read_text(errors="replace")
    assert status == 200, (
        f"/lab answered {status} (make exited with {exited}) within {STARTUP_SECONDS} s; "
        f"make lab printed:\n{log[-3000:]}")
    assert (ROOT_NOTE in log) == (os.geteuid() == 0), log[-3000:]
    assert re.search(rb'"preferredPath": "/?notebooks/?"', lab_page), \
        "the file browser does not open on notebooks/"
    assert css_status == 200, f"{css_url} answered {css_status}"
    assert fonts, "rise.css names no font file"
    font_bytes = (ROOT / "minitf" / "figures" / "fonts" / "minitf-cjk.otf").read_bytes()
    for url, (font_status, body) in fonts.items():
        assert font_status == 200, f"{url} (named in rise.css) answered {font_status}"
        assert body == font_bytes, f"{url} is not minitf/figures/fonts/minitf-cjk.otf"

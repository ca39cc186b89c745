"""`make lab` serves the course in JupyterLab for every user, root included (a Docker container
or a cloud VM, where JupyterLab refuses to start unless it is given --allow-root).

The server test starts the real `make lab` on a free loopback port with no browser, waits until
http://127.0.0.1:PORT/lab answers, then checks what the live slides (RISE) need: the file
browser opens on notebooks/, RISE's /files/notebooks/rise.css is served, and so is the Chinese
font that rise.css names (a url relative to rise.css, so only served when JupyterLab's root is
the repository root), and the project's own JupyterLab configuration (.jupyter/): its custom.css
with the same font for the notebook view, and the news question turned off. Then it stops the
whole process group. `running_lab` starts the same server for the browser tests.
"""

import contextlib
import json
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

ROOT = Path(__file__).resolve().parents[2]
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


def start_lab(tmp_path):
    """Start the real `make lab` on a free loopback port, with no browser, in a process group
    of its own. Its runtime files, and the settings and workspaces the lab saves, go to
    tmp_path, so a test neither reads nor changes the ones in the repository's .jupyter/lab/.
    Returns the process, the server's base url, its token and the log of make lab."""
    port, token = free_port(), secrets.token_hex(16)
    lab_args = (f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} "
                f"--ServerApp.port_retries=0 --IdentityProvider.token={token}")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "user-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces")}
    log_path = tmp_path / "make_lab.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            ["make", "--no-print-directory", "lab", f"LAB_ARGS={lab_args}"], cwd=ROOT, env=env,
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    return process, f"http://127.0.0.1:{port}", token, log_path


@contextlib.contextmanager
def running_lab(tmp_path):
    """A `make lab` server that answers: yields its base url and token, then stops it."""
    process, base, token, log_path = start_lab(tmp_path)
    try:
        status = first_answer(f"{base}/lab?token={token}", process, STARTUP_SECONDS)
        if status != 200:
            pytest.fail(f"make lab: /lab answered {status}:\n"
                        f"{log_path.read_text(errors='replace')[-3000:]}")
        yield base, token
    finally:
        stop_group(process)


NOTIFICATION_SETTINGS = "@jupyterlab/apputils-extension:notification"


@pytest.mark.slow
def test_make_lab_serves_jupyterlab(tmp_path):
    lab, base, token, log_path = start_lab(tmp_path)
    try:
        status = first_answer(f"{base}/lab?token={token}", lab, STARTUP_SECONDS)
        exited = lab.poll()
        if status == 200:
            _, lab_page = status_of(f"{base}/lab", token)
            # where RISE asks for it: beside the notebook, through JupyterLab's /files/
            css_url = f"{base}/files/notebooks/rise.css"
            css_status, css = status_of(css_url, token)
            # the notebook view's stylesheet, linked from the page (.jupyter/custom/custom.css)
            custom_url = f"{base}/custom/custom.css"
            custom_status, custom = status_of(custom_url, token)
            fonts = [(sheet, urljoin(sheet, url), status_of(urljoin(sheet, url), token))
                     for sheet, text in ((css_url, css), (custom_url, custom))
                     for url in font_urls(text.decode())]
            _, notification = status_of(f"{base}/lab/api/settings/{NOTIFICATION_SETTINGS}",
                                        token)
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
    assert b'href="/custom/custom.css"' in lab_page, "the lab page does not load custom.css"
    assert custom_status == 200, f"{custom_url} answered {custom_status}"
    assert {sheet for sheet, _, _ in fonts} == {css_url, custom_url}, \
        "rise.css and custom.css should each name a font file"
    # .jupyter/lab/settings/overrides.json makes "false" (never) the default of fetchNews, so
    # JupyterLab never asks "Would you like to get notified about official Jupyter news?"
    fetch_news = json.loads(notification)["schema"]["properties"]["fetchNews"]
    assert fetch_news["default"] == "false", fetch_news
    font_bytes = (ROOT / "minitf" / "figures" / "fonts" / "minitf-cjk.otf").read_bytes()
    for sheet, url, (font_status, body) in fonts:
        assert font_status == 200, f"{url} (named in {sheet}) answered {font_status}"
        assert body == font_bytes, f"{url} is not minitf/figures/fonts/minitf-cjk.otf"

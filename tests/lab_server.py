"""JupyterLab on loopback and the flags for Debian's headless Chromium, for the browser tests."""
from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

# Without the background-networking flags Chromium keeps dialling hosts this machine cannot reach.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def require_chromium(module_level: bool = False) -> None:
    """Skip unless Debian's Chromium and Playwright are installed; under CI, fail instead."""
    if not (CHROMIUM and importlib.util.find_spec("playwright")):
        if os.environ.get("CI"):
            raise RuntimeError("CI needs chromium (apt-get install chromium) and playwright (pip)")
        import pytest

        pytest.skip("needs Chromium (apt-get install chromium) and Playwright (pip install playwright)",
                    allow_module_level=module_level)


@contextmanager
def chromium():
    """A headless Chromium browser (Playwright), closed afterwards."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def jupyter_lab(root: Path, token: str, *extra_args: str, log: Path | None = None, set_root: bool = True):
    """Serve `root` with `jupyter-lab` (not the forking `jupyter lab` wrapper) on a free loopback port,
    yield its URL once it answers, and stop it by its PID. With `set_root=False` the server's root is
    whatever `extra_args` make it (started in `root`)."""
    port = free_port()
    out = open(log, "w") if log else subprocess.DEVNULL
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("jupyter-lab")), "--no-browser", "--allow-root",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
         *([f"--ServerApp.root_dir={root}"] if set_root else []), *extra_args],
        cwd=root, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.time() > deadline:
                    tail = Path(log).read_text()[-2000:] if log else ""
                    raise AssertionError(f"jupyter-lab did not start\n{tail}")
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        if log:
            out.close()

"""Binder builds from binder/: a CPU build of torch, then the course package.

repo2docker renders its Dockerfile without building (no Docker engine needed); the test reads what it
would run. Building the image itself needs Docker and the network, which CI does not have.
"""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_repo2docker_installs_cpu_torch_then_the_course():
    r2d = Path(sys.executable).with_name("jupyter-repo2docker")
    proc = subprocess.run([str(r2d), "--no-build", "--debug", str(REPO)],
                          capture_output=True, text=True, timeout=120)
    dockerfile = proc.stdout + proc.stderr
    assert 'pip install --no-cache-dir -r "binder/requirements.txt"' in dockerfile, dockerfile[-3000:]
    assert "./binder/postBuild" in dockerfile
    assert "python=3.11" in dockerfile
    requirements = (REPO / "binder" / "requirements.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in requirements
    assert "torch>=2.2" in requirements
    assert "pip install --no-cache-dir -e ." in (REPO / "binder" / "postBuild").read_text()

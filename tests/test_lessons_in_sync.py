"""lessons/ is exactly what nbgrader releases from solutions/ (regenerate: python grader/release.py)."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _notebooks(root):
    """The notebooks under root, without the copies JupyterLab autosaves in (git-ignored) .ipynb_checkpoints/:
    opening a lesson leaves them, and they are no part of a release."""
    return sorted(p.relative_to(root) for p in root.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def test_committed_lessons_match_a_fresh_release(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "grader" / "release.py"), "--to", str(tmp_path), "--no-db"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fresh = _notebooks(tmp_path)
    committed = _notebooks(REPO / "lessons")
    assert fresh == committed, "lessons/ and solutions/ hold different notebooks"
    stale = [str(p) for p in fresh if (tmp_path / p).read_bytes() != (REPO / "lessons" / p).read_bytes()]
    assert not stale, f"lessons out of date, run `python grader/release.py`: {stale}"

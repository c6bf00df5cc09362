"""lessons/ is exactly what nbgrader releases from solutions/ (regenerate: python grader/release.py)."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_committed_lessons_match_a_fresh_release(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "grader" / "release.py"), "--to", str(tmp_path), "--no-db"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.ipynb"))
    committed = sorted(p.relative_to(REPO / "lessons") for p in (REPO / "lessons").rglob("*.ipynb"))
    assert fresh == committed, "lessons/ and solutions/ hold different notebooks"
    stale = [str(p) for p in fresh if (tmp_path / p).read_bytes() != (REPO / "lessons" / p).read_bytes()]
    assert not stale, f"lessons out of date, run `python grader/release.py`: {stale}"

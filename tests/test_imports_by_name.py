"""Every module is imported by name: no code edits sys.path or loads a module from a file path, so what runs
is what the requirements installed (headlab, and grader/'s modules through grader/pyproject.toml), the same on
an instructor's machine, a Dask worker and CI."""
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BY_PATH = re.compile(r"sys\.path\.(insert|append|extend)|sys\.path\s*(\[[^]]*\]\s*)?[+]?=|spec_from_file_location|SourceFileLoader"
                     r"|runpy\.run_path|imp\.load_source")


def test_no_code_edits_the_import_path_or_imports_a_file_by_its_path():
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True)
    found = [f"{name}:{i}: {line.strip()}" for name in files.stdout.split() if name != "tests/test_imports_by_name.py"
             for i, line in enumerate((REPO / name).read_text().splitlines(), 1) if BY_PATH.search(line)]
    assert not found, "\n".join(found)

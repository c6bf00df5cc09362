"""Count the logic lines of headlab/checks/ and the proven mistake keys (issue 25's measure of the checks).

A logic line is a line of a check module that is not blank, not a comment, not part of a docstring and not
mostly a string literal (more than half of its characters inside strings): messages are product, not logic.

    python -m dev.logic_lines            # total, proven keys and lines per proven key
    python -m dev.logic_lines --files    # and per module
"""
from __future__ import annotations

import ast
import configparser
import io
import json
import os
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ROOT / "headlab" / "checks"


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def logic_lines(source: str) -> int:
    """The logic lines of one module's source."""
    docs = _docstring_lines(ast.parse(source))
    code: dict[int, int] = {}     # line → characters of code
    strings: dict[int, int] = {}  # line → characters inside string literals
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                        tokenize.ENDMARKER):
            continue
        is_string = tok.type == tokenize.STRING or tok.type in {getattr(tokenize, n, -1) for n in (
            "FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")}
        into = strings if is_string else code
        for line, part in enumerate(tok.string.split("\n"), start=tok.start[0]):
            into[line] = into.get(line, 0) + len(part.strip())
    return sum(1 for line in set(code) | set(strings)
               if line not in docs and code.get(line, 0) >= strings.get(line, 0))


def proven_keys() -> set[str]:
    """The declared mistake keys that a wrong implementation proves (tests/mistakes.py), imported the way pytest
    imports the tests: with pytest.ini's `pythonpath`, in a child process."""
    config = configparser.ConfigParser()
    config.read(ROOT / "pytest.ini")
    path = os.pathsep.join(str(ROOT / p) for p in config["pytest"]["pythonpath"].split())
    code = "import json, mistakes; print(json.dumps(sorted(set(mistakes.proven_keys()) & set(mistakes.declared_keys()))))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": path},
                         capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def main() -> None:
    counts = {p.name: logic_lines(p.read_text()) for p in sorted(CHECKS.glob("*.py"))}
    proven = proven_keys()
    if "--files" in sys.argv:
        for name, n in counts.items():
            print(f"{name:14} {n:5}")
    total = sum(counts.values())
    print(f"logic lines {total}, proven keys {len(proven)}, {total / max(1, len(proven)):.2f} per proven key")


if __name__ == "__main__":
    main()

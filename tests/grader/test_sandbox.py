"""Student code is untrusted: `nbgrader autograde` with the course configuration runs it sandboxed.

One attacker's answer cell tries every attack in turn and prints the ones that worked; its
`padding_mask` is correct only if none did, so the attacker scores 4/4 exactly when the sandbox stopped
them all (and 2/4 when one got through). The same class is graded twice by plain `nbgrader autograde`:
with the course configuration (the sandbox on) and with HEADS_SANDBOX=off, the control that shows
every attack would otherwise work. An honest student in the same batch gets full marks: grading
works inside the sandbox.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading

import nbformat
import pytest

from course import LESSON, REPO, fill, make_course, release_nb, scores, solution_answers, submit

from heads_sandbox import bwrap_works  # noqa: E402

if not bwrap_works():
    if os.environ.get("CI"):
        raise RuntimeError("bubblewrap is required in CI (apt-get install bubblewrap)")
    pytest.skip("bubblewrap (bwrap) is not installed or cannot create namespaces here: "
                "apt-get install bubblewrap", allow_module_level=True)

SOL = solution_answers()


def attacks(root, port) -> dict[str, str]:
    sub = root / "submitted"
    return {
        "read-solutions": f"open({str(REPO / 'solutions' / LESSON / (LESSON + '.ipynb'))!r}, 'rb').read(100)",
        "read-gradebook": f"open({str(root / 'gradebook.db')!r}, 'rb').read(100)",
        "read-other-student": f"open({str(sub / 'honest' / LESSON / (LESSON + '.ipynb'))!r}).read(100)",
        "list-other-students": f"assert 'honest' in os.listdir({str(sub)!r})",
        "write-outside": f"open({str(root / 'pwned.txt')!r}, 'w').write('x')",
        "write-other-student": f"open({str(sub / 'honest' / LESSON / 'pwned.txt')!r}, 'w').write('x')",
        "network": f"socket.create_connection(('127.0.0.1', {port}), timeout=3).close()",
        # the kernel's sockets and signing key: with them a child process can send the kernel code to run
        "read-connection-file": "import sys; open(sys.argv[sys.argv.index('-f') + 1]).read(10)",
        # the kernel's own memory, in which a plain open() rewrites any function's code (red team 13)
        "write-own-memory": "open('/proc/self/mem', 'r+b').close()",
        # a module the notebook writes, imported by name (`%%writefile tqdm.py`): PYTHONSAFEPATH, sandbox or not
        "import-from-workdir": "open('heads_written.py', 'w').write('X = 1'); import heads_written",
    }


def attacker(attacks: dict[str, str]) -> str:
    """An answer cell that runs every attack, prints the names of those that worked, and answers
    `padding_mask` wrongly if any did."""
    wrong_if_leaked = SOL["padding_mask"].replace(
        "    positions =", "    if _LEAKED:\n        return None\n    positions =")
    return (f"import os, socket\n_LEAKED = []\nfor _name, _code in {attacks!r}.items():\n"
            "    try:\n        exec(_code)\n        _LEAKED.append(_name)\n    except Exception:\n        pass\n"
            f"print('leaked:', *_LEAKED)\n\n{wrong_if_leaked}")


def build_class(root, port):
    rel = release_nb(root)
    submit(root, "honest", fill(rel, SOL))
    submit(root, "attacker", fill(rel, {**SOL, "padding_mask": attacker(attacks(root, port))}))


def leaked(root) -> set[str]:
    """The attacks the attacker's kernel says worked (its answer cell's output, autograded notebook)."""
    nb = nbformat.read(root / "autograded" / "attacker" / LESSON / f"{LESSON}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "padding_mask")
    # one print can arrive as several stream outputs (the kernel flushes on a timer): join them first
    printed = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    said = [line for line in printed.splitlines() if line.startswith("leaked:")]
    assert said, f"the attacker's cell printed no report: {cell.outputs}"
    return set(said[-1].split()[1:])


@pytest.fixture(scope="module")
def listener():
    """A TCP server on the grader's loopback: reachable from the kernel only without a sandbox."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.5)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                server.accept()[0].close()
            except OSError:
                pass
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


@pytest.fixture(scope="module")
def graded(tmp_path_factory, listener):
    """Both runs at once: {"on": (root, scores), "off": (root, scores)}."""
    runs = {}
    for mode in ("on", "off"):
        # the attacks are flagged for review; run as written, they meet the sandbox (heads_unrun)
        root = make_course(tmp_path_factory.mktemp(f"sandbox-{mode}") / "course",
                           extra_config=f"c.SkipFlaggedCode.run_as_written = ['attacker/{LESSON}']\n")
        build_class(root, listener)
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        if mode == "off":
            env["HEADS_SANDBOX"] = "off"
        else:
            env["HEADS_SANDBOX"] = "required"
        runs[mode] = (root, subprocess.Popen(
            [sys.executable, "-m", "nbgrader", "autograde", LESSON, "--force"], cwd=root, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    out = {}
    for mode, (root, proc) in runs.items():
        log = proc.communicate(timeout=900)[0]
        assert proc.returncode == 0, log[-4000:]
        out[mode] = (root, scores(root), log)
    return out


ATTACKS = ["read-solutions", "read-gradebook", "read-other-student", "list-other-students",
           "write-outside", "write-other-student", "network", "read-connection-file", "write-own-memory"]


def test_grading_works_inside_the_sandbox(graded):
    root, got, log = graded["on"]
    assert got["honest"]["score"] == 4, (got["honest"], log[-3000:])


def test_the_attacker_is_graded_in_full_only_when_every_attack_fails(graded):
    assert graded["on"][1]["attacker"]["score"] == 4, graded["on"][1]["attacker"]
    assert graded["off"][1]["attacker"]["score"] == 2, graded["off"][1]["attacker"]


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack_is_blocked(graded, attack):
    root, got, log = graded["on"]
    assert attack not in leaked(root), f"{attack} got through the sandbox"
    assert not (root / "pwned.txt").exists()
    assert not (root / "submitted" / "honest" / LESSON / "pwned.txt").exists()


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack_works_without_the_sandbox(graded, attack):
    """The control: each attack does succeed when the sandbox is off, so the test above can fail."""
    root, got, log = graded["off"]
    assert attack in leaked(root), f"{attack} failed even without the sandbox: the test above proves nothing"
    assert got["honest"]["score"] == 4


@pytest.mark.parametrize("mode", ["on", "off"])
def test_a_module_written_in_the_working_folder_is_not_imported(graded, mode):
    """Closed by the kernel's environment, not a flag: without it `import tqdm` found the notebook's own tqdm.py
    before site-packages (test_hostile's shadow-module student)."""
    root, got, log = graded[mode]
    assert "import-from-workdir" not in leaked(root), f"sandbox {mode}: the kernel imported a module it wrote"


def test_kernel_sees_only_its_own_folder(graded, tmp_path):
    """What the sandbox shows the kernel: no course folders at all."""
    root, _, _ = graded["on"]
    from heads_sandbox import sandbox_command

    workdir = tmp_path / "work"
    workdir.mkdir()
    private = tmp_path / "private"
    private.mkdir()
    probe = ("import os, sys; print(sorted(os.listdir(%r)), os.path.exists(%r), os.path.exists(%r))"
             % (str(tmp_path), str(REPO / "solutions"), str(root)))
    cmd = sandbox_command([sys.executable, "-c", probe], str(workdir), str(private))
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["['private',", "'work']", "False", "False"], out.stdout
    assert shutil.which("bwrap")


def test_grader_only_packages_inside_what_the_kernel_sees_are_shown_empty(tmp_path, monkeypatch):
    """heads_mistakes holds the mistakes' functions, answers one argument away. A non-editable install of the grader
    puts it in site-packages, which the kernel's Python needs: the sandbox covers it with an empty read-only tmpfs.
    Planted in the kernel's own (bound, writable) folder here, it must be found and shown empty."""
    from heads_sandbox import grader_only_paths, sandbox_command

    workdir, private = tmp_path / "work", tmp_path / "private"
    (workdir / "heads_mistakes").mkdir(parents=True)
    (workdir / "heads_mistakes" / "__init__.py").write_text("ANSWER = 42\n")
    private.mkdir()
    monkeypatch.syspath_prepend(str(workdir))
    monkeypatch.delitem(sys.modules, "heads_mistakes", raising=False)
    hidden = grader_only_paths([str(workdir)])
    assert hidden == [os.path.realpath(workdir / "heads_mistakes")]
    # the kernel imports nothing from its working folder (PYTHONSAFEPATH); here the folder stands for site-packages
    python = ["env", "-u", "PYTHONSAFEPATH", sys.executable, "-c"]
    probe = ("import os; print(os.listdir('heads_mistakes'))\n"
             "try:\n    import heads_mistakes; print(getattr(heads_mistakes, 'ANSWER', 'no answer'))\n"
             "except ImportError as err:\n    print('not importable')\n"
             "try:\n    open('heads_mistakes/x', 'w')\nexcept OSError:\n    print('read-only')")
    out = subprocess.run(sandbox_command([*python, probe], str(workdir), str(private), hide=hidden),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "[]" and "42" not in out.stdout and "read-only" in out.stdout, out.stdout
    shown = subprocess.run(sandbox_command([*python, probe], str(workdir), str(private), hide=[]),
                           capture_output=True, text=True, timeout=120)
    assert "42" in shown.stdout, shown.stdout + shown.stderr   # the control: without the cover it is importable

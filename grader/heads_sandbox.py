"""The kernel that runs student code while autograding: sandboxed, memory-limited.

`SandboxKernelManager` is jupyter_client's `AsyncKernelManager` with the kernel command wrapped:

    prlimit --as=<memory> --fsize=<file size> -- nice -n 10 -- bwrap <allow-list of read-only binds>
        --bind <workdir> <workdir> --unshare-... --die-with-parent ... --
        [setpriv --reuid=<uid> ...] prlimit --nproc=<processes> -- python -m ipykernel_launcher ...

nbgrader's `Execute` uses it through `c.Execute.kernel_manager_class` in nbgrader_config.py, so
`nbgrader autograde` itself (and the course's `grade.py`, which calls it) runs every submission this
way. Inside the sandbox the kernel sees only the system (/usr, a few files of /etc), the Python
installation and its packages, the course package `headlab`, and its own working copy (the
student's folder in autograded/), which is the only writable place besides a private /scratch. No
solutions/, no gradebook, no other student, no network (a new network namespace; the kernel talks
to nbgrader over Unix sockets in a private folder: jupyter_client's `ipc` transport).

`sandbox`: "required" (the default: refuse to run a kernel without it), "auto" (bubblewrap when it
works here, else a warning and no sandbox) or "off". The environment variable HEADS_SANDBOX overrides
it; `grade.py --no-sandbox` sets it to "off" and says what an unsandboxed kernel can read (the
recordings, with every hidden case and expected value, among them).

Resources, each a trait below: address space and file size (prlimit), the private /scratch tmpfs
(bwrap --size; /dev is read-only), processes and threads (RLIMIT_NPROC, counted in the sandbox's
own user namespace or, when the grader is root, for a uid the kernel gets to itself: Linux never
applies it to root), CPU priority (nice), and the bytes the kernel may have on disk (its working
and socket folders), watched while it runs: over the limit, the kernel is killed and
`limit_reason` says why. `stop_strays()`, called by the executor after every cell, kills every
process a cell left running, so processes spawned by one cell cannot slow down the rest.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import CaselessStrEnum

from heads_files import limit, setting

# What a kernel may read: the system and Python, never the course folder itself.
SYSTEM_PATHS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
                "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
                "/etc/fonts", "/etc/ssl", "/etc/mime.types", "/etc/matplotlibrc"]
ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
            "JPY_SESSION_NAME", "PYDEVD_DISABLE_FILE_VALIDATION")


def namespaces() -> list[str]:
    """bwrap's namespace options. Run by root, the sandbox gets no user namespace, so that the
    kernel can switch to a uid of its own inside it (see `SandboxKernelManager.kernel_uid_base`)."""
    if os.geteuid() == 0:
        return ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                "--unshare-cgroup-try"]
    return ["--unshare-all"]


@functools.lru_cache(maxsize=None)
def bwrap_works() -> bool:
    """True when bubblewrap is installed and can create the namespaces it needs here."""
    exe = shutil.which("bwrap")
    if not exe or (os.geteuid() == 0 and not shutil.which("setpriv")):
        return False
    probe = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *namespaces(),
             "--die-with-parent", "--", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def sandbox_mode(configured: str = "required") -> str:
    """The sandbox mode in force: HEADS_SANDBOX when set, else the configured one."""
    return os.environ.get("HEADS_SANDBOX", configured).strip().lower()


def sandboxed(mode: str) -> bool:
    """Whether a kernel runs in bubblewrap under the sandbox `mode` ("off", "auto" or "required");
    RuntimeError(NO_SANDBOX) when the sandbox is required and bubblewrap does not work here."""
    if mode == "off":
        return False
    if bwrap_works():
        return True
    if mode != "auto":
        raise RuntimeError(NO_SANDBOX)
    return False


def python_paths() -> list[str]:
    """Folders the kernel's Python needs: the interpreter, the venv, site-packages, headlab."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(sysconfig.get_paths()[key])
    spec = importlib.util.find_spec("headlab")  # an editable install lives outside site-packages
    if spec is not None and spec.submodule_search_locations:
        paths.update(spec.submodule_search_locations)
    return sorted(os.path.realpath(p) for p in paths if p and os.path.exists(p))


GRADER_ONLY = ("heads_mistakes",)   # the mistakes' functions and reference heads: answers one argument away


def grader_only_paths(binds: list[str]) -> list[str]:
    """Folders of grader-only packages that lie inside what the kernel is shown: a non-editable install of the
    grader puts them in site-packages, which the kernel's Python needs. Each is covered by an empty read-only
    tmpfs. (An editable install, as the README's, keeps them in grader/, which is not shown at all.)"""
    found = []
    for name in GRADER_ONLY:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            real = os.path.realpath(location)
            if any(real == b or real.startswith(b.rstrip("/") + "/") for b in binds):
                found.append(real)
    return found


def sandbox_command(cmd: list[str], workdir: str, private: str, scratch_size: int = 0,
                    process_limit: int = 0, uid: int | None = None, hide: list[str] | None = None) -> list[str]:
    """`cmd` wrapped in bubblewrap: read-only system and Python, `workdir` and `private` writable,
    a private /scratch of at most `scratch_size` bytes, at most `process_limit` processes and
    threads (0: no limit), run as `uid` (when the grader is root; None: the grader's user); the folders in `hide`
    (default: `grader_only_paths`) are shown empty."""
    scratch = ["--size", str(scratch_size)] if scratch_size > 0 else []
    # /dev would be a writable tmpfs of unbounded size: it is made read-only below.
    args = ["bwrap", *namespaces(), "--die-with-parent", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--perms", "01777", *scratch, "--tmpfs", "/scratch", "--clearenv"]
    binds = [p for p in python_paths() if not p.startswith("/usr/")]
    # The folders bwrap would create to hold the binds are 0700: the kernel's uid could not pass.
    ancestors = {a for p in [*SYSTEM_PATHS, *binds, workdir, private] for a in map(str, Path(p).parents)}
    for path in sorted(ancestors - {"/", "/tmp"} - set(SYSTEM_PATHS)):
        args += ["--perms", "0755", "--dir", path]
    for path in SYSTEM_PATHS:
        args += ["--ro-bind-try", path, path]
    for path in binds:
        args += ["--ro-bind", path, path]
    # Only the two binds are writable; the folders bwrap creates to hold them, /tmp and the rest of
    # the root are made read-only, and /scratch (private, discarded) is the kernel's temp and home.
    args += ["--bind", private, private, "--bind", workdir, workdir]
    for path in grader_only_paths(binds) if hide is None else hide:   # after every bind, so that none covers it
        args += ["--tmpfs", path, "--remount-ro", path]
    # /proc read-only too: writable, /proc/self/mem let a notebook rewrite its own kernel's code in memory with a
    # plain open() (red team 13 gave json's encoder another function's code), no name of which a flag reads
    args += ["--remount-ro", "/tmp", "--remount-ro", "/proc",
             "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", workdir]
    env = {k: os.environ[k] for k in ENV_KEEP if k in os.environ}
    env.update(HOME="/scratch", TMPDIR="/scratch", MPLCONFIGDIR="/scratch/matplotlib",
               PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1", **NO_IMPORTS_FROM_WORKDIR,
               NBGRADER_EXECUTION=os.environ.get("NBGRADER_EXECUTION", "autograde"))
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    for key, value in sorted(env.items()):
        args += ["--setenv", key, value]
    # RLIMIT_NPROC counts the processes of one user in one user namespace, and never limits root:
    # a non-root grader's sandbox has a user namespace of its own; under a root grader the kernel
    # drops to a uid of its own (and every capability) first.
    nproc = ["prlimit", f"--nproc={process_limit}", "--"] if process_limit > 0 else []
    setuid = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"] \
        if uid is not None else []
    return args + ["--", *setuid, *nproc, *cmd]


# The kernel imports nothing from its working folder (Python's -P; IPython then leaves '' out of sys.path too): a
# module the notebook writes there (`%%writefile tqdm.py`) would otherwise be imported by a plain `import tqdm`, or
# by name by matplotlib's or pandas' backend setting, and run code the flags never read.
NO_IMPORTS_FROM_WORKDIR = {"PYTHONSAFEPATH": "1"}


def disk_bytes(*folders: str) -> int:
    """Bytes of the files below `folders`, links not followed."""
    total = 0
    for folder in folders:
        for dirpath, _, filenames in os.walk(folder):
            for name in filenames:
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except OSError:
                    pass
    return total


def process_tree() -> dict[int, list[tuple[int, int]]]:
    """{parent pid: [(start time, pid), ...]} of every living process (zombies left out), from /proc."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        # after the command name: state, ppid, ..., starttime is field 22 of the whole line
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append((int(fields[19]), int(entry)))
    return children


def descendants(tree: dict, pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for _, child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


NO_SANDBOX = ("the sandbox is required, and bubblewrap (bwrap) does not work here: install it "
              "(apt-get install bubblewrap; a root grader also needs setpriv, from util-linux), or "
              "grade without it knowingly: python grader/grade.py --no-sandbox autograde")


class SandboxKernelManager(AsyncKernelManager):
    sandbox = CaselessStrEnum(
        ["auto", "required", "off"], default_value="required",
        help="Run the kernel in bubblewrap: required (refuse to run a kernel without it), auto (when "
             "it works, else unsandboxed with a warning), or off. Unsandboxed, student code can read "
             "the recordings (every hidden case and expected value), the solutions and the gradebook. "
             "The environment variable HEADS_SANDBOX overrides it.",
    ).tag(config=True)
    memory_limit = limit(2 * 1024**3, "Address-space limit of the kernel in bytes, set with prlimit", off=0)
    file_size_limit = limit(64 * 1024**2, "Largest file the kernel may write, in bytes, set with prlimit", off=0)
    scratch_size = limit(256 * 1024**2, "Size of the kernel's private /scratch tmpfs (its HOME and TMPDIR) in bytes; "
                                        "it lives in RAM, outside the memory limit", off=0)
    process_limit = limit(64, "Processes and threads the sandboxed kernel may run at once", off=0)
    niceness = setting(10, "nice value of the kernel and every process it starts (0: unchanged).")
    disk_limit = limit(128 * 1024**2, "Bytes the kernel may have on disk in its working and socket folders while "
                                      "it runs, over which it is killed", off=0)
    disk_poll_seconds = setting(0.2, "Seconds between two measurements of a running kernel's disk use.")
    kernel_uid_base = setting(1_000_000, "When the grader runs as root, the sandboxed kernel "
                                         "runs as uid kernel_uid_base + the grader process's "
                                         "PID: unused by any real user, one per concurrent "
                                         "kernel (the process limit never applies to root).")
    stop_stray_processes = setting(True, "After every cell, kill the processes the "
                                         "cell started and left running.")
    stray_wait_seconds = setting(5.0, "How long, after a cell, to keep killing the "
                                      "processes it left until none is alive.")

    limit_reason: str | None = None

    def _use_sandbox(self) -> bool:
        mode = sandbox_mode(self.sandbox)
        if sandboxed(mode):
            return True
        if mode == "auto":
            self.log.warning("bubblewrap (or, for a root grader, setpriv) not available: student code "
                             "runs WITHOUT a sandbox")
        return False

    def _workdir(self) -> str:
        return os.path.realpath((self._launch_args or {}).get("cwd") or os.getcwd())

    def _kernel_uid(self) -> int | None:
        return self.kernel_uid_base + os.getpid() if os.geteuid() == 0 else None

    async def _async_pre_start_kernel(self, **kw):
        self._private = None
        self.limit_reason = None
        if self._use_sandbox():
            # Unix sockets in a private folder both sides can see: the sandbox has no network.
            self._private = tempfile.mkdtemp(prefix="heads-kernel-")
            self.transport = "ipc"
            self.ip = os.path.join(self._private, "kernel")
            self.connection_file = os.path.join(self._private, "kernel.json")
            # A SIGINT to the process group would also reach bubblewrap, which dies of it and takes
            # the kernel along: interrupt by message (the kernel then signals itself).
            self.kernel_spec.interrupt_mode = "message"
        out = await super()._async_pre_start_kernel(**kw)
        out[1].setdefault("env", dict(os.environ)).update(NO_IMPORTS_FROM_WORKDIR)   # sandboxed or not
        uid = self._kernel_uid()
        if self._private and uid is not None:
            # The kernel's own uid must write its folders and read its connection file.
            for path in (self._private, self.connection_file, self._workdir()):
                os.chown(path, uid, uid)
        return out

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        if getattr(self, "_private", None):
            cmd = sandbox_command(cmd, self._workdir(), self._private, self.scratch_size,
                                  self.process_limit, self._kernel_uid())
        if self.niceness and shutil.which("nice"):
            cmd = ["nice", "-n", str(self.niceness), *cmd]
        limits = [f"--as={self.memory_limit}"] if self.memory_limit > 0 else []
        limits += [f"--fsize={self.file_size_limit}"] if self.file_size_limit > 0 else []
        if limits and shutil.which("prlimit"):
            cmd = ["prlimit", *limits, "--", *cmd]
        return cmd

    async def _async_post_start_kernel(self, **kw):
        await super()._async_post_start_kernel(**kw)
        self._watching = threading.Event()
        if self.disk_limit > 0:
            folders = [self._workdir()] + ([self._private] if self._private else [])
            threading.Thread(target=self._watch_disk, args=(folders, self._watching),
                             daemon=True).start()

    def _watch_disk(self, folders: list[str], stop: threading.Event) -> None:
        while not stop.wait(self.disk_poll_seconds):
            used = disk_bytes(*folders)
            if used > self.disk_limit:
                self.limit_reason = (f"the kernel wrote {used / 2**20:.0f} MiB to disk, more than "
                                     f"the grader allows ({self.disk_limit / 2**20:.0f} MiB)")
                self.log.error("Killing the kernel: %s", self.limit_reason)
                self._kill_everything()
                return

    def _kill_everything(self) -> None:
        """SIGKILL the kernel's process group; in the sandbox, bwrap's --die-with-parent and the
        PID namespace take every process in it along."""
        provisioner = self.provisioner
        process = getattr(provisioner, "process", None)
        if process is None:
            return
        try:
            os.killpg(getattr(provisioner, "pgid", None) or process.pid, signal.SIGKILL)
        except OSError:
            process.kill()

    def stop_strays(self) -> int:
        """Kill every process of the kernel's sandbox but the kernel itself; return how many."""
        process = getattr(self.provisioner, "process", None)
        if not self.stop_stray_processes or process is None:
            return 0
        killed = set()
        # Until none is left: a process may fork while the others are killed, and a killed fork of
        # the kernel takes a while to free its memory and die under load.
        deadline = time.monotonic() + self.stray_wait_seconds
        while True:
            tree = process_tree()
            if getattr(self, "_private", None):
                # bwrap -> its init (PID 1 inside) -> the kernel, its oldest child; orphans are
                # re-parented to that init, so they are found too.
                init = min(tree.get(process.pid, []), default=None)
                kernel = min(tree.get(init[1], []), default=None) if init else None
                if kernel is None:
                    break
                strays = [p for p in descendants(tree, init[1]) if p != kernel[1]]
            else:
                strays = descendants(tree, process.pid)
            if not strays or time.monotonic() > deadline:
                break
            for pid in strays:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                except OSError:
                    pass
            time.sleep(0.01)
        return len(killed)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        watching = getattr(self, "_watching", None)
        if watching is not None:
            watching.set()
        await super()._async_cleanup_resources(restart=restart)
        private = getattr(self, "_private", None)
        if private and not restart:
            shutil.rmtree(private, ignore_errors=True)
            if self._kernel_uid() is not None and os.path.isdir(self._workdir()):
                os.chown(self._workdir(), os.getuid(), os.getgid())

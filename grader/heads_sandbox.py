"""The kernel that runs student code while autograding: sandboxed, memory-limited.

`SandboxKernelManager` is jupyter_client's `AsyncKernelManager` with the kernel command wrapped:

    prlimit --as=<memory_limit> -- bwrap <allow-list of read-only binds> --bind <workdir> <workdir>
        --unshare-all --die-with-parent ... -- python -m ipykernel_launcher -f <connection file>

nbgrader's `Execute` uses it through `c.Execute.kernel_manager_class` in nbgrader_config.py, so
`nbgrader autograde` itself (and the course's `grade.py`, which calls it) runs every submission this
way. Inside the sandbox the kernel sees only the system (/usr, a few files of /etc), the Python
installation and its packages, the course package `headlab`, and its own working copy (the
student's folder in autograded/), which is the only writable place besides a private /scratch. No
solutions/, no gradebook, no other student, no network (a new network namespace; the kernel talks
to nbgrader over Unix sockets in a private folder: jupyter_client's `ipc` transport).

`sandbox`: "auto" (bubblewrap when it works here, else a warning and no sandbox), "required" (refuse
to run a kernel without it) or "off". The environment variable HEADS_SANDBOX overrides it.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

from jupyter_client.manager import AsyncKernelManager
from traitlets import CaselessStrEnum, Integer

# What a kernel may read: the system and Python, never the course folder itself.
SYSTEM_PATHS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
                "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
                "/etc/fonts", "/etc/ssl", "/etc/mime.types", "/etc/matplotlibrc"]
ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
            "JPY_SESSION_NAME", "PYDEVD_DISABLE_FILE_VALIDATION")


@functools.lru_cache(maxsize=None)
def bwrap_works() -> bool:
    """True when bubblewrap is installed and can create the namespaces it needs here."""
    exe = shutil.which("bwrap")
    if not exe:
        return False
    probe = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all",
             "--die-with-parent", "--", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
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


def sandbox_command(cmd: list[str], workdir: str, private: str) -> list[str]:
    """`cmd` wrapped in bubblewrap: read-only system and Python, `workdir` and `private` writable."""
    args = ["bwrap", "--unshare-all", "--die-with-parent", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--tmpfs", "/scratch", "--clearenv"]
    for path in SYSTEM_PATHS:
        args += ["--ro-bind-try", path, path]
    for path in python_paths():
        if not path.startswith("/usr/"):
            args += ["--ro-bind", path, path]
    # Only the two binds are writable; the folders bwrap creates to hold them, /tmp and the rest of
    # the root are made read-only, and /scratch (private, discarded) is the kernel's temp and home.
    args += ["--bind", private, private, "--bind", workdir, workdir, "--remount-ro", "/tmp",
             "--remount-ro", "/", "--chdir", workdir]
    env = {k: os.environ[k] for k in ENV_KEEP if k in os.environ}
    env.update(HOME="/scratch", TMPDIR="/scratch", MPLCONFIGDIR="/scratch/matplotlib",
               PYTHONNOUSERSITE="1",
               NBGRADER_EXECUTION=os.environ.get("NBGRADER_EXECUTION", "autograde"))
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    for key, value in sorted(env.items()):
        args += ["--setenv", key, value]
    return args + ["--", *cmd]


class SandboxKernelManager(AsyncKernelManager):
    sandbox = CaselessStrEnum(
        ["auto", "required", "off"], default_value="auto",
        help="Run the kernel in bubblewrap: auto (when it works), required, or off.",
    ).tag(config=True)
    memory_limit = Integer(
        2 * 1024**3, help="Address-space limit of the kernel in bytes (0: none), set with prlimit."
    ).tag(config=True)

    def _use_sandbox(self) -> bool:
        mode = os.environ.get("HEADS_SANDBOX", self.sandbox).lower()
        if mode == "off":
            return False
        if bwrap_works():
            return True
        if mode == "required":
            raise RuntimeError("HEADS sandbox required but bubblewrap (bwrap) does not work here; "
                               "install it (apt-get install bubblewrap) or set HEADS_SANDBOX=off")
        self.log.warning("bubblewrap not available: student code runs WITHOUT a sandbox")
        return False

    async def _async_pre_start_kernel(self, **kw):
        self._private = None
        if self._use_sandbox():
            # Unix sockets in a private folder both sides can see: the sandbox has no network.
            self._private = tempfile.mkdtemp(prefix="heads-kernel-")
            self.transport = "ipc"
            self.ip = os.path.join(self._private, "kernel")
            self.connection_file = os.path.join(self._private, "kernel.json")
            # A SIGINT to the process group would also reach bubblewrap, which dies of it and takes
            # the kernel along: interrupt by message (the kernel then signals itself).
            self.kernel_spec.interrupt_mode = "message"
        return await super()._async_pre_start_kernel(**kw)

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        if getattr(self, "_private", None):
            workdir = os.path.realpath(self._launch_args.get("cwd") or os.getcwd())
            cmd = sandbox_command(cmd, workdir, self._private)
        if self.memory_limit > 0 and shutil.which("prlimit"):
            cmd = ["prlimit", f"--as={self.memory_limit}", "--", *cmd]
        return cmd

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        private = getattr(self, "_private", None)
        if private and not restart:
            shutil.rmtree(private, ignore_errors=True)

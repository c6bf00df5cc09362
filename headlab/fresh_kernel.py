"""A test cell's answers, given by a fresh copy of the kernel side. The grader's test cell (heads_outside.RESPOND)
runs this file as a script (`__main__`), with the globals GRADE_ID, FOLDER (the folder of the cell's inputs) and
HEADLAB (this package's folder, as the grader found it); imported, it does nothing.

The notebook's code runs before the test cell and can replace whatever it reaches in the imported
`headlab.kernel` and `headlab.codec`: red teams 10 to 12 replaced `respond`, `_secret_step` and the codec's
functions through some forty routes to those modules, and each flag closed one route. Here codec.py and
kernel.py are compiled again from their files (read-only under the sandbox) into namespaces of this run's own,
which no name, module or attribute of the notebook's leads to, and the fresh `respond` answers. Whatever the
notebook did to the imported modules changes nothing, and code of the learner's that runs during the cell (a
forward, a hook) finds the imported modules, not these copies.

Two things cannot be made afresh, and are taken from the imported kernel after a check:
- the channel to the grader (`kernel._CHANNEL`), taken when `headlab.setup()` imported the kernel in the locked
  setup cell, before the notebook's code ran. A fresh look must find the same channel now; if it does not, the
  notebook changed the imported one or the IPython session it was taken from, and the cell gives no answers.
- the secret step's draw (`kernel._secret_step`'s `_draw`): it must be the operating system's `urandom`.
"""
import sys


class AnswersRefused(RuntimeError):
    """The notebook changed what the answers leave through: this cell gives none."""


def _compiled(name: str, builtins: dict) -> object:
    """A new module run from `HEADLAB/<name>.py`, as the package would import it, with `builtins` as its builtins."""
    path = f"{HEADLAB}/{name}.py"  # noqa: F821 (the cell's globals)
    module = type(sys)(f"headlab.{name}")
    vars(module).update({"__package__": "headlab", "__file__": path, "__builtins__": builtins})
    with open(path, encoding="utf-8") as source:
        exec(compile(source.read(), path, "exec"), vars(module))
    return module


def _importing(fresh: dict) -> dict:
    """The builtins, with an `__import__` that gives the modules of `fresh` for the package's relative imports
    (kernel.py's `from .codec import ...`) and leaves every other import to the builtin one."""
    builtin_import = __import__

    def imports(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 1 and name in fresh:
            return fresh[name]
        return builtin_import(name, globals, locals, fromlist, level)

    return {**vars(sys.modules["builtins"]), "__import__": imports}


def _same_channel(taken: object, fresh: object) -> bool:
    """Whether the channel `_channel()` gives now is the one the imported kernel took (kernel._channel's tuple)."""
    if taken is None or fresh is None:
        return taken is fresh
    if type(taken) is not tuple or type(fresh) is not tuple or len(taken) != len(fresh):
        return False
    return all(_same_part(a, b) for a, b in zip(taken, fresh))


def _same_part(taken: object, fresh: object) -> bool:
    if taken is fresh:
        return True
    if type(taken) is not type(fresh):
        return False
    if hasattr(type(taken), "digest"):   # the signing HMAC, a copy at each look: the same key gives the same digest
        return taken.copy().digest() == fresh.copy().digest()
    return taken == fresh   # a bound method, made anew at each look


def _os_urandom(draw: object) -> bool:
    """Whether `draw` is the operating system's urandom, a function of C whose name no Python code can set."""
    return (type(draw) is type(len) and draw.__name__ == "urandom"
            and getattr(draw.__self__, "__name__", None) in ("posix", "nt"))


def _fresh_kernel() -> object:
    fresh = {}
    fresh["codec"] = _compiled("codec", _importing(fresh))
    kernel = _compiled("kernel", _importing(fresh))
    imported = sys.modules.get("headlab.kernel")
    if not _same_channel(getattr(imported, "_CHANNEL", None), kernel._CHANNEL):
        raise AnswersRefused("this notebook changed the channel the answers leave through (headlab.kernel._CHANNEL, "
                             "or the IPython session and publisher it was taken from), so this cell gives no answers")
    if not _os_urandom(kernel._secret_step.__kwdefaults__["_draw"]):
        raise AnswersRefused("this notebook replaced os.urandom, which the grader's secret step draws from, so this "
                             "cell gives no answers")
    kernel._CHANNEL = getattr(imported, "_CHANNEL", None)   # the one taken before the notebook's code ran
    return kernel


if __name__ == "__main__":   # run by a test cell; the namespace is the cell's, whose frame called this script's
    _fresh_kernel().respond(GRADE_ID, sys._getframe(0).f_back.f_globals, FOLDER)  # noqa: F821 (the cell's globals)

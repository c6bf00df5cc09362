"""Flags for review: submissions whose code or results look like a forged grade.

Computed on the trusted side from files, never by running student code: the submitted notebook is
parsed with Python's `ast` (after IPython's own `%magic`/`!shell` translation), and the autograded
notebook and the gradebook's scores are compared with the release. A flag is a prompt to look, not
a verdict; `grade.py autograde` prints one `FLAG` line per flagged submission, the CSV export has a
`flags` column. What is flagged:

- code in an answer cell or in any cell the student inserted or changed that
  patches modules (assigns attributes of torch, IPython, headlab, the lesson's `check`, sys,
  builtins, or of the modules the kernel writes its results with: json, os, io, pathlib...; rebinds one of their names; defines `__torch_function__`), touches IPython's execution
  machinery (events, input/AST transformers, showtraceback, custom exceptions), inspects frames
  (`sys._getframe`, `inspect.currentframe/stack`, `tb_frame`, `f_locals`, tracers, `gc`),
  touches `sys.modules`, spawns processes (subprocess, `os.system`, `os.fork`, multiprocessing,
  `!shell`), creates links (`os.symlink`, `os.link`, FIFOs), or runs code from a string
  (`exec`, `eval`, `compile`, `__import__`);
- code in those cells that reaches the grader's channel (headlab.kernel, codec, grading), reaches attributes by
  a computed name (`getattr(f, "__glo" + "bals__")`, `__getattribute__`), patches `random` (the secret step's
  draw), or schedules code to run after its cell (the kernel's event loop, tornado, asyncio, threads);
- beside those lists of dangers, allowlists: an import outside the modules the course's students use, a special
  attribute outside the everyday ones, a class method Python calls behind the code's back, a metaclass, a string
  naming the answer channel, the IPython shell used as an object, a magic outside the everyday ones, private or
  process-wide parts of torch (the code inside `%%time` and the like is read as part of its cell: heads_code);
- an exercise's answer that reaches the course package and calls a method of it, or hands it to other code
  (`padding_mask` as the tokenizer's `pad(...)[1]`, `causal_mask` with `model=decoder` as a default), through any
  binding of the notebook: no solution does, so the package computed the answer;
- a test cell that scored with its answer cell unchanged from the release;
- a test cell that scored without printing its pass lines (`✓ NAME: ...`, one per check it calls).
"""
from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
import re
import string
from pathlib import Path

from heads_code import (CODE_MAGICS, IMPORTED, MAGIC_METHODS, SHELL_METHODS, TIMERS, TreeIndex, bindings, bound_values,
                        call_root, chain_root, dotted, free_names, imports, local_bindings, module_level_stores,
                        names_in, names_of, parse, parses, plain_prefix, resolved, root, shown, too_deep,
                        top_level_bindings)

WATCHED = {"torch", "IPython", "ipykernel", "headlab", "builtins", "__builtins__", "sys", "nbgrader",
           # what the kernel writes its results with (a red team rewrote them through json.dumps, unflagged)
           "json", "os", "io", "pathlib", "pickle", "base64", "codecs", "shutil", "tempfile", "zmq", "jupyter_client",
           # ... and encodes them with (headlab/codec.py, headlab/kernel.py)
           "hashlib", "math", "re", "contextlib", "importlib",
           # what the kernel's secret step draws its sizes from (red team 3 fixed them through random.SystemRandom)
           "random", "secrets"}
SPAWN_MODULES = {"subprocess", "multiprocessing", "pty", "torch.multiprocessing",
                 "concurrent.futures.process", "asyncio.subprocess",
                 "matplotlib.animation"}   # its writers run the program rcParams names (animation.ffmpeg_path)
SPAWN_CALLS = re.compile(r"^(os\.(system|popen|fork|forkpty|exec\w*|spawn\w*|posix_spawn\w*)|"
                         r"pty\.spawn|concurrent\.futures\.ProcessPoolExecutor|"
                         r"asyncio\.create_subprocess_\w+)$")
# Shell commands that only look around, make a folder, or install a package by name (see _benign_command): flagged
# for a look, not held. Any other command or script runs a program no flag reads.
BENIGN_COMMANDS = {"ls", "ll", "pwd", "nvidia-smi", "nproc", "free", "df", "du", "uname", "date", "which", "mkdir",
                   "echo", "head", "tail", "wc", "pip", "conda", "lscpu", "whoami", "hostname"}
SHELL_MAGICS = {"bash", "sh", "script", "system", "sx", "sc", "perl", "ruby", "python", "python2",
                "python3", "pypy", "pip", "conda",
                "cat", "cp", "ldir", "lf", "lk", "ll", "ls", "lx", "mkdir", "mv", "rm", "rmdir"}   # IPython's aliases
FRAME_CALLS = {"sys._getframe", "sys.settrace", "sys.setprofile", "threading.settrace",
               "inspect.currentframe", "inspect.stack", "inspect.trace", "inspect.getouterframes",
               "inspect.getinnerframes", "traceback.walk_stack", "traceback.walk_tb",
               "gc.get_objects", "gc.get_referrers", "gc.get_referents"}
FRAME_ATTRS = {"tb_frame", "f_locals", "f_globals", "f_back", "f_builtins", "gi_frame", "cr_frame",
               "ag_frame", "_getframe", "currentframe"}
# A function's own namespace and code: no answer needs them, and through any function of the course they reach
# its module (the second held-out red team replaced the driver with `respond.__globals__.update(...)`)
FUNCTION_INTERNALS = {"__globals__", "__closure__", "__code__", "__defaults__", "__kwdefaults__", "__builtins__"}
IPYTHON_ATTRS = {"input_transformers_cleanup", "input_transformers_post", "input_transformer_manager",
                 "ast_transformers", "showtraceback", "_showtraceback", "showsyntaxerror",
                 "set_custom_exc", "custom_exceptions", "run_ast_nodes", "run_cell", "run_cell_async",
                 "transform_cell", "displayhook", "display_pub", "excepthook",
                 # the kernel's own, which sys.stdout and sys.stderr hold too (red team 7: sys.stdout.session.send)
                 "session", "iopub_socket", "iopub_thread", "pub_thread", "shell_streams", "comm_manager"}
# a widget's comm holds the kernel, whose `shell` is the IPython shell (red team 12: slider.comm.kernel.shell.ev(...))
WIDGET_TO_KERNEL = {"comm", "shell", "kernel"}
SHELL_ONLY_ATTRS = {"events", "user_ns", "user_global_ns", "ex", "ev", "push", "magics_manager", "kernel"}
LINK_CALLS = {"os.symlink", "os.link", "os.mkfifo", "os.mknod"}
LINK_ATTRS = {"symlink_to", "hardlink_to", "link_to"}
# Builtins that the grader's line in a test cell (heads_outside.RESPOND) or the IPython machinery around it
# could look up: a notebook that defines one at its top level (`def globals(): ...`, `def __import__(...)`)
# shadows the builtin for every later cell. A red team handed the grader another answer that way.
SHADOWED_BUILTINS = {"__import__", "globals", "locals", "get_ipython", "__build_class__"}
# The submodules a patch goes through (`headlab.kernel`, `torch.nn.functional`, `os.path`): a name whose last part
# is one of these is a module, not an object of one (holds_watched).
MODULE_PARTS = {"kernel", "checks", "codec", "grading", "nn", "functional", "path", "core", "interactiveshell",
                "ipkernel", "kernelbase", "autograd", "utils", "data", "modules", "linalg", "special", "fft",
                "random", "init", "parameter", "decoder", "encoder", "parallel", "testing", "backends",
                *(f"ch{i:02d}" for i in range(20)), "engine", "heads", "display"}
# The modules students of this course import (the lessons', numerics, plotting, the standard library's everyday
# tools): any other import is flagged. An allowlist, not a list of dangers: each held-out red team found one more
# module to reach the kernel through (glob.os, posixpath, operator, functools; unittest.mock.patch by a string).
COURSE_IMPORTS = {"__future__", "torch", "numpy", "matplotlib", "headlab", "IPython", "ipywidgets", "tqdm",
                  "pandas", "seaborn", "sklearn", "scipy", "einops", "PIL", "plotly", "transformers",
                  "sentence_transformers", "huggingface_hub", "tokenizers", "safetensors",
                  "math", "cmath", "random", "statistics", "numbers", "decimal", "fractions", "collections",
                  "itertools", "functools", "operator", "dataclasses", "typing", "typing_extensions", "enum", "abc",
                  "copy", "string", "re", "textwrap", "time", "datetime", "json", "csv", "pathlib", "os", "sys", "io",
                  "pprint", "warnings", "heapq", "bisect", "array", "contextlib", "hashlib", "inspect", "gc", "pickle",
                  "base64", "timeit", "unicodedata", "difflib", "platform", "logging", "traceback", "struct",
                  "glob", "tempfile", "types"}   # a watched module inside one (glob.os) is flagged where it is reached
# Special attributes honest code reads or calls (`super().__init__()`, `type(m).__name__`, `torch.__version__`);
# any other (`__globals__`, `__subclasses__`, `__self__`, `__wrapped__`, `__bases__`...) is a way around the flags.
PLAIN_DUNDERS = {"__init__", "__name__", "__qualname__", "__doc__", "__class__", "__version__", "__call__",
                 "__len__", "__repr__", "__str__", "__getitem__", "__setitem__", "__iter__", "__next__", "__contains__",
                 "__eq__",
                 "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__add__", "__mul__", "__matmul__",
                 "__enter__", "__exit__", "__main__", "__future__", "__file__", "__module__",
                 "__all__", "__slots__", "__post_init__", "__bool__", "__neg__", "__sub__", "__truediv__"}
# Methods Python calls behind the code's back, on attribute access, deletion, subclassing, pickling or an
# isinstance check: a class defining one runs code where the grader's reads happen. No answer defines them.
HOOK_METHODS = {"__getattr__", "__getattribute__", "__setattr__", "__delattr__", "__del__", "__init_subclass__",
                "__set_name__", "__get__", "__set__", "__delete__", "__class_getitem__", "__reduce__",
                "__reduce_ex__", "__setstate__", "__instancecheck__", "__subclasscheck__", "__prepare__", "__new__",
                "__array_function__", "__array_ufunc__"}
# Parts of torch that change what every later operation does (an operator's kernel re-registered, C++ compiled
# and loaded, a forward hook on every module, code from a hub): no answer needs them, and through them code that
# looks like an honest head could compute something else while the grader's probe runs.
TORCH_EVERYWHERE = ("torch.fx", "torch.jit", "torch.library", "torch.utils.cpp_extension", "torch.hub", "torch.package",
                    "torch.overrides", "torch.ops", "torch.utils.hooks", "sys.addaudithook", "sys.breakpointhook")
# What imports or calls a module named by a string (logging.config's '()' and 'ext://', ctypes' libraries), or
# decides where imports come from: a module the notebook wrote would run unread
BY_NAME_LOADERS = ("logging.config", "numpy.ctypeslib", "torch.classes.load_library",
                   "transformers.dynamic_module_utils", "sys.path", "sys.meta_path", "sys.path_hooks",
                   "sys.path_importer_cache", "matplotlib.backends.registry", "matplotlib.backends.backend_registry")
GLOBAL_HOOK = re.compile(r"^register_module_\w+$")   # torch.nn.modules.module.register_module_forward_hook, ...
# Strings that name the kernel's side of grading or the channel it answers on: no answer spells them
CHANNEL_WORDS = ("headlab.kernel", "headlab.codec", "headlab.grading", "ipykernel", "jupyter_client", "zmq",
                 "display_pub", "displaypub", "iopub", ".heads_answers", ".heads_grader", "heads.answers",
                 "answers+json", "get_ipython", "display_data")
# Strings that make a library evaluate or import what another string names: `**{"eval_str": True}` for
# inspect.signature, matplotlib's "module://x" backends (import x), `**{"trust_remote_code": True}`
LOADING_WORDS = ("eval_str", "module://", "trust_remote_code")
CODE_FROM_BYTES = {"pickle.loads", "pickle.load", "pickle.Unpickler", "marshal.loads", "marshal.load",
                   # what torch.load(weights_only=True) may call while unpickling
                   "torch.serialization.add_safe_globals", "torch.serialization.safe_globals",
                   "dill.loads", "cloudpickle.loads", "types.CodeType", "types.FunctionType", "types.LambdaType",
                   "pandas.read_pickle", "shelve.open"}   # torch.load and numpy.load: when they unpickle (below)
# What inspect may do in a student's cell: read a signature, a source or a docstring, test a kind. Any other
# function of it hands over the course's objects (getmodule, getmembers, getattr_static, getclosurevars).
INSPECT_READS = {"signature", "getsource", "getsourcelines", "getdoc", "cleandoc", "isclass", "isfunction",
                 "ismethod", "ismodule", "getfullargspec", "Parameter", "Signature", "iscoroutinefunction",
                 "isgenerator", "isgeneratorfunction", "isabstract"}
# What importlib.metadata gives a notebook: a package's version (its entry points load objects by name)
PACKAGE_VERSIONS = {"importlib.metadata", "importlib.metadata.version", "importlib.metadata.PackageNotFoundError",
                    "importlib.metadata.metadata"}
SETTERS = {"setattr", "delattr", "object.__setattr__", "object.__delattr__", "builtins.setattr",
           "builtins.delattr", "type.__setattr__", "operator.setitem", "operator.delitem", "operator.setattr",
           "operator.delattr"}
# Code run later, between cells or after the last one, by the kernel's event loop: a red team's callback answered
# again after its test cell had, before the grader read the answers.
SCHEDULERS = {"io_loop", "add_callback", "call_later", "add_timeout", "PeriodicCallback", "call_soon",
              "call_soon_threadsafe", "call_at", "run_in_executor", "create_task", "ensure_future", "add_done_callback"}
# The modules through which the kernel answers the grader: no answer calls them (a red team's callback called
# respond again after its test cell, with another answer)
# ... and the checks' modules that hold the kernel's drivers and the codec (red team 14 ran `headlab.checks.heads
# .drive_head` on a hidden right head, reached as attributes of `import headlab`)
GRADER_CHANNEL = {"headlab.kernel", "headlab.codec", "headlab.grading", "headlab.checks.heads", "headlab.checks.engine"}


def _top_level_names(*modules: str) -> frozenset[str]:
    """The names the grader's modules of headlab define at their top level, read from their source."""
    folder = Path(importlib.util.find_spec("headlab").origin).parent
    trees = [ast.parse((folder / f"{m}.py").read_text(encoding="utf-8")) for m in modules]
    return frozenset(n.name if not isinstance(n, ast.Assign) else t.id for tree in trees for n in tree.body
                     for t in (n.targets if isinstance(n, ast.Assign) else [n])
                     if isinstance(n, (ast.FunctionDef, ast.ClassDef)) or isinstance(t, ast.Name))


# What respond, its drivers and its codec are called: a store of one of these names on an object the notebook did not
# make replaces a part of the kernel's side (the module reached through a library that imports a spelled name)
KERNEL_SIDE = _top_level_names("kernel", "codec")
# ...of which these are everyday words (`opts.load = True`, `other.at = self.at`): held only when a function is stored
KERNEL_SIDE_WORDS = {"load", "at", "describe", "encode", "decode", "digest", "detached"}
# What reaches an attribute by a name the code computes ("__glo" + "bals__"), which no answer needs
BY_COMPUTED_NAME = {"getattr", "setattr", "delattr", "hasattr", "builtins.getattr"}
BY_NAME_GETTERS = {"operator.attrgetter", "operator.methodcaller"}
# What makes a function of the notebook's into another callable, still its code (a store of one is judged as of a def)
FUNCTION_WRAPPERS = {"functools.partial", "functools.partialmethod", "types.MethodType", "functools.wraps"}
# The magics honest notebooks use; any other (`%run`, `%load_ext`, `%config`, `%debug` with its statement...) runs
# code the grader cannot read or changes IPython, and is flagged. The code of CODE_MAGICS is read as part of its cell
# (heads_code.parse).
COURSE_MAGICS = CODE_MAGICS | {"matplotlib", "pip", "conda", "writefile", "file", "html", "markdown", "latex",
                               "javascript", "js", "svg", "pwd", "cd", "env", "who", "whos", "who_ls",
                               "precision", "history", "lsmagic", "magic", "pinfo", "pinfo2", "psearch", "page",
                               "autoreload", "pdb", "xmode", "reset", "reset_selective"}
# Module names a notebook never rebinds (`import numpy as torch`, `headlab = ...`), besides those the release binds;
# other watched names are free for a variable (`io`, `random`, `json`): the grader's line reads none of them.
REBOUND = {"torch", "headlab", "IPython", "builtins", "__builtins__", "sys", "os"}
# What IPython puts in a notebook's namespace, beside the `_`-names: the shell, its exit objects, the cells' history
IPYTHON_NAMES = {"get_ipython", "exit", "quit", "In", "Out", "display"}
# Submodules that share a watched module's name (reading them is not reaching that module)
OWN_SUBMODULES = {"torch.random", "numpy.random", "pandas.io", "torch.serialization.pickle"}
# How a notebook gets the IPython shell, and the one use a student's cell makes of it: the calls IPython's own
# syntax (`%matplotlib`, `!ls`, `%%time`) turns into. The shell used as an object reaches the kernel, its
# session and the socket the answers leave on (a red team rewrote them in session.send).
SHELL_GETTERS = {"get_ipython", "IPython.get_ipython", "IPython.core.getipython.get_ipython"}
MAGIC_CALLS = {*MAGIC_METHODS, "system", "getoutput"}
IPYTHON_FOR_STUDENTS = ("IPython.display", "IPython.core.display", "IPython.get_ipython",
                        "IPython.core.getipython.get_ipython")
# Builtins that only look at what they are given: a module printed or listed is not a module handed on
LOOKS_AT = {"print", "dir", "repr", "str", "help", "type", "id", "isinstance", "callable", "len", "hash"}
NAMESPACES = {"vars", "globals", "locals", "builtins.vars", "builtins.globals", "builtins.locals"}
CODE_FROM_STRING = {"exec", "eval", "compile", "__import__", "importlib.import_module", "typing.get_type_hints",
                    "importlib.metadata.EntryPoint", "importlib.metadata.entry_points",
                    "breakpoint",   # calls sys.breakpointhook, which PYTHONBREAKPOINT names (import_module, say)
                    "inspect.get_annotations", "typing.ForwardRef", "typing.evaluate_forward_ref",
                    *(f"typing_extensions.{name}" for name in ("get_type_hints", "ForwardRef", "evaluate_forward_ref",
                                                               "get_annotations", "eval_type")),
                    "importlib.reload", "builtins.exec", "builtins.eval"}


# --- parsing --------------------------------------------------------------------------------------


def module_aliases(tree: ast.AST, aliases: dict[str, str]) -> dict[str, str]:
    """`aliases` and the names `tree` gives a watched module or object, by any binding: m = headlab.checks.ch03,
    and (a red team's) `for m in [headlab.kernel]`, `m, = [json]`, `(m := json)`, `with json as m`, a
    comprehension's variable, `def f(m=json)`, `d = {"a": kernel}`, a class attribute `class A: m = torch`
    (as "A.m"). A name bound to anything that holds a watched module is taken for it."""
    aliases = dict(aliases)
    for _ in range(2):   # a name bound from another alias, in any order
        for node in ast.walk(tree):
            for target, value in bindings(node):
                held = holds_watched(value, aliases)
                if held:
                    aliases.update({name: held for name in names_in(target, attributes=True)})
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.Assign) and holds_watched(item.value, aliases):
                        aliases.update({f"{node.name}.{n}": holds_watched(item.value, aliases)
                                        for t in item.targets for n in names_in(t)})
    return aliases


def holds_watched(expr: ast.AST, aliases: dict[str, str]) -> str | None:
    """The watched module `expr` is or holds as a value (in a list, a dict, a call's arguments...), not one
    reached through: `torch.zeros(3)` holds none, `[json]` and `f(torch)` hold one."""
    parents = {id(c): n for n in ast.walk(expr) for c in ast.iter_child_nodes(n)}
    for node in ast.walk(expr):
        if isinstance(node, (ast.Name, ast.Attribute)):
            parent = parents.get(id(node))
            if isinstance(parent, ast.Attribute) or (isinstance(parent, ast.Call) and (
                    parent.func is node or dotted(parent.func, aliases) in LOOKS_AT or _names_an_object(parent))):
                continue   # reached through, called, looked at or named: `torch.zeros(3)`, `dir(F)`, getattr(F, "relu")
            name = resolved(node, aliases)
            if root(name) in WATCHED and not _is_object(name) or _through_another_module(name):
                return name   # json, headlab.kernel, or os reached through another module (glob.os, posixpath.os)
    return None


def _names_an_object(call: ast.Call) -> bool:
    """Whether `call` is getattr(module, "name") for a name that is not a module's (MODULE_PARTS): it gives an
    object of the module (`getattr(F, "relu")`), as `F.relu` would."""
    return isinstance(call.func, ast.Name) and call.func.id == "getattr" and len(call.args) > 1 \
        and isinstance(call.args[1], ast.Constant) and call.args[1].value not in MODULE_PARTS


def _shell_command(call: ast.Call) -> str:
    """The command line a shell escape or shell magic runs: `ls -l` of `!ls -l`, `pip install x` of `%pip install x`;
    a cell magic (`%%bash`) gives its whole script."""
    args = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else "$?" for a in call.args]
    if call.func.attr in SHELL_METHODS:
        return args[0] if args else "$?"
    if call.func.attr == "run_line_magic":   # %system ls runs `ls`; %pip install x, `pip install x`
        return " ".join(args[1:] if args[:1] in (["system"], ["sx"], ["sc"]) else args)
    return args[2] if args[:1] in (["bash"], ["sh"]) and len(args) > 2 else "\n".join(args)   # %%bash: its script


def _benign_command(command: str) -> bool:
    """Whether a shell command only looks around or installs a package by name (BENIGN_COMMANDS, no shell syntax):
    any other runs a program the flags cannot read, and through it the kernel's connection (a red team's %%bash ran
    Python that reached the kernel's session)."""
    lines = [line for line in command.strip().splitlines() if line.strip()]
    if len(lines) > 1:   # a script: each of its lines
        return all(_benign_command(line) for line in lines)
    command = command.strip()
    words = command.split()
    if not words or re.search(r"[|;&$<>`\n\\]", command) or words[0] not in BENIGN_COMMANDS:
        return False
    # a package by its name, never a file: pip builds an archive in the notebook's folder by running its code (red
    # team 13's `%pip install evil-1.0.tar.gz` read the kernel's key from its memory)
    return words[0] not in ("pip", "conda") or (len(words) > 1 and words[1] in ("install", "list", "show") and all(
        re.fullmatch(r"-q|--quiet|-U|--upgrade|[A-Za-z][\w.\-]*(\[[\w,]+\])?([=<>~!]=?[\w.*]+)?", w)
        and not re.search(r"\.(tar(\.\w+)?|tgz|zip|whl|egg|py)$", w, re.IGNORECASE) for w in words[2:]))


def _string_name(node: ast.AST, tree: ast.Module) -> bool:
    """Whether `node` is a name that can hold a string (a function's name never does)."""
    return isinstance(node, ast.Name) and not any(
        isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == node.id for n in ast.walk(tree))


def _constant(node: ast.AST, value) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def _spellings(node: ast.AST, tree: ast.Module, most: int = 64) -> set[str] | None:
    """Every text a string expression can spell: a constant, a name bound only to strings (`names_of`), and `+` or an
    f-string of those ("application/vnd." + H + ".answers", with H = "heads"); None if a part is unknown (or the
    texts are too many to list)."""
    if isinstance(node, ast.JoinedStr):
        parts = [v if isinstance(v, ast.Constant) else v.value if isinstance(v, ast.FormattedValue)
                 and v.conversion == -1 and v.format_spec is None else None for v in node.values]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts = [node.left, node.right]
    else:
        return names_of(node, tree) if isinstance(node, (ast.Constant, ast.Name)) else None
    texts = {""}
    for part in parts:
        found = _spellings(part, tree, most) if part is not None else None
        if found is None or len(texts) * len(found) > most:
            return None
        texts = {a + b for a in texts for b in found}
    return texts


def _compacted(text: str) -> list[str]:
    """`text` with the spaces around each dot or plus left out, as Python reads "headlab . kernel" in a string it
    evaluates; across lines only if the text is Python (not in prose: "... of heads.\n  answers: ...")."""
    found = [re.sub(r"[ \t]*([.+])[ \t]*", r"\1", text)]
    return found + [re.sub(r"\s*([.+])\s*", r"\1", text)] if parses(text, "eval") else found


def _format_path_parts(text: str) -> list[str]:
    """The attribute names and keys of the `{fields}` in `text` (`{0.session}`: ["0", "session"]), as str.format and
    string.Formatter.get_field follow them; none if `text` is not a format string."""
    if "{" not in text:
        return []
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(text) if name]
    except ValueError:
        return []
    return [part for name in names for part in re.split(r"[.\[\]]", name) if part]


def _everyday_magic(call: ast.Call) -> bool:
    """Whether a magic call is one honest notebooks make: COURSE_MAGICS, `%load_ext`/`%reload_ext autoreload`, and
    `%config` of the inline backend's figures (any other `%config` sets IPython's own machinery, and evaluates its
    value as Python)."""
    name, args = call.args[0].value, [a.value for a in call.args[1:] if isinstance(a, ast.Constant)]
    line = args[0].strip() if args else ""
    if name == "matplotlib":   # a backend by name; `module://x` imports x
        return re.fullmatch(r"(-[-\w]+\s*)*\w*", line) is not None
    return name in COURSE_MAGICS or (name in ("load_ext", "reload_ext") and line == "autoreload") or (
        name == "config" and re.fullmatch(r"InlineBackend\.\w+\s*=\s*['\"][\w-]+['\"]", line) is not None)


class _Owners(TreeIndex):
    """What `_own_object` and `_own_target` look up in a tree (asked at each private attribute set: a class of 1,500
    `self._x = ...` lines walked the notebook 1,500 times): the classes it defines, the names its functions take as
    parameters, and what rebinds each name (an attribute or item set on it does not)."""

    def __init__(self, tree: ast.Module):
        self.classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        self.functions = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        # {class: the methods that take `self`}, with a dataclass's generated __init__ (which sets its fields on self)
        self.methods = {c.name: {f.name for f in c.body if isinstance(f, ast.FunctionDef) and f.args.args
                                 and f.args.args[0].arg == "self"} | {"__init__"} for c in ast.walk(tree)
                        if isinstance(c, ast.ClassDef)}
        self.params = {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
        # `self` and `cls` of a plain function are whatever it is given (red team 13: `def install(cls): cls.x = f`
        # then `install(json.JSONEncoder)`): only a method's are the notebook's own object
        methods = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body}
        self.plain_params = {a.arg for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                             ast.Lambda)) and id(f) not in methods
                             for a in ast.walk(f.args) if isinstance(a, ast.arg)}
        self.rebound: dict[str, list] = {}
        for node in ast.walk(tree):
            for t, v in bindings(node):
                if not isinstance(t, (ast.Attribute, ast.Subscript)):
                    for name in set(names_in(t)):
                        self.rebound.setdefault(name, []).append((t, v))


def _computed_annotation(note: ast.AST, tree: ast.Module) -> bool:
    """Whether an annotation is text computed at run time, or held in a name bound to code: typing.get_type_hints and
    functools.singledispatch evaluate a string annotation, and the flags read only one written as a constant. Types
    (`int | None`, `Tensor`, `Annotated[int, range(1, 65)]`: a call of constants is metadata) are not."""
    if isinstance(note, ast.Name):
        return any(not re.fullmatch(r"[\w.\[\], |]*", text) for text in names_of(note, tree) or ())
    for n in ast.walk(note):
        if isinstance(n, (ast.JoinedStr, ast.NamedExpr, ast.Lambda)) or (
                isinstance(n, ast.BinOp) and not isinstance(n.op, ast.BitOr)):
            return True
        if isinstance(n, ast.Call) and not all(isinstance(a, ast.Constant)
                                               for a in [*n.args, *(k.value for k in n.keywords)]):
            return True
    return False


def _a_function(value: ast.AST | None, tree: ast.Module) -> bool:
    """Whether `value` may be a function: a lambda, or a name the notebook binds to a def or to anything it cannot
    follow (a value that is plainly data, `True` or `self.at`, is not)."""
    if isinstance(value, ast.Lambda):
        return True
    if not isinstance(value, ast.Name):
        return False
    return value.id in _Owners.of(tree).functions or any(not isinstance(v, (ast.Constant, ast.Attribute, ast.List,
                                                                          ast.Tuple, ast.Dict, ast.Subscript))
                                                         for v in bound_values(value.id, tree) or [None])


def _notebook_function(value: ast.AST | None, tree: ast.Module, aliases: dict[str, str]) -> bool:
    """Whether `value` is plainly a function the notebook wrote: a lambda, the name of its def, or one wrapped
    (functools.partial, types.MethodType); not a layer or any other object (`model.classifier = head`)."""
    if isinstance(value, ast.Lambda):
        return True
    if isinstance(value, ast.Call):
        return dotted(value.func, aliases) in FUNCTION_WRAPPERS
    return isinstance(value, ast.Name) and value.id in _Owners.of(tree).functions


def _a_class_of_another(target: ast.AST, tree: ast.Module, aliases: dict[str, str]) -> str | None:
    """What `target` names, when it is a name bound to a class or object of an imported module (`Enc =
    json.JSONEncoder`) or to the type of an object (`Tensor = type(torch.zeros(1))`): a store on it patches that
    class for every object of it (red team 13 rewrote the answers in JSONEncoder.iterencode and Tensor.numpy)."""
    if not isinstance(target, ast.Name):
        return None
    for value in bound_values(target.id, tree) or []:
        if isinstance(value, ast.Call) and dotted(value.func, aliases) == "type" and value.args and not (
                isinstance(value.args[0], ast.Name) and value.args[0].id in ("self", "cls")):
            return f"type({shown(value.args[0])})"
        name = resolved(value, aliases) if isinstance(value, (ast.Name, ast.Attribute)) else None
        if name and "." in name and root(name) in {root(a) for a in aliases.values()}:
            return name
    return None


def _patches_another(target: ast.AST, value: ast.AST | None, tree: ast.Module, aliases: dict[str, str]) -> str:
    """Why setting an attribute of `target` (not the notebook's own) to `value` patches code that is not the
    notebook's: `target` is a class of another module, or `value` a function the notebook wrote; "" otherwise."""
    of = _a_class_of_another(target, tree, aliases)
    if of:
        return f"a class or object of another module ({of})"
    return "a function of the notebook's put on an object it did not make" \
        if _notebook_function(value, tree, aliases) else ""


def _membership(node: ast.AST, parents: dict) -> bool:
    """Whether `node` is only asked whether it holds a key: `'google.colab' in sys.modules`, the lessons' own setup."""
    parent = parents.get(id(node))
    return isinstance(parent, ast.Compare) and node in parent.comparators and all(
        isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)


def _own_object(target: ast.AST, tree: ast.Module) -> bool:
    """Whether `target` is the student's own object: `self`/`cls` of a method, or a name bound only to instances of
    classes the notebook defines (`box = Box()`). A name bound to anything else (`out = sys.stdout`) may hold the
    kernel's."""
    if not isinstance(target, ast.Name):
        return False
    owners = _Owners.of(tree)   # a class name the notebook also binds to something else may be anything
    if target.id in ("self", "cls"):
        return target.id not in owners.plain_params
    values = bound_values(target.id, tree)
    return bool(values) and all(isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in owners.classes
                                and not owners.rebound.get(v.func.id) for v in values)


def _own_target(target: ast.AST, tree: ast.Module, aliases: dict[str, str], made_by: str | None = None) -> bool:
    """Whether attributes set on `target` are the student's own: `_own_object`, a class the notebook defines and binds
    no other way (`Run._count += 1`), or the class of self (`type(self).runs += 1`). `made_by`: classes of that module
    make the student's own objects too (`m = torch.nn.Linear(2, 3)`)."""
    if isinstance(target, ast.Call) and dotted(target.func, aliases) == "type" and len(target.args) == 1:
        return isinstance(target.args[0], ast.Name) and target.args[0].id in ("self", "cls")
    owners = _Owners.of(tree)
    if not isinstance(target, ast.Name) or target.id in aliases or target.id in owners.params:
        return _own_object(target, tree)
    rebound = owners.rebound.get(target.id, [])
    if target.id in owners.classes:
        return not rebound
    made = lambda call: isinstance(call.func, ast.Name) and call.func.id in owners.classes \
        and call.func.id not in aliases and not owners.rebound.get(call.func.id) or made_by is not None and (
            resolved(call.func, aliases) or "").startswith(made_by) and _is_object(resolved(call.func, aliases))
    return bool(rebound) and all(isinstance(t, ast.Name) and isinstance(v, ast.Call) and made(v) for t, v in rebound)


def _namespace_read_plainly(call: ast.Call, parent: ast.AST | None, tree: ast.Module, aliases: dict[str, str]) -> bool:
    """Whether `globals()` (or locals(), vars()) is only looked at (`print(globals())`) or read by names the notebook
    spells that are its own (`globals()[name]` over `['padding_mask', 'causal_mask']`), not IPython's
    (`get_ipython`, `exit`, `In`, `_oh`) nor special."""
    if isinstance(parent, ast.Call) and dotted(parent.func, aliases) in LOOKS_AT or isinstance(parent, ast.Compare):
        return True   # print(globals()), 'cache' in globals()
    if isinstance(parent, ast.keyword) and parent.arg == "globals":
        return True   # timeit.timeit("causal_mask(64)", globals=globals()): the string is read as code
    if not (isinstance(parent, ast.Subscript) and parent.value is call):
        return False
    names = names_of(parent.slice, tree)
    return names is not None and not any(n.startswith("_") or n in IPYTHON_NAMES | IPYTHON_ATTRS | SHELL_ONLY_ATTRS
                                         for n in names)


def _module_inside(name: str) -> bool:
    """Whether a dotted name from an imported module reaches a watched module held inside it (`torch.sys`,
    `IPython.core.display.os`, `glob.os`), not one of the module's own submodules (`torch.random`)."""
    parts = name.split(".")
    return any(part in WATCHED and ".".join(parts[:i + 1]) not in OWN_SUBMODULES
               for i, part in enumerate(parts) if i)


def _through_another_module(name: str | None) -> bool:
    """Whether a dotted name reaches a watched module through a module that is not watched: glob.os, posixpath.os."""
    return bool(name) and root(name) not in WATCHED and any(part in WATCHED for part in name.split(".")[1:])


def _is_object(name: str) -> bool:
    """Whether a dotted name names an object of a module (a class, a dtype, a function: `torch.Tensor`,
    `torch.float32`, `torch.tanh` passed as a value), not a module: a module path is lowercase and one of the
    packages' folders, which is all a patch needs to be flagged on."""
    parts = name.split(".")
    return len(parts) > 1 and parts[-1] not in MODULE_PARTS


def _through_expression(node: ast.AST) -> bool:
    """Whether an object patched is reached through an expression rather than a plain name (type(t).__eq__,
    getattr(torch, "nn").x, (j := json).x, globals()["torch"].x), or is a dunder or reached through one
    (T.__eq__ with T = type(t), print.__self__.open, f.__globals__["torch"].x)."""
    return not isinstance(chain_root(node), ast.Name) or any(
        isinstance(a, ast.Attribute) and a.attr.startswith("__") for a in ast.walk(node))


# --- code flags -----------------------------------------------------------------------------------
def cell_flags(tree: ast.Module, aliases: dict[str, str], watched_names: dict[str, str],
               own_functions: frozenset[str] = frozenset(), notebook: ast.Module | None = None) -> list[str]:
    """What one parsed cell does that a correct answer never needs. `own_functions`: the builtins' names the
    student's cells define as functions of their own (`def eval(mask)`), whose calls are theirs; `notebook`: all
    the student's cells as one module, where the names a getattr can read are looked up."""
    found = []
    shells = {f"{getter}()" for getter in SHELL_GETTERS}
    own = imports(tree)
    aliases = {**aliases, **own}
    for node in ast.walk(tree):  # names bound to the shell: ip = get_ipython()
        if isinstance(node, ast.Assign) and dotted(node.value, aliases) in shells:
            shells |= {t.id for t in node.targets if isinstance(t, ast.Name)}

    def is_shell(expr):
        return dotted(expr, aliases) in shells or (isinstance(expr, ast.Name) and expr.id in shells)

    aliases = module_aliases(tree, aliases)

    def watched(expr) -> str | None:
        name = resolved(expr, aliases)
        if isinstance(expr, ast.Call) and dotted(expr.func, aliases) in ("vars", "getattr") \
                and expr.args:
            name = resolved(expr.args[0], aliases)
        if name is None and isinstance(expr, (ast.Subscript, ast.Attribute)):   # d["a"].x, with d = {"a": json}
            base = chain_root(expr)
            name = resolved(base, aliases) if isinstance(base, ast.Name) else None
        if _through_another_module(name):
            return name   # glob.os.urandom = ...: os reached through the module glob
        return name if root(name) in WATCHED else None

    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}

    for node in ast.walk(tree):
        # patching modules: torch.equal = ..., check.x = ..., setattr(torch, ...), vars(sys)[...] = ...
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            for part in ast.walk(t):
                if isinstance(part, (ast.Attribute, ast.Subscript)) and isinstance(part.ctx, (ast.Store, ast.Del)):
                    base = watched(part.value)
                    if base == "os.environ" and isinstance(part, ast.Subscript) or (
                            (base or "").startswith("torch.backends") and isinstance(getattr(node, "value", None),
                                                                                     ast.Constant)):
                        continue   # os.environ["CUDA_VISIBLE_DEVICES"] = "", cudnn.deterministic = True: settings
                    if base:
                        found.append(f"patches a module: assigns {base}.{getattr(part, 'attr', '[...]')}")
                    elif isinstance(part, ast.Attribute) and _through_expression(part) and not _own_target(
                            part.value, notebook or tree, aliases):
                        found.append(f"patches an object: assigns an attribute of {shown(part.value)}")
                    elif isinstance(part, ast.Attribute) and part.attr in KERNEL_SIDE and not _own_target(
                            part.value, notebook or tree, aliases) and (part.attr not in KERNEL_SIDE_WORDS
                                                                        or _a_function(getattr(node, "value", None),
                                                                                       notebook or tree)):
                        # K.respond = ..., with K the module a library imported by a name the notebook spelled
                        found.append(f"patches an object: assigns {shown(part)}, a name of the grader's kernel side")
                    elif isinstance(part, ast.Attribute) and part.attr.startswith("_") and not _own_target(
                            part.value, notebook or tree, aliases):
                        # K._secret_step = ..., with K a module that inspect.getmodule handed over
                        found.append(f"patches an object: assigns a private attribute {shown(part)}")
                    elif isinstance(part, ast.Attribute) and not _own_target(part.value, notebook or tree, aliases) \
                            and (why := _patches_another(part.value, getattr(node, "value", None), notebook or tree,
                                                         aliases)):
                        found.append(f"patches an object: assigns {shown(part)}, {why}")
                    elif isinstance(part, ast.Subscript) and isinstance(part.value, ast.Call) and \
                            dotted(part.value.func, aliases) in ("globals", "vars", "locals"):
                        found.append("patches a module: assigns into globals()")
        if isinstance(node, ast.Call):
            func = dotted(node.func, aliases)
            if func in SETTERS and node.args:
                base = watched(node.args[0])
                if base:
                    found.append(f"patches a module: {func}({base}, ...)")
                elif _through_expression(node.args[0]):
                    found.append(f"patches an object: {func}({shown(node.args[0])}, ...)")
                elif len(node.args) > 2 and not _own_target(node.args[0], notebook or tree, aliases) and (
                        why := _patches_another(node.args[0], node.args[2], notebook or tree, aliases)):
                    found.append(f"patches an object: {func}({shown(node.args[0])}, ...), {why}")
            owners = _Owners.of(notebook or tree)
            if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.args and \
                    node.func.attr in owners.methods.get(node.func.value.id, ()) and not _own_target(
                    node.args[0], notebook or tree, aliases):
                # Box.__init__(K, respond2): the method's `self.respond = ...` sets it on an object not the notebook's
                found.append(f"patches an object: calls {shown(node.func)} on {shown(node.args[0])}")
            if func == "functools.update_wrapper" and not (node.args and isinstance(node.args[0], ast.Name) and (
                    node.args[0].id in owners.functions)):
                # update_wrapper(K, src) copies src's names into K.__dict__: only the notebook's own function takes them
                found.append(f"patches an object: functools.update_wrapper({shown(node.args[0]) if node.args else ''})")
            if func in BY_COMPUTED_NAME | BY_NAME_GETTERS:
                found += _by_name_flags(func, node, notebook or tree, aliases, watched, is_shell)
            if func == "vars" and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in aliases:
                found.append(f"reads a module's namespace: vars({node.args[0].id})")
            if func in ("globals", "locals", "vars") and not node.args and not _namespace_read_plainly(
                    node, parents.get(id(node)), notebook or tree, aliases):
                # globals()["get_" + "ipython"]() is the shell, by a name no rule reads
                found.append(f"reads the notebook's namespace: {func}()")
            elif func == "vars" and node.args and not watched(node.args[0]) and not _namespace_read_plainly(
                    node, parents.get(id(node)), notebook or tree, aliases) and not (
                    shown(node.args[0]) not in ("self", "cls")   # a plain function's `self` can be anything
                    and _own_target(node.args[0], notebook or tree, aliases, made_by="torch.nn.")):
                # vars(sys.stdout)["session"]: an attribute by a name no rule reads (red team 8)
                found.append(f"reads an object's namespace: vars({shown(node.args[0])})")
            if any(k.arg is None and isinstance(k.value, ast.Dict) and not all(
                    isinstance(key, ast.Constant) for key in k.value.keys) for k in node.keywords):
                found.append(f"passes keywords by names the code computes: {func}(**{{...}})")   # "eval" + chr(95)
            if any(k.arg == "eval_str" and not _constant(k.value, False) for k in node.keywords):
                found.append(f"runs code from a string: {func}(eval_str=...)")   # inspect.signature evaluates notes
            if any(k.arg == "trust_remote_code" and not _constant(k.value, False) for k in node.keywords):
                found.append(f"runs code from a model's folder: {func}(trust_remote_code=...)")   # its .py files
            unsafe_load = (func == "torch.load" and any(k.arg == "weights_only" and not _constant(k.value, True)
                                                         for k in node.keywords)) or (
                func in ("numpy.load", "numpy.lib.npyio.load") and any(   # unpickles: red team 7's np.load
                    k.arg == "allow_pickle" and not _constant(k.value, False) for k in node.keywords))
            if func in TIMERS and any(not isinstance(a, (ast.Lambda, ast.Name, ast.Constant))
                                      or _string_name(a, notebook or tree)
                                      for a in [*node.args[:2], *(k.value for k in node.keywords
                                                                  if k.arg in ("stmt", "setup"))]):
                found.append(f"runs code from a string: {func}()")   # timeit.timeit("exec(note)", ...)
            if func and root(func) == "inspect" and func.split(".")[-1] not in INSPECT_READS:
                found.append(f"inspects the course's objects: {func}()")   # inspect.getmodule(f) is f's module
            if func in CODE_FROM_BYTES or (func or "").rstrip("()") in CODE_FROM_BYTES or unsafe_load:
                found.append(f"runs code from bytes: {func}()")
            if func == "vars" and node.args and watched(node.args[0]):
                found.append(f"patches a module: touches vars({watched(node.args[0])})")
            if func in CODE_FROM_STRING and func not in own_functions and not (
                    func == "breakpoint" and not node.args and not node.keywords):   # a plain pause for the debugger
                found.append(f"runs code from a string: {func}()")
            if func and SPAWN_CALLS.match(func.rstrip("()")):
                found.append(f"spawns processes: {func}()")
            if func in LINK_CALLS:
                found.append(f"creates links: {func}()")
            if isinstance(node.func, ast.Attribute) and is_shell(node.func.value):
                magic = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else ""
                if node.func.attr in SHELL_METHODS or (
                        node.func.attr in MAGIC_METHODS and magic in SHELL_MAGICS):
                    command = _shell_command(node)
                    found.append(f"spawns processes: a shell command ({command})" if _benign_command(command) else
                                 "runs a program the grader cannot read: " + (
                                     f"%{magic}" if node.func.attr.startswith("run_") else
                                     f"!{(command.split() or ['?'])[0]} ..."))
                elif node.func.attr in MAGIC_METHODS and not _everyday_magic(node):
                    found.append(f"runs a magic the course does not use: %{magic}")
            if isinstance(node.func, ast.Name) and node.func.id == "heads_unreadable_magic":
                found.append("runs code in a magic that is not Python the grader can read")
        if isinstance(node, ast.MatchClass):
            for attr in node.kwd_attrs:   # `case object(__self__=b)` reads print.__self__, the builtins module
                if attr.startswith("_") or attr in FRAME_ATTRS | FUNCTION_INTERNALS | \
                        IPYTHON_ATTRS | SHELL_ONLY_ATTRS | WIDGET_TO_KERNEL:
                    found.append(f"reaches an attribute through a match pattern: {attr}")
        if isinstance(node, (ast.Attribute, ast.Name)):
            name = dotted(node, aliases) or ""
            attr = node.attr if isinstance(node, ast.Attribute) else node.id
            if name.rstrip("()") in FRAME_CALLS or (isinstance(node, ast.Attribute) and attr in FRAME_ATTRS):
                found.append(f"inspects frames: {attr}")
            if name.rstrip("()") in GRADER_CHANNEL or name.startswith(tuple(f"{m}." for m in GRADER_CHANNEL)):
                found.append(f"reaches the grader's channel: {name.rstrip('()')}")
            full = (resolved(node, aliases) or "").rstrip("()")
            if not isinstance(parents.get(id(node)), ast.Attribute):   # a chain once, by its whole name
                first = chain_root(node)
                imported = isinstance(first, ast.Name) and first.id in aliases   # sklearn.utils._joblib.load
                if (root(full) in WATCHED or imported) and any(p.startswith("_") and not p.startswith("__")
                                                               for p in full.split(".")[1:]):
                    found.append(f"reaches a private part of a module: {full}")
                if _everywhere(full or attr):
                    found.append(f"changes what every later operation does: {full or attr}")
                if (full or "").startswith(BY_NAME_LOADERS) and not _looked_at(node, parents, aliases):
                    found.append(f"imports by a name or path the code gives: {full}")
                called = isinstance(parents.get(id(node)), ast.Call) and parents[id(node)].func is node
                if isinstance(first, ast.Name) and first.id in aliases and _module_inside(
                        full.rsplit(".", 1)[0] if called else full):   # random.random() is a function
                    found.append(f"reaches a module through another: {full}")   # torch.sys, json.codecs
            if isinstance(node, ast.Name) and node.id in ("exit", "quit") and isinstance(parents.get(id(node)),
                                                                            ast.Attribute):
                found.append(f"reaches the IPython shell: {node.id}.{parents[id(node)].attr}")   # exit._ip is the shell
            if full in SHELL_GETTERS and not _runs_a_magic(node, parents):
                found.append(f"reaches the IPython shell: {full}() used as an object")
            elif root(full) == "IPython" and "." in full and not full.startswith(IPYTHON_FOR_STUDENTS) and \
                    not isinstance(parents.get(id(node)), ast.Attribute):
                found.append(f"reaches IPython's machinery: {full}")
            if (name == "sys.modules" or name.startswith("sys.modules.")) and not _membership(node, parents):
                found.append("touches sys.modules")
            if isinstance(node, ast.Attribute) and (attr in IPYTHON_ATTRS or (
                    attr in SHELL_ONLY_ATTRS and is_shell(node.value))):
                found.append(f"touches IPython's execution machinery: {attr}")
            if isinstance(node, ast.Attribute) and attr in WIDGET_TO_KERNEL and not _own_target(
                    node.value, notebook or tree, aliases):
                found.append(f"reaches the kernel through an object: {shown(node)}")
            if isinstance(node, ast.Attribute) and attr in LINK_ATTRS:
                found.append(f"creates links: {attr}()")
            if isinstance(node, ast.Attribute) and attr in ("get_field", "get_value") or full == "string.Formatter":
                found.append(f"reaches an object by a path in a string: {full or attr}")   # Formatter().get_field
            if isinstance(node, ast.Attribute) and attr == "__getattribute__":
                found.append("reaches an attribute by a computed name: __getattribute__")
            if attr in SCHEDULERS:
                found.append(f"schedules code to run after its cell: {attr}")
            if isinstance(node, ast.Attribute) and attr in FUNCTION_INTERNALS:
                found.append(f"reaches into a function's internals: {attr}")
            if isinstance(node, ast.Attribute) and attr == "__dict__" and isinstance(node.value, ast.Name) \
                    and node.value.id in aliases and not watched(node.value):
                found.append(f"reads a module's namespace: {node.value.id}.__dict__")
            if isinstance(node, ast.Attribute) and attr == "__dict__" and watched(node.value):
                found.append(f"patches a module: touches {watched(node.value)}.__dict__")
            elif isinstance(node, ast.Attribute) and attr == "__dict__" and not _namespace_read_plainly(
                    node, parents.get(id(node)), notebook or tree, aliases):
                found.append(f"reads an object's namespace: {shown(node)}")   # sys.stderr.__dict__["session"]
            if attr in ("__torch_function__", "__torch_dispatch__"):
                found.append(f"patches torch: defines {attr}")
            elif _special(attr) and attr not in FUNCTION_INTERNALS | {"__getattribute__", "__dict__"} and not (
                    name == "object.__setattr__" and isinstance(parents.get(id(node)), ast.Call)
                    and [ast.unparse(a) for a in parents[id(node)].args[:1]] == ["self"]) and not (
                    attr == "__annotations__" and _looked_at(node, parents, aliases)):   # print(f.__annotations__)
                found.append(f"reaches a special attribute: {attr}")   # (a frozen dataclass sets its own fields)
            parent = parents.get(id(node))
            if isinstance(node.ctx, ast.Load) and not isinstance(parent, (ast.Attribute, ast.arguments)) and not \
                    _membership(node, parents) and not (
                    isinstance(parent, ast.Call) and (parent.func is node or _read_harmlessly(parent, node, aliases))) and not (
                    isinstance(parent, ast.Assign) and all(isinstance(t, ast.Name) for t in parent.targets)):
                held = resolved(node, aliases)
                if root(held) in WATCHED and not _is_object(held):
                    # a module passed, returned, put in a list: `return io`, `[headlab.kernel]`, `f(torch)`
                    found.append(f"holds a module as a value: {held}")
            if name in SETTERS | {"getattr"} and isinstance(node.ctx, ast.Load) and not (
                    isinstance(parent, ast.Call) and parent.func is node):
                # map(setattr, ...), partial(setattr), reduce(getattr, names, shell)
                found.append(f"{'reaches' if name == 'getattr' else 'patches'} an object: passes {name} as a value")
            if name in CODE_FROM_STRING | CODE_FROM_BYTES | NAMESPACES and name not in own_functions and isinstance(
                    node.ctx, ast.Load) and not (isinstance(parent, ast.Call) and parent.func is node):
                # run = exec; run(bytes.fromhex(...).decode()): the call no longer names what it runs
                found.append(f"runs code from a string or reads a namespace: passes {name} as a value")
        # a string, or a concatenation of strings ("headlab" + " . kernel"), that names the channel, spaces aside:
        # mock.patch("headlab.kernel.respond"), open(".heads_answers/...")
        spelled = _spellings(node, notebook or tree) if isinstance(node, (ast.Constant, ast.JoinedStr)) or \
            isinstance(node, ast.BinOp) and not isinstance(parents.get(id(node)), ast.BinOp) else None
        texts = {compact for text in spelled or () for compact in _compacted(text)}
        named = [word for word in CHANNEL_WORDS if any(word in text for text in texts)]
        if named:
            found.append(f"touches the grader's channel: names {named[0]}")
        loaders = [word for word in LOADING_WORDS if any(word in text for text in texts)]
        if loaders:
            found.append(f"runs code a string names: {loaders[0]}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            # "{0.__globals__[headlab].kernel}": str.format and Formatter.get_field follow the path (of a private
            # field, `{0._n}`, str.format gives only the text)
            fields = [p for p in _format_path_parts(node.value) if _special(p)]
            if fields:
                found.append(f"reaches an attribute by a path in a format string: {fields[0]}")
            if node.value in FUNCTION_INTERNALS:   # getattr(f, "__globals__")
                found.append(f"reaches into a function's internals: {node.value}")
            elif _special(node.value):   # getattr(cls, "__subclasses__")
                found.append(f"reaches a special attribute by name: {node.value}")
        note = getattr(node, "annotation", None) or getattr(node, "returns", None)
        if note is not None and _computed_annotation(note, notebook or tree):
            # def f(x: "(k := " + P + "lab.kernel) and int"): typing.get_type_hints and functools.singledispatch
            # evaluate a string annotation; one that is computed, the flags cannot read (a constant one is read)
            found.append(f"computes an annotation: {shown(note)}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in (
                "__torch_function__", "__torch_dispatch__"):
            found.append(f"patches torch: defines {node.name}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in HOOK_METHODS:
            found.append(f"defines a method Python calls behind the code's back: {node.name}")
        if isinstance(node, ast.ClassDef) and any(k.arg == "metaclass" and resolved(k.value, aliases) not in (
                "abc.ABCMeta", "enum.EnumMeta") for k in node.keywords):
            found.append(f"builds a class with a metaclass: {node.name}")   # ABCMeta is an honest one
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]):
                if name in SPAWN_MODULES:
                    found.append(f"spawns processes: imports {name}")
                if _everywhere(name):
                    found.append(f"changes what every later operation does: imports {name}")
                if name.startswith(BY_NAME_LOADERS):
                    found.append(f"imports by a name or path the code gives: imports {name}")
                if any(p.startswith("_") and not p.startswith("__") for p in name.split(".")[1:]):
                    found.append(f"reaches a private part of a module: imports {name}")   # from torch import _C
                if root(name) not in COURSE_IMPORTS and name not in SPAWN_MODULES and \
                        name not in PACKAGE_VERSIONS:
                    found.append(f"imports a module the course never uses: {name or '.'}")
                if name in ("sys.modules", "sys._getframe", "inspect.currentframe", "inspect.stack"):
                    found.append(f"inspects frames or modules: imports {name}")
    # rebinding a name that held a watched module: check = ..., import numpy as torch (a loop's variable named
    # `check` is a student's choice of name, not a replacement of the lesson's checks)
    looped = {id(n) for loop in ast.walk(tree) if isinstance(loop, (ast.For, ast.comprehension))
              for n in ast.walk(loop.target)}
    for name, node in module_level_stores(tree):
        if id(node) in looped:
            continue
        if name in SHADOWED_BUILTINS:
            found.append(f"shadows a builtin the grader uses: binds {name}")
        if name in watched_names:
            rebinds_same = isinstance(node, (ast.Import, ast.ImportFrom)) and own.get(name) == watched_names[name]
            if not rebinds_same:
                found.append(f"patches a module: rebinds {name} ({watched_names[name]})")
    return found


def _looked_at(node: ast.AST, parents: dict, aliases: dict) -> bool:
    """Whether `node` is only printed or otherwise looked at: `print(sys.path)`."""
    parent = parents.get(id(node))
    return isinstance(parent, ast.Call) and node in parent.args and dotted(parent.func, aliases) in LOOKS_AT


def _everywhere(name: str) -> bool:
    """Whether a dotted name is one of torch's ways to change every later operation (TORCH_EVERYWHERE)."""
    return name.startswith(TORCH_EVERYWHERE) or bool(GLOBAL_HOOK.match(name.split(".")[-1]))


def _special(name: str) -> bool:
    """Whether `name` is a special (dunder) name that honest code has no use for (PLAIN_DUNDERS are its uses)."""
    return len(name) > 4 and name.startswith("__") and name.endswith("__") and name.isidentifier() \
        and name not in PLAIN_DUNDERS


def _by_name_flags(func: str, call: ast.Call, tree: ast.Module, aliases: dict[str, str], watched, is_shell) -> list[str]:
    """Flags of `getattr(x, name)`, `setattr(x, name, v)`, `attrgetter(name)`, read as `x.name` for every name the
    code can give (`names_of`). A name the grader cannot know is flagged when it could reach a module, IPython or
    a special or private attribute; on the student's own object (`setattr(masks, f"n{n}", m)`) it is not."""
    getter = func in BY_NAME_GETTERS   # attrgetter("a.b"): no object yet, so any
    target = None if getter else (call.args[0] if call.args else None)
    name_args = call.args if func == "operator.attrgetter" else call.args[:1] if getter else call.args[1:2]
    if not name_args:
        return []
    module = watched(target) if target is not None else None
    shell = target is None or is_shell(target)
    risky = shell or module or not _own_object(target, tree) or target.id in aliases
    flags, names = [], set()
    for arg in name_args:
        known = names_of(arg, tree)
        if known is None and (risky or not plain_prefix(arg)):
            flags.append(f"reaches an attribute by a name the code computes: {func}(..., {shown(arg)})")
        names |= {part for name in known or () for part in name.split(".")}
    internals = IPYTHON_ATTRS | FUNCTION_INTERNALS | SCHEDULERS | (SHELL_ONLY_ATTRS if shell else set())
    for name in sorted(names):
        if name in internals or _special(name):
            flags.append(f"reaches IPython's or a function's internals by name: {func}(..., {name!r})")
        elif func in SETTERS and (name.startswith("_") or name in KERNEL_SIDE) and not _own_target(target, tree,
                                                                                                   aliases):
            flags.append(f"patches an object: sets a private attribute by name: {func}(..., {name!r})")
        elif module and not module.endswith("()") and (root(module) != "torch" or name.startswith("_")):
            flags.append(f"reads a module's attribute by name: {func}({module}, {name!r})")
    return flags


def _runs_a_magic(getter: ast.AST, parents: dict) -> bool:
    """Whether `get_ipython` is used only as `get_ipython().run_line_magic(...)` and the like (MAGIC_CALLS)."""
    call = parents.get(id(getter))
    method = parents.get(id(call))
    return isinstance(call, ast.Call) and call.func is getter and isinstance(method, ast.Attribute) \
        and method.attr in MAGIC_CALLS and isinstance(parents.get(id(method)), ast.Call) \
        and parents[id(method)].func is method


def _read_harmlessly(call: ast.Call, module: ast.AST, aliases: dict[str, str]) -> bool:
    """Whether a module passed to `call` is only looked at (`print(torch)`, `dir(F)`) or is the object of a
    getattr-like call, which `_by_name_flags` judges by the names it can read."""
    func = dotted(call.func, aliases)
    return func in LOOKS_AT or (func in BY_COMPUTED_NAME and call.args[:1] == [module])


def cell_id(cell) -> str:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta.get("grade_id") or cell.get("id") or "?"


def student_cells(submitted: dict, release: dict) -> list[dict]:
    """Code cells whose code the student wrote: every code cell whose source is not in the release (an answer,
    an inserted cell, a demo cell changed), whatever its metadata says: a red team inserted a cell marked
    `locked` with a grade_id the release does not have, which the grader then ran as an ordinary cell."""
    released = {_norm(c["source"]) for c in release["cells"] if c["cell_type"] == "code"}
    return [cell for cell in submitted["cells"]
            if cell["cell_type"] == "code" and _norm(cell["source"]) not in released]


def code_flags(submitted: dict, release: dict) -> list[str]:
    """Flags from the code the student wrote, `submitted` and `release` notebooks as dicts."""
    reading = NotebookReading(submitted, release)
    flags = [f"{cell_id(cell)}: {reason}" for cell, tree in reading.cells for reason in reading.reasons(cell, tree)]
    try:
        flags += answers_from_the_package(release, [tree for _, tree in reading.cells if tree is not None],
                                          reading.aliases)
    except RecursionError:
        pass   # flagged cell by cell
    return list(dict.fromkeys(flags))


class NotebookReading:
    """The student's cells of a hand-in, parsed once with what the whole notebook says about their names (the
    modules each name is bound to, the functions of their own): `reasons` reads one cell, as written or as the
    grader would run it (heads_unrun)."""

    def __init__(self, submitted: dict, release: dict):
        aliases, used_as_module = {}, set()
        for cell in release["cells"]:
            if cell["cell_type"] == "code":
                tree = parse(_text(cell["source"]))
                if tree is not None:
                    aliases.update(imports(tree))
                    used_as_module |= {n.value.id for n in ast.walk(tree)
                                       if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
        # Names the release binds to a watched module (`check`, `torch`), not to a function of one
        # (`course_tokenizer`): a student may well define a function of that name.
        self.watched_names = {name: target for name, target in aliases.items()
                              if root(target) in WATCHED and name in used_as_module}
        self.watched_names.update({name: name for name in REBOUND})
        self.release = release
        self.cells = [(cell, parse(_text(cell["source"]))) for cell in student_cells(submitted, release)]
        trees = [tree for _, tree in self.cells if tree is not None]
        self.own = _own_functions(trees)
        self.notebook = ast.Module(body=[stmt for tree in trees for stmt in tree.body], type_ignores=[])
        for tree in trees:  # a module named in one cell and patched in another
            aliases = module_aliases(tree, {**aliases, **imports(tree)})
        self.aliases = aliases
        self.released = {c.get("id"): c for c in release["cells"] if c["cell_type"] == "code" and c.get("id")}

    def reasons(self, cell: dict, tree: ast.Module | None, source: str | None = None) -> list[str]:
        """What `cell` (parsed as `tree`, from `source` when given, else from its own source) does that a correct
        answer never needs."""
        if tree is None:
            return ["code nested too deep for the grader to read"] if too_deep(source or _text(cell["source"])) \
                else []
        try:
            # A release cell the student edited (a `-U` added to the setup's %pip): only what the edit added
            original = parse(_text(self.released[cell["id"]]["source"])) if cell.get("id") in self.released else None
            before = cell_flags(original, self.aliases, self.watched_names) if original is not None else []
            found = [f for f in cell_flags(tree, self.aliases, self.watched_names, self.own, self.notebook)
                     if f not in before]
            return found + [f"imports a part of the course package the lesson does not: {name}"
                            for name in _course_modules_beyond(tree, self.release)]
        except RecursionError:   # no answer nests a thousand levels deep
            return ["code nested too deep for the grader to read"]


def _course_modules_beyond(tree: ast.Module, release: dict) -> list[str]:
    """The modules of headlab that `tree` imports and the release does not (`from headlab.checks.heads import
    drive_head`: a red team reached the kernel's module from it); importing what the lesson imports, or other
    names of the modules it imports from (`from headlab.plots import show_change`), is the course's own use."""
    lesson = set()
    for t in (parse(_text(c["source"])) for c in release["cells"] if c["cell_type"] == "code"):
        lesson |= {name for name in _imported(t or ast.Module(body=[], type_ignores=[])) if root(name) == "headlab"}
    return sorted(name for name in _imported(tree) if root(name) == "headlab" and name not in lesson
                  and (name.rsplit(".", 1)[0] not in lesson or _is_module(name)))


def _imported(tree: ast.Module) -> set[str]:
    """Every dotted name an import of `tree` reaches: `a.b` of `import a.b`, `a.b` and `a.b.c` of `from a.b import c`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


@functools.lru_cache(maxsize=256)
def _is_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def _own_functions(trees: list[ast.Module]) -> frozenset[str]:
    """The names of CODE_FROM_STRING that the student's cells define with `def` at their top level and never
    unbind or reach the namespace to unbind (`del`, `globals()`, `vars()`, `locals()`): calls to those are calls
    to the student's function (`def eval(mask): ...`, an honest name), not to the builtin."""
    nodes = [n for t in trees for n in ast.walk(t)]
    if any(isinstance(n, ast.Delete) or (isinstance(n, ast.Name) and n.id in ("globals", "vars", "locals"))
           for n in nodes):
        return frozenset()
    return frozenset(n.name for t in trees for n in t.body
                     if isinstance(n, ast.FunctionDef) and n.name in CODE_FROM_STRING)


def answers_from_the_package(release: dict, student_trees: list[ast.Module], aliases: dict[str, str]) -> list[str]:
    """An exercise's answer built on the course package: no solution calls headlab in an answer, yet held-out red
    teams handed in `padding_mask` as the tokenizer's own `pad(...)[1]` and `causal_mask` through the model's
    attention pattern, reached by a free name, a default parameter, a local alias, a walrus or a loop variable. One
    flag per exercise that package_routes finds."""
    return list(package_flags(release, student_trees).values())


def package_flags(release: dict, student_trees: list[ast.Module]) -> dict[str, str]:
    """{exercise: its flag} for each answer built on the course package (package_routes)."""
    return {name: f"{name}: an answer built on the course package: {', '.join(found)}"
            for name, found in package_routes(release, student_trees).items()}


def package_routes(release: dict, student_trees: list[ast.Module]) -> dict[str, list[str]]:
    """{exercise: how its answer uses the course package}, for each answer (the name of an exercise of the release)
    that does. What an answer reaches is its code (decorators, defaults, body) and, name by name, the code of every
    binding the notebook gives the names it reads; each name, local or the notebook's, stands for the values bound
    to it. It is flagged where that code calls a package object's method (`tok.pad`, `alias(...)` after `alias =
    decoder.attention_pattern`), calls a package name the lesson does not import, or hands a package object itself
    to other code (`impl(n, decoder)`); calling a helper the lesson imports for the student
    (`count_parameters(...)`) or reading a constant (`tok.mask_id`) is not flagged."""
    released = [t for t in (parse(_text(c["source"])) for c in release["cells"] if c["cell_type"] == "code") if t]
    lesson = {n for t in released for n, target in imports(t).items() if root(target) == "headlab"}
    own = {n for t in student_trees for n, target in imports(t).items() if root(target) == "headlab"} - lesson
    reach = _PackageReach(top_level_bindings([*released, *student_trees]), own, lesson)
    found = {name: reach.uses_of(name) for name in sorted(_exercises(release))}
    return {name: uses for name, uses in found.items() if uses}


def _exercises(release: dict) -> set[str]:
    return {meta["grade_id"] for c in release["cells"] if c["cell_type"] == "code"
            for meta in [c.get("metadata", {}).get("nbgrader", {})]
            if meta.get("solution") and not meta.get("grade") and meta.get("grade_id")}


class _PackageReach:
    """The notebook's names resolved to the package objects they can hold. `theirs`: names derived from a part of
    headlab the student imported and the lesson does not; `lessons`: from the lesson's own imports of headlab;
    `made`: the package's objects themselves (`tok = course_tokenizer()`, an alias of one), not the data computed
    with them, which an answer may well pass on (`len(texts)`)."""

    def __init__(self, top: dict[str, list], own: set[str], lesson: set[str]):
        self.top = top
        values = {name: [v for v in found if v is not None and v is not IMPORTED] for name, found in top.items()}
        reads = {name: set().union(*map(free_names, found)) for name, found in values.items()}
        self.theirs, self.lessons = _derived(own, reads), _derived(lesson, reads)
        self.made = _derived(own | lesson, {name: set().union(*map(_made_by, found)) for name, found in values.items()})

    def uses_of(self, exercise: str) -> list[str]:
        """How the answer bound to `exercise` uses the package (`calls tok`, `hands decoder to other code`)."""
        found = set()
        for code in self._reached(exercise):
            local = local_bindings(code)   # a function's, or a lambda's or comprehension's inside a value
            found |= {f"calls {n}" for callee in _callees(code) for n in self._package(callee, local, False)}
            found |= {f"hands {n} to other code" for arg in _arguments(code) for n in self._package(arg, local, True)}
        return sorted(found)

    def _reached(self, exercise: str) -> list[ast.AST]:
        """The code of the exercise's bindings and of the notebook's bindings of every name that code reads."""
        code, todo, seen = [], [exercise], set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for value in self.top.get(name, []):
                if value is not None and value is not IMPORTED:
                    code.append(value)
                    todo += free_names(value)
        return code

    def _package(self, expr: ast.AST, local: dict, itself: bool) -> set[str]:
        """The package names `expr`'s value can be a method or attribute of (or, `itself`, can be), or a name of
        that the lesson does not import: the first such name on each way its bindings lead. A loop, not recursion:
        a chain of a thousand aliases must not exhaust the grader's stack."""
        found, todo, seen = set(), [(expr, local, False)], set()
        while todo:
            expr, local, through = todo.pop()
            if (id(expr), through) in seen:
                continue
            seen.add((id(expr), through))
            if isinstance(expr, ast.Name):
                not_a_local = IMPORTED in local.get(expr.id, [IMPORTED])   # the notebook's name, or an import of one
                if not_a_local and (expr.id in self.theirs or (through and expr.id in self.lessons)
                                    or (itself and expr.id in self.made)):
                    found.add(expr.id)
                    continue
                todo += self._bound(expr.id, local, through)
                if itself:   # an object handed on hands what was stored on it (`ns.model = decoder`; `impl(ns)`)
                    todo += [item for key in _stored_on(expr.id, local, self.top) for item in
                             self._bound(key, local, through)]
            elif isinstance(expr, ast.Attribute):   # what was stored there (self.model), or an attribute of its object
                todo += self._bound(dotted(expr, {}), local, through) + ([] if itself else [(expr.value, local, True)])
            else:
                if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                    local = {**local, **local_bindings(expr)}
                todo += [(part, local, through) for part in _value_parts(expr)]
        return found


    def _bound(self, name: str | None, local: dict, through: bool) -> list[tuple]:
        """The values bound to `name` (a name, or the dotted name of an attribute set), each with its scope."""
        values, scope = (local[name], local) if name in local else (self.top.get(name, []), {})
        return [(v, scope, through) for v in values if isinstance(v, ast.expr) and v is not IMPORTED]


def _stored_on(name: str, local: dict, top: dict) -> list[str]:
    """The dotted names of the attributes set on `name` (`ns.model` of `ns.model = decoder`), in its scope."""
    scope = local if name in local else top
    return [key for key in scope if key.startswith(f"{name}.") and "." not in key[len(name) + 1:]]


def _derived(start: set[str], reads: dict[str, set[str]]) -> set[str]:
    """`start` and every name whose bindings read one of them, to a fixed point."""
    out, grew = set(start), True
    while grew:
        grew = False
        for name, read in reads.items():
            if name not in out and read & out:
                out.add(name)
                grew = True
    return out


def _made_by(value: ast.AST) -> set[str]:
    """The names whose object `value` is, or is made by calling: `tok` of `tok`, `course_tokenizer` of
    `course_tokenizer()`, either of `[decoder, encoder]`; none of a method's result (`tok.batch(texts)`)."""
    if isinstance(value, ast.Call):
        return {value.func.id} if isinstance(value.func, ast.Name) else set()
    if isinstance(value, ast.Name):
        return {value.id}
    return set().union(*map(_made_by, _value_parts(value))) if not isinstance(value, ast.Attribute) else set()


def _value_parts(expr: ast.AST) -> list[ast.AST]:
    """The parts of `expr` its value can be: a call's function (its result comes from it), a subscript's
    container, a walrus's value, a container's items, either branch of a condition."""
    if isinstance(expr, ast.Call):
        return [expr.func]
    if isinstance(expr, (ast.Subscript, ast.Starred, ast.Await, ast.NamedExpr)):
        return [expr.value]
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return list(expr.elts)
    if isinstance(expr, ast.Dict):
        return [v for v in expr.values if v is not None]
    if isinstance(expr, ast.IfExp):
        return [expr.body, expr.orelse]
    if isinstance(expr, ast.BoolOp):
        return list(expr.values)
    if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return [expr.elt]
    if isinstance(expr, ast.DictComp):
        return [expr.value]
    return []


def _callees(code: ast.AST) -> list[ast.expr]:
    """What `code` calls: each call's function, and each decorator (applied to what it decorates)."""
    found = [n.func for n in ast.walk(code) if isinstance(n, ast.Call)]
    return found + [d for n in ast.walk(code) for d in getattr(n, "decorator_list", [])
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _arguments(code: ast.AST) -> list[ast.expr]:
    """What `code` hands to other code: each call's arguments."""
    return [arg for n in ast.walk(code) if isinstance(n, ast.Call) for arg in [*n.args, *(k.value for k in n.keywords)]]


# --- result flags ---------------------------------------------------------------------------------
def result_flags(autograded: dict, release: dict, cell_scores: dict[str, float]) -> list[str]:
    """Flags from the graded notebook and its scores ({grade_id: score})."""
    rel = {cell_id(c): c for c in release["cells"] if c.get("metadata", {}).get("nbgrader")}
    answers = {gid for gid, c in rel.items() if c["metadata"]["nbgrader"].get("solution")}
    graded = {cell_id(c): c for c in autograded["cells"] if c.get("metadata", {}).get("nbgrader")}
    unchanged = {gid for gid in answers
                 if gid in graded and _norm(graded[gid]["source"]) == _norm(rel[gid]["source"])}
    flags = []
    for gid, score in sorted(cell_scores.items()):
        if not score or gid not in graded:
            continue
        answer = gid[len("test_"):] if gid.startswith("test_") else None
        if (answer in unchanged) or (answer not in answers and answers and answers <= unchanged):
            flags.append(f"{gid}: scored {score:g} with the answer unchanged from the release")
        tree = parse(_text(graded[gid]["source"]))
        calls = sum(1 for node in (tree.body if tree else [])
                    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                    and root(dotted(node.value.func, {})) == "check")
        # one print can arrive in several stream outputs (the kernel flushes on a timer): join them first
        stdout = "".join(_text(out.get("text", "")) for out in graded[gid].get("outputs", [])
                         if out.get("output_type") == "stream" and out.get("name") == "stdout")
        printed = sum(line.startswith("✓ ") for line in stdout.splitlines())
        if printed < calls:
            flags.append(f"{gid}: scored {score:g} but printed {printed} of its {calls} pass lines")
    return flags


# Flags that ask for a look but do not hold the score (heads_export): a shell command or pip install is common in
# honest notebooks, and the grader stops any process a cell leaves running.
NOT_HELD = ("spawns processes: a shell command",)


def holds(flag: str) -> bool:
    """Whether `flag` (as notebook_flags gives it, `cell: reason`) holds the notebook's score until reviewed."""
    return not any(note in flag for note in NOT_HELD)


SHARED_IDS = "shared_ids.json"   # in the course's downloaded/: {id: why}, written by `grade.py collect`


def submission_flags(coursedir, lesson: str, notebook: str, student: str,
                     cell_scores: dict[str, float] | None) -> list[str]:
    """Every flag of one student's notebook, from the course folders (None scores: code only), and an id two
    names shared at collect (`id_flags`)."""
    return id_flags(coursedir, student) + notebook_flags(coursedir, lesson, notebook, student, cell_scores)


def id_flags(coursedir, student: str) -> list[str]:
    """An id two names shared at collect: not the notebook's doing, but to settle before the row is trusted."""
    try:
        path = os.path.join(coursedir.root, "downloaded", SHARED_IDS)
        shared = _shared_ids(path, os.stat(path).st_mtime_ns).get(student)
    except (OSError, AttributeError):
        shared = None
    return [f"id shared by two names at collect: {shared}"] * bool(shared)


@functools.lru_cache(maxsize=4)  # the export and the report ask once per student and notebook
def _shared_ids(path: str, mtime_ns: int) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            found = json.load(fh)
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def notebook_flags(coursedir, lesson: str, notebook: str, student: str,
                   cell_scores: dict[str, float] | None) -> list[str]:
    def load(folder, who):
        path = os.path.join(coursedir.format_path(folder, who, lesson), f"{notebook}.ipynb")
        try:
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    release = load(coursedir.release_directory, ".")
    submitted = load(coursedir.submitted_directory, student)
    if release is None or submitted is None or "cells" not in submitted:
        return []
    try:
        flags = code_flags(submitted, release)
        autograded = load(coursedir.autograded_directory, student)
        if autograded is not None and cell_scores:
            flags += result_flags(autograded, release, cell_scores)
    except (RecursionError, AttributeError, KeyError, TypeError, ValueError) as err:
        # The export, the report and the score lines read flags for every student: one notebook the
        # flagger cannot read is flagged for review, and the class is still listed.
        return [f"the grader could not read this notebook's code for flags ({type(err).__name__}); open it"]
    return flags


def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else source


def _norm(source) -> str:
    return re.sub(r"\s+", " ", _text(source)).strip()

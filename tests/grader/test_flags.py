"""Flags for review (grader/heads_flags.py), parse only: no kernel, no nbgrader run.

Honest code is never flagged: the solution, the untouched lesson, and every wrong implementation and
correct alternative of the grading harness (tests/grading/test_grade_*.py), for every lesson. Each
kind of forgery the flags name is flagged, in an answer cell or in an inserted cell.
"""
from __future__ import annotations

import copy
import importlib

import nbformat
import pytest

from course import fill, solution_answers
from heads_lessons import LESSONS as LESSONS_DIR, all_lessons, lesson
from heads_flags import code_flags, result_flags

LESSONS = [x.name for x in all_lessons()]


def release(name: str):
    return lesson(name).read(LESSONS_DIR)


def harness_cases(name: str) -> list:
    module = importlib.import_module(f"test_grade_{name}")   # builds the case lists; grades nothing
    return [*module.WRONG, *module.ALTERNATIVES]


@pytest.mark.parametrize("lesson", LESSONS)
def test_honest_code_is_never_flagged(lesson):
    rel = release(lesson)
    sol = solution_answers(lesson)
    submissions = {"untouched": rel, "solution": fill(rel, sol)}
    for case in harness_cases(lesson):
        submissions[case.name] = fill(rel, {**sol, case.exercise: case.answer(sol)})
    assert len(submissions) > 4
    flagged = {name: code_flags(nb, rel) for name, nb in submissions.items()}
    assert not {name: f for name, f in flagged.items() if f}, flagged


LESSON = "00_representations"
ONES = "torch.ones(1, n, dtype=torch.bool)"
WORDS = "[' '.join(['the'] * int(k)) for k in lengths]"
# Answers the course package computes, which no solution does: red team 3's (the tokenizer's pad, a method of the
# package's model class) and 4's (a model the lesson imports), and red team 16's (held out; written here), which
# reach lesson 00's `decoder` and `tok` through a default, a method kept in a name, a local alias, a loop variable
# and a walrus; then the same reach through the other bindings a notebook makes.
PACKAGE_ROUTES = {
    "package-pad": "from headlab.tokenizer import pad\ndef padding_mask(lengths, n):\n"
                   "    return pad([[1] * k for k in lengths], 0, pad_to=n)[1]",
    "package-alias": "import headlab.tokenizer as T\n_p = T.pad\ndef padding_mask(lengths, n):\n"
                     "    return _p([[1] * k for k in lengths], 0, pad_to=n)[1]",
    "package-method": "from types import SimpleNamespace as N\nfrom headlab.models import TinyTransformer as M\n"
                      "def causal_mask(n):\n"
                      "    return M.attention_pattern(N(cfg=N(causal=True)), torch.ones(1, n))[0, 0]",
    "lesson-model-method": "def causal_mask(n):\n    return tiny_encoder().attention_pattern(torch.ones(1, n))[0, 0]",
    "model-as-a-default": f"def causal_mask(n: int, model=decoder) -> torch.Tensor:\n"
                          f"    return model.attention_pattern({ONES})[0, 0]",
    "method-kept-in-a-name": f"pattern_of = decoder.attention_pattern\ndef causal_mask(n: int) -> torch.Tensor:\n"
                             f"    return pattern_of({ONES})[0, 0]",
    "local-alias": f"def causal_mask(n: int) -> torch.Tensor:\n    allowed = decoder.attention_pattern\n"
                   f"    return allowed({ONES})[0, 0]",
    "loop-variable": f"for model in [decoder]:\n    pass\ndef causal_mask(n: int) -> torch.Tensor:\n"
                     f"    return model.attention_pattern({ONES})[0, 0]",
    "tokenizer-as-a-default": f"def padding_mask(lengths: torch.Tensor, n: int, t=tok) -> torch.Tensor:\n"
                              f"    return t.batch({WORDS}, pad_to=n).attention_mask.bool()",
    "walrus": f"def padding_mask(lengths: torch.Tensor, n: int) -> torch.Tensor:\n"
              f"    return (t := tok).batch({WORDS}, pad_to=n).attention_mask.bool()",
    # the lesson's own loop binds `model` (to decoder, then encoder)
    "the-lessons-loop-variable": f"def causal_mask(n):\n    return model.attention_pattern({ONES})[0, 0]",
    "with-target": f"import contextlib\nwith contextlib.nullcontext(decoder) as held_model:\n    pass\n"
                   f"def causal_mask(n):\n    return held_model.attention_pattern({ONES})[0, 0]",
    "tuple-unpacking": f"first, second = decoder, encoder\ndef causal_mask(n):\n"
                       f"    return first.attention_pattern({ONES})[0, 0]",
    "walrus-at-the-top": f"print(kept := decoder)\ndef causal_mask(n):\n"
                         f"    return kept.attention_pattern({ONES})[0, 0]",
    "keyword-only-default": f"def causal_mask(n, *, model=decoder):\n    return model.attention_pattern({ONES})[0, 0]",
    "lambda-default": f"causal_mask = lambda n, m=decoder: m.attention_pattern({ONES})[0, 0]",
    "wrapped-lambda-default": f"import functools\ncausal_mask = functools.lru_cache(maxsize=None)(\n"
                              f"    lambda n, m=decoder: m.attention_pattern({ONES})[0, 0])",
    "alias-of-an-alias": f"def causal_mask(n):\n    a = decoder\n    b = a.attention_pattern\n"
                         f"    return b({ONES})[0, 0]",
    "item-of-a-list": f"def causal_mask(n):\n    return [decoder][0].attention_pattern({ONES})[0, 0]",
    "helper-of-their-own": f"def pattern(x):\n    return decoder.attention_pattern(x)\n"
                           f"def causal_mask(n):\n    return pattern({ONES})[0, 0]",
    "computed-at-the-top": f"PATTERN = decoder.attention_pattern(torch.ones(1, 64, dtype=torch.bool))[0, 0]\n"
                           f"def causal_mask(n):\n    return PATTERN[:n, :n]",
    "import-inside-the-answer": "def padding_mask(lengths, n):\n    from headlab.tokenizer import pad\n"
                                "    return pad([[1] * k for k in lengths], 0, pad_to=n)[1]",
    "model-passed-to-a-helper": f"def impl(n, model):\n    return model.attention_pattern({ONES})[0, 0]\n"
                                f"def causal_mask(n):\n    return impl(n, decoder)",
    "partial": f"import functools\ndef impl(n, model):\n    return model.attention_pattern({ONES})[0, 0]\n"
               f"causal_mask = functools.partial(impl, model=decoder)",
    "decorator": f"def using(model):\n    return lambda f: lambda n: f(n, model)\n@using(decoder)\n"
                 f"def causal_mask(n, model):\n    return model.attention_pattern({ONES})[0, 0]",
    "getattr": f"def causal_mask(n):\n    return getattr(decoder, 'attention_pattern')({ONES})[0, 0]",
    "a-thousand-aliases": "p0 = decoder.attention_pattern\n" + "".join(f"p{i + 1} = p{i}\n" for i in range(1500))
                          + f"def causal_mask(n):\n    return p1500({ONES})[0, 0]",
    "carried-on-an-object": f"from types import SimpleNamespace\nns = SimpleNamespace()\nns.model = decoder\n"
                            f"def impl(n, o):\n    return o.model.attention_pattern({ONES})[0, 0]\n"
                            f"def causal_mask(n):\n    return impl(n, ns)",
    "stored-on-self": f"class Masks:\n    def __init__(self):\n        self.model = decoder\n"
                      f"    def __call__(self, n):\n        return self.model.attention_pattern({ONES})[0, 0]\n"
                      f"causal_mask = Masks()",
}
FORGERIES = {
    "patch-torch-equal": "torch.equal = lambda a, b: True",
    "patch-tensor-method": "torch.Tensor.__eq__ = lambda a, b: torch.ones_like(a, dtype=torch.bool)",
    "patch-check": "check.padding_mask = lambda fn, cases=None: print('✓ padding_mask: 4 cases passed')",
    "setattr-check": "setattr(check, 'causal_mask', lambda *a, **k: None)",
    "rebind-check": "class _Fake:\n    def __getattr__(self, name):\n        return lambda *a, **k: None\n"
                    "check = _Fake()",
    "reimport-check": "import types as check",
    "torch-function": "class Liar(torch.Tensor):\n    @classmethod\n"
                      "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                      "        return True",
    "input-transformer": "get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])",
    "ast-transformer": "ip = get_ipython()\nip.ast_transformers.append(object())",
    "no-op-showtraceback": "from IPython import get_ipython\nget_ipython().showtraceback = lambda *a, **k: None",
    "post-run-hook": "get_ipython().events.register('post_run_cell', lambda result: None)",
    "custom-exc": "get_ipython().set_custom_exc((Exception,), lambda *a, **k: None)",
    "frame-locals": "import sys\ndef padding_mask(lengths, n):\n    return sys._getframe(1).f_locals['expected']",
    "inspect-stack": "import inspect\ndef causal_mask(n):\n    return inspect.stack()[1].frame.f_locals['e']",
    "traceback-frame": "try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame",
    "gc-objects": "import gc\nleak = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]",
    "sys-modules": "import sys\nsys.modules['headlab.checks.ch00'] = None",
    "subprocess": "import subprocess\nsubprocess.Popen(['sleep', '100'])",
    "os-system": "import os\nos.system('sleep 100 &')",
    "os-fork": "import os\nif os.fork() == 0:\n    while True:\n        pass",
    "multiprocessing": "from multiprocessing import Process",
    "shell-escape": "!sleep 100 &",
    "bash-magic": "%%bash\nsleep 100 &",
    "symlink": "import os\nos.symlink('/etc/passwd', 'leak')",
    "hardlink": "import os\nos.link('a', 'b')",
    "path-symlink": "from pathlib import Path\nPath('leak').symlink_to('/')",
    "exec-string": "exec('torch.equal = lambda a, b: True')",
    "patch-builtins": "import builtins\nbuiltins.print = lambda *a, **k: None",
    # A red team's results rewritten on their way out of the kernel (json.dumps replaced), with the answer edited
    "patch-json": "import json as _json\n_real = _json.dumps\n_json.dumps = lambda obj, *a, **k: _real(obj)",
    "globals-assign": "globals()['check'] = None",
    "module-dict-update": "import headlab.checks.ch00 as _c\n_c.__dict__.update(padding_mask=lambda *a, **k: None)",
    "vars-update": "import headlab.checks.ch00 as _c\nvars(_c).update(padding_mask=lambda *a, **k: None)",
    "module-by-assignment": "_c = check\n_c.padding_mask = lambda *a, **k: None",
    # Issue 25, K3b/K3c: the names the test cell's line looked up, shadowed to hand the grader another answer
    "shadow-import": "def __import__(name, *a, **k):\n    return None",
    "shadow-globals": "_g = globals\ndef globals():\n    return {**_g(), 'causal_mask': lambda n: n}",
    # Issue 25, K3/F1: a watched module reached by any binding or expression, a setter passed as a value, and
    # modules no answer needs (written here for these tests; the red team's own attacks are held out)
    "loop-alias": "import headlab.kernel\nfor k in (headlab.kernel,):\n    k.drive_head = len",
    "unpacked-alias": "import os\n(o, _) = (os, 1)\no.replace = len",
    "comprehension-alias": "import json\n[setattr(m, 'loads', len) for m in [json]]",
    "with-alias": "import io\nclass C:\n    def __enter__(self):\n        return io\n    def __exit__(self, *a):\n"
                  "        pass\nwith C() as m:\n    m.open = len",
    "default-alias": "import json\ndef g(mod=json):\n    mod.loads = len\ng()",
    "walrus-store": "import json\n(q := json).loads = len",
    "container-alias": "import headlab.kernel as hk\nbox = [hk]\nbox[0].drive_head = len",
    "class-attr-alias": "class Box:\n    mod = torch\nBox.mod.equal = len",
    "call-result-store": "getattr(torch, 'nn').functional.relu = len",
    "globals-lookup-store": "globals()['torch'].equal = len",
    "type-dunder": "Tensor = type(torch.ones(1))\nTensor.__ne__ = lambda a, b: False",
    "bound-self-store": "len.__self__.print = len",
    "fn-globals-store": "def f():\n    pass\nf.__globals__['torch'].equal = len",
    "map-setter": "import json\nlist(map(setattr, [json], ['loads'], [len]))",
    "partial-setter": "import functools, json\nfunctools.partial(setattr, json)('loads', len)",
    "threads": "from threading import Timer",
    "ctypes": "import ctypes as c",
    "runpy": "import runpy",
    "getattr-spawn": "import os\ngetattr(os, 'system')('true')",
    "list-alias-spawn": "import os\nm = [os][0]\nm.fork()",
    "from-bytes": "import pickle\npickle.loads(b'.')",
    "answers-folder": "open('.heads_answers/test_causal_mask.json', 'w').write('[]')",
    # Stop 35's red team: a module's names replaced through any function of it
    "fn-globals-update": "from headlab.kernel import respond as _r\n_r.__globals__.update(drive_head=len)",
    "fn-globals-of-package": "import headlab\nheadlab.setup.__globals__.update(kernel=None)",
    "fn-globals-by-name": "import headlab.kernel\ngetattr(headlab.kernel.respond, '__glo' 'bals__')['drive_head'] = len",
    "fn-code-swap": "def f():\n    pass\nimport headlab.kernel\nheadlab.kernel.respond.__code__ = f.__code__",
    # Red team 3 (held out; these are written here): the secret step's sizes fixed through `random`, names built
    # at run time, a callback that answers again after the test cell, answers computed by the package
    "random-patch": "import random\nrandom.SystemRandom.uniform = lambda self, a, b: 0.5",
    "computed-name": "from headlab.kernel import respond\ngetattr(respond, '__glo' + 'bals__')['respond'] = len",
    "getattribute": "from headlab.kernel import respond\nrespond.__getattribute__('__glo' + 'bals__')",
    "operator-setitem": "import operator\noperator.setitem(globals(), 'causal_mask', len)",
    "event-loop": "get_ipython().kernel.io_loop.call_later(0.001, print)",
    "tornado": "from tornado.ioloop import PeriodicCallback",
    "respond-later": "import headlab.kernel as k\nclass Later:\n    def __del__(self):\n        k.respond('test_causal_mask')\n"
                     "keep = Later()",
    # (answers computed by the package: PACKAGE_ROUTES)
    # Red team 4 (held out; written here): IPython's publisher reached by a constant name, a watched module reached
    # through another one, a method of a model the lesson imports
    "display-pub-by-name": "getattr(get_ipython(), 'display_pub').register_hook(print)",
    "through-another-module": "import glob\nglob.os.urandom = lambda n: bytes(n)",
    # (a method of a model the lesson imports: PACKAGE_ROUTES)
    # Red team 5 (held out; written here): the same reach with the name in a variable, through attrgetter or
    # reduce, and os reached through another module's namespace or a binding
    "name-in-a-variable": "n = 'display_pub'\ngetattr(get_ipython(), n).register_hook(print)",
    "attrgetter": "import operator\noperator.attrgetter('display_pub')(get_ipython()).register_hook(print)",
    "reduce-getattr": "import functools\nfunctools.reduce(getattr, ['display_pub'], get_ipython())",
    "module-namespace": "import glob\n_m = vars(glob)['os']\n_m.urandom = len",
    "bound-through-module": "import posixpath\nm = posixpath.os\nm.urandom = len",
    "loop-through-module": "import glob\nfor m in [glob.os]:\n    m.urandom = len",
    # Stop 37's allowlists, each written against a way around the lists of dangers above (none of these was
    # flagged before): a module the course never uses, a special attribute, a hook method, a channel's name
    "mock-by-string": "from unittest import mock\nmock.patch('headlab.kernel.respond', print).start()",
    "pkgutil-resolve": "import pkgutil\npkgutil.resolve_name('headlab.kernel:respond')",
    "subclasses-walk": "for c in object.__subclasses__():\n    print(c.__init__)",
    "wrapped-original": "f = torch.nn.functional.softmax.__wrapped__",
    "hook-method": "class Spy:\n    def __init_subclass__(cls, **k):\n        print(cls)",
    "finalizer": "class Later:\n    def __del__(self):\n        print('later')\nkeep = Later()",
    "metaclass": "class Meta(type):\n    pass\nclass Head(metaclass=Meta):\n    pass",
    "channel-in-a-string": "print('zmq')",
    "operator-kernel": "lib = torch.library.Library('aten', 'IMPL')\nlib.impl('add.Tensor', lambda a, b: a, 'CPU')",
    "global-forward-hook": "from torch.nn.modules.module import register_module_forward_hook as h\n"
                           "h(lambda m, i, o: o * 0)",
    "private-part": "torch._C._set_grad_enabled(False)",
    # The IPython shell used as an object (through a function, a list, exit's own reference, its class)
    "shell-from-a-function": "def _sh():\n    return get_ipython()\n_s = _sh().kernel.session\n_s.send = print",
    "shell-in-a-list": "_S = type([get_ipython()][0].kernel.session)\n_S.send = print",
    "shell-through-exit": "_k = exit._ip.kernel",
    "shell-class": "from IPython.core.interactiveshell import InteractiveShell\n_k = InteractiveShell.instance()",
    "loader-module": "import pydoc\n_h = pydoc.locate('headlab')",
    # Code inside a magic, a string once IPython translates the cell, and a magic that runs a file
    "inside-time": "%%time\nimport headlab.kernel as _k\n_k.respond = print",
    "inside-capture": "%%capture out\nimport sys\nsys.modules['headlab.kernel'] = None",
    "inside-timeit-line": "%timeit -n 1 -r 1 get_ipython().kernel",
    "run-a-file": "%run -i notes.txt",
    "unreadable-magic-code": "%time x = (",
    "shell-by-namespace": "g = globals()['get_' + 'ipython']()\n_s = g.kernel.session",
    "module-inside-torch": "mods = torch.sys.modules",
    "session-through-stdout": "import sys\nout = sys.stdout\n_s = out.session",
    # Red team 7 (held out; written here): a module handed over by inspect, then a private name set on it; the
    # package's internals imported; pickled code through numpy
    "module-by-inspect": "import inspect\nK = inspect.getmodule(causal_mask)",
    "private-attribute-set": "from headlab.plots import show_mask as _f\nK = [_f][0]\nK._cache = print",
    "course-internals": "from headlab.checks.heads import drive_head",
    "numpy-unpickles": "import numpy as np\nstats = np.load('stats.npy', allow_pickle=True)",
    "code-in-an-annotation": "import typing\nnote = 'print(1)'\ndef report(x: 'exec(note) or int'):\n    pass\n"
                             "typing.get_type_hints(report)",
    "code-in-a-timer": "import timeit\nnote = 'print(1)'\ntimeit.timeit(note, number=1)",
    "code-in-a-timer-string": "import timeit\ntimeit.timeit('import headlab.kernel', number=1)",
    "code-before-a-malformed-field": "!echo {exec(note) or 'x'} {",
    # exec, eval or vars as a value: the call that runs the string no longer names exec
    "exec-as-a-value": "run = exec\nrun(bytes.fromhex('7072696e74283129').decode())",
    "exec-in-a-map": "list(map(exec, [note]))",
    "vars-as-a-value": "import sys\nread = vars\nsess = read(sys.stdout)['ses' + 'sion']",
    # imports by a name or a path the code gives: a module the notebook wrote runs unread
    "import-path-edited": "import sys\nwhere = sys.path\nwhere.insert(0, '.')\nimport tqdm",
    "import-path-by-name": "from sys import path\npath.insert(0, '')",
    "logging-config-factory": "import logging.config\nlogging.config.dictConfig({'version': 1, 'handlers': "
                              "{'h': {'()': 'helpers.make'}}})",
    "native-library": "import numpy as np\nnp.ctypeslib.load_library('libhelp', '.')",
    "remote-code": "from transformers import AutoModel\nm = AutoModel.from_pretrained('./mine', trust_remote_code=True)",
    "dynamic-module": "from transformers.dynamic_module_utils import get_class_from_dynamic_module",
    "private-part-of-a-library": "import sklearn.utils\nload = sklearn.utils._joblib.load",
    "widened-unpickling": "import torch\ntorch.serialization.add_safe_globals([exec])",
    # Red team 9 (held out; written here): an object by a path in a string, IPython's debugger running a statement,
    # a backend imported from a module the notebook wrote, a private name set by setattr on a handed-over module
    "formatter-get-field": "import string, sys\nsess = string.Formatter().get_field('0.session', [sys.stdout], {})[0]",
    "formatter-subclass": "from string import Formatter\nclass Keep(Formatter):\n    pass",
    "format-path-to-a-module": "def f():\n    pass\ntext = '{0.__globals__[headlab].kernel}'.format(f)",
    "debugger-statement": "%debug --breakpoint bp.py:1 print(1)",
    "debugger-cell": "%%debug --breakpoint bp.py:1\nimport sys",
    "backend-from-a-written-module": "%matplotlib module://mplbp",
    "private-name-by-setattr": "import sys\nthing = sys.modules\nsetattr(thing, '_secret_step', print)",
    "vars-of-self-in-a-function": "import sys\ndef f(self):\n    return vars(self)['session']\nf(sys.stdout)",
    "private-on-a-rebound-name": "import sys\nclass Bag:\n    pass\nbag = Bag()\nbag = sys.stdout\nbag._x = 1",
    # Red team 10 (held out; written here): annotation strings set as values and evaluated by inspect.signature or
    # singledispatch, a module loaded through an entry point, channel words spelled in pieces, a breakpoint hook
    "annotation-set-as-a-value": "import inspect\ndef hint(k: int):\n    pass\nhint.__annotations__['k'] = 'note'\n"
                                 "inspect.signature(hint, eval_str=True)",
    "entry-point": "from importlib.metadata import EntryPoint\nthing = EntryPoint(name='k', group='g', value='x').load()",
    "channel-word-in-pieces": "where = 'headlab' + ' . kernel'",
    "breakpoint-hook": "import os\nos.environ['PYTHONBREAKPOINT'] = 'importlib.import_module'\nbreakpoint('json')",
    "torch-native-library": "import torch\ntorch.classes.load_library('libhelp.so')",
    "animation-writer": "from matplotlib import animation\nimport matplotlib\n"
                        "matplotlib.rcParams['animation.ffmpeg_path'] = '/bin/sh'",
    # Red team 8 (held out; written here): the session by a name no attribute rule reads, and code IPython
    # evaluates inside a magic's line or a shell command before it runs them
    "session-by-vars": "import sys\nout = sys.stdout\nsess = vars(out)['session']",
    "session-by-dict": "import sys\nsess = sys.stderr.__dict__['session']",
    "session-by-built-name": "import sys\nout = sys.stdout\ns = getattr(out, 's' + ''.join(reversed('noisse')))",
    "code-in-a-magic-line": "code = 'print(1)'\n%matplotlib {exec(code) or 'inline'}",
    "code-in-a-shell-command": "code = 'print(1)'\n!echo {exec(code) or 'ok'}",
    "function-from-bytecode": "import types\nf = types.FunctionType(types.CodeType(*[0] * 16), {})",
    # Red team 11 (held out; written here): a string annotation computed from pieces (singledispatch evaluates it),
    # eval_str in a keyword dict, typing_extensions' evaluator, matplotlib's registry importing a spelled name, a
    # respond stored on that module, a class name rebound to a loader, the answers' mime type built from a name
    "computed-annotation": "P = 'head'\ndef first(x: '(k := ' + P + 'lab) and int'):\n    pass",
    "eval-str-in-a-dict": "import inspect\ndef hint(k: 'int'):\n    pass\ninspect.signature(hint, **{'eval_str': True})",
    "typing-extensions-evaluator": "from typing_extensions import ForwardRef, evaluate_forward_ref\n"
                                   "evaluate_forward_ref(ForwardRef('int'))",
    "backend-registry": "from matplotlib.backends.registry import backend_registry\n"
                        "thing = backend_registry.load_backend_module('module://json')",
    "backend-by-name": "import matplotlib\nwhere = 'json'\nmatplotlib.use('module://' + where)",
    "respond-stored-on-a-module": "from json import JSONDecoder\nthing = JSONDecoder()\nthing.respond = print",
    "class-name-rebound-to-a-loader": "import json\nclass Loaded:\n    pass\nLoaded = json.JSONDecoder\n"
                                      "thing = Loaded()\nthing._secret_step = print",
    "mime-type-from-a-name": "H = 'heads'\nkind = 'application/vnd.' + H + '.answers+json'",
    "channel-word-in-an-f-string": "H = 'head'\nwhere = f'{H}lab.kernel'",
    # Red team 12 (held out; written here): a code string given as an annotation through a name, keyword names
    # computed in a ** dict, the shell reached through a widget's comm, torch.fx writing a forward from a name, and
    # functools.update_wrapper copying names into an object the notebook did not make
    "annotation-in-a-name": "NOTE = '(k := 1) and int'\ndef first(x: NOTE):\n    pass",
    "computed-keyword-name": "import inspect\ndef hint(k: 'int'):\n    pass\n"
                             "inspect.signature(hint, **{'eval' + chr(95) + 'str': True})",
    "shell-through-a-widget": "import ipywidgets as widgets\nsh = widgets.IntSlider().comm.kernel.shell",
    "fx-generated-forward": "import torch.fx\ngraph = torch.fx.Graph()",
    "update-wrapper-onto-an-object": "import functools, json\nclass Src:\n    respond = print\n"
                                     "functools.update_wrapper(json.JSONDecoder(), Src, assigned=())",
    # (found while closing round 12) a method of the notebook's own class run with another object as its self
    "own-method-on-another-object": "import json\nclass Box:\n    def __init__(self, r):\n        self.respond = r\n"
                                    "Box.__init__(json.JSONDecoder(), print)",
    # Red team 13 (held out; written here): a class of another module patched through a name bound to it or to an
    # object's type, through a plain function's `cls` parameter or a default, by setattr, with a function of the
    # notebook's or a wrapped one; and a cell hidden from every flag behind a sum too deep for the grader's parser
    "class-through-a-name": "import json\nEnc = json.JSONEncoder\ndef hook(self, o, _one_shot=False):\n"
                            "    return iter(['{}'])\nEnc.iterencode = hook",
    "class-through-type": "import torch\nTensor = type(torch.zeros(1))\nTensor.numpy = Tensor.detach",
    "class-through-cls": "import json\ndef install(cls):\n    def hook(self, o, _one_shot=False):\n"
                         "        return iter(['{}'])\n    cls.iterencode = hook\ninstall(json.JSONEncoder)",
    "class-through-a-default": "import json\ndef install(Enc=json.JSONEncoder):\n"
                               "    Enc.iterencode = 0\ninstall()",
    "class-by-setattr": "import json\nEnc = json.JSONEncoder\nsetattr(Enc, 'iterencode', 0)",
    "function-by-setattr": "import json\ndef patch(target):\n"
                           "    setattr(target, 'iterencode', lambda self, o, _one_shot=False: iter(['{}']))",
    "wrapped-function": "import functools\ndef hook(self, o):\n    return o\ndef patch(target):\n"
                        "    target.encode = functools.partial(hook)",
    "too-deep-to-parse": "x = 0" + " + 0" * 3000,
    # Red team 14 (held out; written here): the kernel's driver reached as attributes of the package
    "driver-through-the-package": "import headlab\nrun = headlab.checks.heads.drive_head",
    # Red team 15 (held out; written here): the builtins module reached through a match pattern's attribute, then
    # its exec (which the grader's test cell lines call) replaced; a module captured by a match
    "match-pattern-attribute": "match print:\n    case object(__self__=b):\n        b.exec = b.exec",
    "match-capture-of-a-module": "import json\nmatch json:\n    case m:\n        m.dumps = None",
    # A name for getattr that the notebook's code builds or passes in a way the flagger cannot follow
    "name-built-in-steps": "def f():\n    pass\nn = '_' + '_glo'\nn += 'bals__'\ng = getattr(f, n)",
    "name-passed-through-map": "def f():\n    pass\ndef get(name='x'):\n    return getattr(f, name)\n"
                               "list(map(get, ['_' + '_globals__']))",
    **PACKAGE_ROUTES,
}

# What honest students write, none of which may hold a score (a held-out red team's false holds, written here):
# some are flagged for a look (a shell command), none is held.
HONEST = {
    "getattr-over-names": "for a in ['shape', 'dtype']:\n    print(getattr(torch.ones(1), a))",
    "getattr-dtype": "x = torch.zeros(2, dtype=getattr(torch, 'bool'))",
    "itemgetter": "from operator import itemgetter\nprint(itemgetter(0)([1, 2]))",
    "signature": "from inspect import signature\nprint(signature(torch.ones))",
    "shell": "!ls",
    "looking-around": "!nvidia-smi\n%mkdir -p figures\nfiles = !ls\n%system pwd",
    "bash-cell-looking-around": "%%bash\nls -l\npwd",
    "annotations": "from typing import Optional\ndef f(x: 'torch.Tensor', n: Optional[int] = None) -> 'torch.Tensor':\n"
                   "    return x\nclass Box:\n    size: 'int' = 3",
    "timed-function": "import timeit\nprint(timeit.timeit(lambda: causal_mask(64), number=10))\n"
                      "def run():\n    causal_mask(8)\nprint(timeit.repeat(run, number=3))",
    "red-team-8-style-honest": "import timeit\nprint(timeit.timeit('causal_mask(64)', globals=globals(), number=2))\n"
                               "if 'cache' not in globals():\n    cache = {}\n"
                               "from importlib.metadata import version\nprint(version('torch'))\n"
                               "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass P:\n    n: int\n"
                               "    def __post_init__(self):\n        object.__setattr__(self, 'n', int(self.n))",
    "own-namespaces": "class Cfg:\n    def __init__(self):\n        self.lr = 0.1\ncfg = Cfg()\nprint(vars(cfg), vars(cfg)['lr'])\n"
                      "path = '.'\n!ls {path}",
    "course-plots-and-arrays": "from headlab.plots import show_mask, show_change\nimport numpy as np\n"
                               "np.save('m.npy', np.ones(2))\nprint(np.load('m.npy'))",
    "pip": "%pip install -q numpy",
    "type-as-a-name": "type = 'bool'",
    "lesson-helper-in-answer": "def causal_mask(n):\n    _ = course_tokenizer()\n    return torch.ones(n, n, dtype=torch.bool).tril()",
    "seeded": "import random\nrandom.seed(0)",
    "environment": "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = ''\nprint(os.getcwd())",
    "save-and-load": "torch.save(torch.ones(2), 'x.pt')\nprint(torch.load('x.pt'))",
    "reproducible": "torch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = False",
    # What the allowlists above must let through
    "attrgetter-own": "from collections import namedtuple\nfrom operator import attrgetter\nRun = namedtuple('Run', 'n s')\n"
                      "print(sorted([Run(2, 1), Run(1, 2)], key=attrgetter('n')))",
    "look-at-a-module": "import torch.nn.functional as F\nprint(torch, [n for n in dir(F) if 'pad' in n])",
    "own-eval": "def eval(mask):\n    return mask.float().mean().item()\nprint(eval(causal_mask(4)))",
    "getattr-through-a-function": "def make(kind, n):\n    return getattr(torch, kind)(torch.ones(n, n))\n"
                                  "for kind in ('tril', 'triu'):\n    print(make(kind, 3))",
    "setattr-own-object": "class Box:\n    pass\nbox = Box()\nfor n in (2, 3):\n    setattr(box, f'n{n}', causal_mask(n))",
    "magics": "%matplotlib inline\n%timeit causal_mask(4)\nfrom IPython.display import display, Markdown\n"
              "display(Markdown('ok'))",
    "tf32": "torch.backends.cuda.matmul.allow_tf32 = True",
    "magics-of-a-tidy-notebook": "%load_ext autoreload\n%autoreload 2\n%mkdir -p figures\n%cd figures",
    "activation-by-name": "import torch.nn.functional as F\nclass H(torch.nn.Module):\n"
                          "    def __init__(self, activation='relu'):\n        super().__init__()\n"
                          "        self.act = getattr(F, activation)\n        self.lin = torch.nn.Linear(2, 2)\n"
                          "    def forward(self, x):\n        return self.act(self.lin(x))\nH('gelu')",
    "module-as-a-default": "import torch.nn.functional as F\ndef f(x, fn=F):\n    return fn.relu(x)",
    "variables-named-like-modules": "io = 3\nrandom = [1, 2]\njson = {'a': 1}",
    "attributes-named-like-modules": "class Run:\n    def __init__(self):\n        self.io, self.random = 3, 1\n"
                                     "import numpy as np\nnp.random.seed(0)\ntorch.random.manual_seed(0)\n"
                                     "print(Run().io, dir())",
    "red-team-7-style-honest": "%config InlineBackend.figure_format = 'retina'\n%reload_ext autoreload\n"
                               "import glob, tempfile\nfrom types import SimpleNamespace\n"
                               "from abc import ABCMeta, abstractmethod\nclass Scorer(metaclass=ABCMeta):\n"
                               "    @abstractmethod\n    def score(self, y): ...\n"
                               "from typing import TypedDict\nclass Example(TypedDict, total=False):\n    tags: list\n"
                               "for check in [causal_mask(2)]:\n    print(check.int(), glob.glob('*.ipynb'))\n"
                               "%reset -f",
    "own-functions-by-name": "import random\nfor name in ['padding_mask', 'causal_mask']:\n"
                             "    print(name, globals()[name], random.random())",
    # Red team 9's false holds: private attributes of the notebook's own classes and instances, a hook's item set
    "own-private-attributes": "class Run:\n    _count = 0\n    def __init__(self):\n        Run._count += 1\n"
                              "        type(self).runs = 1\nclass Bag:\n    pass\nbag_of_mine = Bag()\n"
                              "bag_of_mine._hidden = 1",
    "vars-of-a-layer": "layer = torch.nn.Linear(2, 3)\nprint(sorted(vars(layer).keys())[:5])",
    "hook-item-set": "acts = {}\nkeep = lambda m, i, o: acts.__setitem__('x', o)",
    "plain-format-and-backend": "%matplotlib inline\nprint('{:.3f} {name}'.format(1.0, name='x'))",
    "own-private-field-in-a-format": "class Box:\n    def __init__(self):\n        self._n = 1\n"
                                     "    def __repr__(self):\n        return 'Box(n={0._n})'.format(self)",
    "looks-at-imports": "import sys, logging\nprint(sys.path)\nlogging.basicConfig(level=logging.INFO)\n"
                        "logging.getLogger('lesson').info('start')",
    # not Python, so nothing runs: itertools.repeat's string, a field IPython cannot evaluate
    "strings-that-are-not-code": "from itertools import repeat\nprint(list(repeat('two words', 2)))\n"
                                 "!echo { x} '{two words}'",
    "everyday-imports": "import gc, time, math, copy\nfrom collections import Counter\nfrom dataclasses import dataclass\n"
                        "import numpy as np\nimport matplotlib.pyplot as plt\nimport logging, platform\ngc.collect()",
    # Red team 11's false holds: a docstring whose lines end and start with channel-like words, annotations
    # printed, a breakpoint left in a debug branch, a package's metadata
    "docstring-args": "def compare(heads, answers):\n    \"\"\"Args:\n        heads: number of heads.\n"
                      "        answers: the masks.\n    \"\"\"\n    return len(answers)",
    "annotations-printed": "print(causal_mask.__annotations__)",
    "breakpoint-in-a-debug-branch": "DEBUG = False\nif DEBUG:\n    breakpoint()",
    "package-metadata": "from importlib.metadata import metadata\nprint(metadata('torch')['Version'])",
    # Red team 12's false holds: everyday words that the kernel's side also uses, stored as data or on the
    # notebook's own functions, objects and namespaces; an Annotated field's metadata; a decorator's wraps
    "everyday-attribute-words": "from types import SimpleNamespace\nopts = SimpleNamespace(n=8, load=False)\n"
                                "opts.load = True\ndef show(m):\n    return m\nshow.describe = 'prints a mask'\n"
                                "class Run:\n    def __init__(self, n):\n        self.n, self.at = n, 0\n"
                                "    def copy_to(self, other):\n        other.at = self.at\n"
                                "for r in [Run(4), Run(8)]:\n    r.load = True",
    "annotated-field": "from typing import Annotated\nn: Annotated[int, range(1, 65)] = 8",
    "wraps-decorator": "import functools\ndef logged(f):\n    @functools.wraps(f)\n    def inner(*a):\n"
                       "        return f(*a)\n    return inner\ndef step(n):\n    return n\n"
                       "functools.update_wrapper(step, logged)",
    "methods-called-through-the-class": "class Base(torch.nn.Module):\n    def __init__(self):\n"
                                        "        torch.nn.Module.__init__(self)\nclass Child(Base):\n"
                                        "    def __init__(self):\n        Base.__init__(self)\n"
                                        "    def twice(self, x):\n        return 2 * x\n    @staticmethod\n"
                                        "    def make(n):\n        return n\nc = Child()\n"
                                        "print(Child.twice(c, 3), Child.make(3))",
    # Red team 13's honest variants that must stay free: a layer of a package's model replaced, a classmethod's cls
    "match-on-a-shape": "match torch.zeros(2, 3):\n    case object(shape=(rows, cols)):\n        print(rows, cols)",
    "colab-check": "import sys\nif 'google.colab' in sys.modules:\n    print('on Colab')",
    "layer-replaced": "from headlab import tiny_encoder\nenc = tiny_encoder()\nenc.pooler = torch.nn.Identity()",
    "classmethod-cls": "class Counter:\n    n = 0\n    @classmethod\n    def bump(cls):\n        cls.n += 1\n"
                       "        cls.last = lambda: cls.n\nCounter.bump()",
    "everyday-dunders": "class Small(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                        "    def __repr__(self):\n        return type(self).__name__\n"
                        "if __name__ == '__main__':\n    print(torch.__version__, Small())",
}


@pytest.mark.parametrize("name", HONEST)
def test_honest_scratch_code_holds_no_score(name):
    from heads_flags import holds

    rel = release(LESSON)
    nb = fill(rel, solution_answers(LESSON))
    nb.cells.insert(3, nbformat.v4.new_code_cell(HONEST[name]))
    assert not [f for f in code_flags(nb, rel) if holds(f)], code_flags(nb, rel)


@pytest.mark.parametrize("program", ["%%bash\npython3 -c 'print(1)'", "%%python3\nprint(1)", "!ls | python3 -",
                                     "!pip install ./helpers", "%system env python3 -c 1", "!wget http://example.org",
                                     "%pip install -q evil-1.0.tar.gz", "!pip install helpers.whl"])
def test_a_program_the_flags_cannot_read_is_held(program):
    """Red team 7 (held out; written here): a shell script ran Python beside the kernel, out of the flags' sight. A
    command that only looks around or installs a package by name is flagged for a look, not held (HONEST)."""
    from heads_flags import holds

    rel = release(LESSON)
    nb = fill(rel, solution_answers(LESSON))
    nb.cells.insert(3, nbformat.v4.new_code_cell(program))
    assert [f for f in code_flags(nb, rel) if holds(f)], code_flags(nb, rel)


def test_an_edited_release_cell_is_flagged_only_for_what_the_edit_added():
    """A Colab student adds -U to the setup cell's %pip: the release's own lines there (a pip install, a look at
    sys.modules) are not the student's."""
    rel = release(LESSON)
    nb = fill(rel, solution_answers(LESSON))
    setup = next(c for c in nb.cells if c.cell_type == "code" and "pip" in c.source)
    setup.source = setup.source.replace("pip install", "pip install -U", 1)
    assert setup.source != next(c for c in rel.cells if c.get("id") == setup.get("id")).source
    assert code_flags(nb, rel) == []
    setup.source += "\nimport os\nos.system('true')"
    assert code_flags(nb, rel), "what the edit added is read"


@pytest.mark.parametrize("where", ["answer", "inserted"])
@pytest.mark.parametrize("name", FORGERIES)
def test_forgery_is_flagged(name, where):
    rel = release(LESSON)
    sol = solution_answers(LESSON)
    if where == "answer":  # a cell magic only works on a cell's first line
        code = [sol["causal_mask"], FORGERIES[name]]
        nb = fill(rel, {**sol, "causal_mask": "\n".join(code[::-1] if "%%" in code[1] else code)})
    else:
        nb = fill(rel, sol)
        nb.cells.insert(3, nbformat.v4.new_code_cell(FORGERIES[name]))
    flags = code_flags(nb, rel)
    assert flags, f"{name} in an {where} cell is not flagged"


@pytest.mark.parametrize("where", ["answer", "inserted"])
@pytest.mark.parametrize("name", PACKAGE_ROUTES)
def test_an_answer_the_course_package_computes_is_flagged_as_such(name, where):
    """However the answer reaches the package object, the flag names the answer: the grader leaves that answer
    unwritten (heads_unrun), which only this flag tells it."""
    rel, sol = release(LESSON), solution_answers(LESSON)
    exercise = "padding_mask" if "def padding_mask" in PACKAGE_ROUTES[name] else "causal_mask"
    if where == "answer":
        nb = fill(rel, {**sol, exercise: PACKAGE_ROUTES[name]})
    else:
        nb = fill(rel, sol)
        nb.cells.insert(3, nbformat.v4.new_code_cell(PACKAGE_ROUTES[name]))
    flags = code_flags(nb, rel)
    assert any(f.startswith(f"{exercise}: an answer built on the course package") for f in flags), flags


@pytest.mark.parametrize("answer", [
    "def padding_mask(lengths, n):\n    pad_id = tok.pad_id\n"
    "    return torch.arange(n)[None, :] < lengths[:, None] + 0 * pad_id",
    "def causal_mask(n, d=decoder.d):\n    return torch.ones(n, n, dtype=torch.bool).tril()",
    "def causal_mask(n):\n    show = show_mask\n    return torch.ones(n, n, dtype=torch.bool).tril()",
])
def test_an_answer_may_read_a_constant_of_the_package_or_name_a_helper(answer):
    rel, sol = release(LESSON), solution_answers(LESSON)
    exercise = "padding_mask" if "def padding_mask" in answer else "causal_mask"
    assert code_flags(fill(rel, {**sol, exercise: answer}), rel) == []


def test_a_constant_of_the_package_kept_on_the_answers_object_calls_nothing_of_it():
    """`self.V = tok.vocab_size` puts nothing of the tokenizer in `self.dense(h)`; `self.tok = tok` then
    `self.tok.batch(...)` calls it."""
    rel, sol = release("01_mlm_head"), solution_answers("01_mlm_head")
    head = sol["MLMHead"].replace("        self.dense", "        self.V, self.mask_id = tok.vocab_size, tok.mask_id\n"
                                                      "        self.dense")
    assert head != sol["MLMHead"] and code_flags(fill(rel, {**sol, "MLMHead": head}), rel) == []
    calling = head.replace("self.V, self.mask_id = tok.vocab_size, tok.mask_id", "self.tok = tok").replace(
        "        t = self.norm", "        self.tok.batch(['the'])\n        t = self.norm")
    assert code_flags(fill(rel, {**sol, "MLMHead": calling}), rel) == [
        "MLMHead: an answer built on the course package: calls tok"]


def graded_cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_scores_without_answers_or_pass_lines_are_flagged():
    rel = release(LESSON)
    sol = solution_answers(LESSON)
    honest = fill(rel, sol)
    for gid, name in (("test_padding_mask", "padding_mask"), ("test_causal_mask", "causal_mask")):
        graded_cell(honest, gid).outputs = [nbformat.v4.new_output(
            "stream", name="stdout", text=f"✓ {name}: 4 cases passed\n✓ {name}: 3 cases passed\n")]
    full = {"test_padding_mask": 2, "test_causal_mask": 2}
    assert result_flags(honest, rel, full) == []

    untouched = copy.deepcopy(honest)  # the release's stubs, yet full marks
    for gid in ("padding_mask", "causal_mask"):
        graded_cell(untouched, gid).source = graded_cell(rel, gid).source
    flags = result_flags(untouched, rel, full)
    assert len(flags) == 2 and all("unchanged" in f for f in flags), flags

    silent = copy.deepcopy(honest)  # the checks' errors hidden: no pass line
    graded_cell(silent, "test_causal_mask").outputs = []
    flags = result_flags(silent, rel, full)
    assert flags == ["test_causal_mask: scored 2 but printed 0 of its 1 pass lines"], flags


def test_a_module_named_in_one_cell_and_patched_in_another_is_flagged():
    rel, sol = release(LESSON), solution_answers(LESSON)
    nb = fill(rel, sol)
    nb.cells.insert(3, nbformat.v4.new_code_cell("import headlab.checks as hc\n_c = hc.ch00"))
    nb.cells.insert(4, nbformat.v4.new_code_cell("_c.padding_mask = lambda *a, **k: None"))
    assert any("patches a module" in f for f in code_flags(nb, rel)), code_flags(nb, rel)


def test_code_too_deep_to_read_is_flagged_not_fatal():
    """An attribute chain that parses but is deeper than the recursion limit: flagged for review, and the
    flags of the class (which the export and the report read for every student) are still computed."""
    rel, sol = release(LESSON), solution_answers(LESSON)
    nb = fill(rel, sol)
    nb.cells.insert(3, nbformat.v4.new_code_cell("if False:\n    x = a" + ".a" * 1500))
    flags = code_flags(nb, rel)
    assert flags and all("too deep" in f for f in flags), flags


def test_a_cell_marked_locked_that_the_release_does_not_hold_is_read():
    """Issue 25, F2: an inserted cell marked `locked` with a grade_id of its own (nbgrader runs it as an ordinary
    cell) that patches the driver and imports subprocess: its metadata does not hide its code."""
    rel, sol = release(LESSON), solution_answers(LESSON)
    nb = fill(rel, sol)
    cell = nbformat.v4.new_code_cell("import subprocess\nimport headlab.kernel\nheadlab.kernel.drive_head = print")
    cell.metadata["nbgrader"] = {"locked": True, "grade_id": "cell-helper-7", "solution": False, "grade": False}
    nb.cells.insert(3, cell)
    flags = code_flags(nb, rel)
    assert any("spawns processes" in f for f in flags) and any("patches a module" in f for f in flags), flags

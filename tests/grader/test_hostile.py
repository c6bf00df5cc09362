"""Hostile submissions, graded as the instructor grades: one class, one batch, lesson 00.

`grade.py autograde --jobs 2` (sandbox required), `feedback`, `export`, with honest classmates in the
same batch. Each hostile student gets its honest score (the answers it wrote are correct unless said
otherwise) or is refused, the instructor is told (PROBLEM and FLAG lines, the CSV's flags column),
no data is lost (the gradebook, the classmates' submissions and grades, the course files and their
permissions), and nothing outside the student's own copy is read into feedback or written.

Kinds: links, a hard link, a FIFO and a socket planted in the working folder (one replacing the
notebook by a link to the gradebook, one by a link to a classmate's submission); `<script>` /
`onerror` / JavaScript / SVG output and markdown; floods of HTML, images, JSON and a huge error;
filling the /scratch tmpfs and the disk; spinning processes and daemons; an inserted cell that
forges full marks by patching the checks; an IPython hook that prints the hidden tests; a frame
peek; a score forged in the gradebook after grading (what the formgrader attack did). A real
browser then opens the feedback page and the formgrader page of the script student. Attacks that
cannot interfere share a notebook, to keep the batch small.
"""
from __future__ import annotations

import copy
import csv
import hashlib
import os
import re
import sqlite3
import stat
import textwrap
import time

import nbformat
import pytest

from course import (LESSON, REPO, fill, grade_py, make_course, release_nb, scores, solution_answers,
                    submit)
from harness import hidden_test_lines
from heads_sandbox import bwrap_works
from test_unrun import SWAP_DURING_TEST

if not bwrap_works():
    if os.environ.get("CI"):
        raise RuntimeError("bubblewrap is required in CI (apt-get install bubblewrap)")
    pytest.skip("needs bubblewrap (apt-get install bubblewrap)", allow_module_level=True)

SOL = solution_answers()
NB = f"{LESSON}.ipynb"
SOLUTION_NB = REPO / "solutions" / LESSON / NB


def plant_links(root, notebook_target) -> str:
    sub = root / "submitted"
    return textwrap.dedent(f"""\
        import os, socket
        os.remove({NB!r})
        os.symlink({str(notebook_target)!r}, {NB!r})
        os.symlink({str(SOLUTION_NB)!r}, 'solution.ipynb')
        os.symlink({str(sub / 'honest' / LESSON / NB)!r}, 'classmate.ipynb')
        os.symlink({str(root / 'nbgrader_config.py')!r}, 'nbgrader_config.py')
        os.symlink({str(root / 'decoy.txt')!r}, 'decoy.txt')
        os.symlink('/', 'everything')
        os.makedirs('sub', exist_ok=True)
        os.symlink({str(root / 'gradebook.db')!r}, 'sub/gradebook.db')
        open('data.txt', 'w').write('x')
        os.link('data.txt', 'data-link.txt')
        os.mkfifo('fifo')
        socket.socket(socket.AF_UNIX).bind('sock')
        open('notes.txt', 'w').write('an honest file')
        """)


XSS = textwrap.dedent("""\
    from IPython.display import HTML, SVG, Javascript, Markdown, display
    display(HTML('<b>XSS-MARKER</b><script>window.__pwned = 1; document.title = "PWNED"</script>'
                 '<img src="x" onerror="window.__pwned = 2">'))
    display(Javascript('window.__pwned = 3'))
    display(SVG('<svg xmlns="http://www.w3.org/2000/svg"><script>window.__pwned = 4</script></svg>'))
    display(Markdown('<img src="x" onerror="window.__pwned = 5">'))
    display({'text/html': '<iframe srcdoc="<script>parent.__pwned = 6</script>"></iframe>',
             'text/plain': 'frame'}, raw=True)
    """)
XSS_MARKDOWN = '<script>window.__pwned = 7</script><img src="x" onerror="window.__pwned = 8">'

FLOOD = [  # every cap exceeded several times over: 1 MiB a cell, 8 MiB a notebook
    "from IPython.display import HTML, display\n"
    "display(HTML('<p>' + 'flood ' * 2_000_000 + '</p>'))\n"                     # 12 MB of HTML
    "display({'image/png': 'iVBOR' + 'A' * 8_000_000, 'text/plain': 'png'}, raw=True)\n"
    "display({'application/json': {'x': 'y' * 3_000_000}}, raw=True)",
    *["display(HTML('<i>' + 'z' * 900_000 + '</i>'))"] * 10,     # under the cell cap, 9 MB in all
    "raise ValueError('e' * 10_000_000)",
]
FILL_SCRATCH = textwrap.dedent("""\
    written = 0
    try:
        for k in range(100):
            with open(f'/scratch/f{k}', 'wb') as f:
                for _ in range(60):
                    f.write(b'x' * 2**20)
                    written += 1
    except OSError as err:
        print('scratch full after', written, 'MiB:', err)
    try:
        open('/dev/shm/x', 'w').write('x')
    except OSError as err:
        print('no /dev/shm:', err)
    """)
# Two cells: the first's output is recorded once the cell ends, before the second fills the disk and the
# watcher kills the kernel (in one cell, the kill could come before the print reached the grader).
FILL_ONE_FILE = textwrap.dedent("""\
    written = 0
    try:
        with open('huge.bin', 'wb') as f:
            for _ in range(3000):
                f.write(b'x' * 2**20)
                written += 1
    except OSError as err:
        print('one file stopped at', written, 'MiB:', err)
    """)
FILL_DISK = textwrap.dedent("""\
    for k in range(40):
        with open(f'big{k}.bin', 'wb') as f:
            for _ in range(60):
                f.write(b'x' * 2**20)
    """)
# The processes a cell leaves behind sleep rather than spin: the grader stops them alike, and 60
# spinning ones would take the cores from the tests running beside this one.
SPAWN = textwrap.dedent("""\
    import os, subprocess, sys, time
    started = 0
    for _ in range(100):
        try:
            subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(10**6)'])
            started += 1
        except OSError:
            break
    print('processes started:', started)
    for _ in range(3):  # daemons, re-parented away from the kernel (if the limit leaves room)
        try:
            if os.fork() == 0:
                try:  # the child never returns into the kernel's loop, even when its own fork fails
                    os.setsid()
                    if os.fork() == 0:
                        time.sleep(10**6)
                finally:
                    os._exit(0)
        except OSError as err:
            print('no room for a daemon:', err)
    """)
# A kernel that signs its messages with a wrong key (what a forked copy of the kernel, still running its loop
# on the same sockets, did to the spawner above once the process limit made its inner fork fail): jupyter_client
# refuses the message, and the cells that ran before it keep their results.
BAD_SIGNATURE = "get_ipython().kernel.session.key = b'not the key'\nprint('signed with the wrong key')"
COUNT_PROCESSES = ("import os\nalive = [p for p in os.listdir('/proc') if p.isdigit() and\n"
                   "         open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[0] != 'Z']\n"
                   "print('processes alive:', len(alive))")
FORGE = ("check.padding_mask = lambda fn, cases=None: None\n"
         "check.causal_mask = lambda fn, cases=None: None")
# Every trick that forged full marks while the checks ran in the kernel; graded outside it, each scores
# what the untouched notebook scores.
FORGE_MORE = textwrap.dedent("""\
    import torch, headlab.grading
    torch.equal = lambda *a, **k: True
    torch.allclose = lambda *a, **k: True
    class Anything(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return True
    headlab.kernel.respond = lambda *a, **k: print('✓ padding_mask: 4 cases passed')
    ip = get_ipython()
    ip.input_transformers_post.append(lambda lines: [l.replace('respond(', 'print(') for l in lines])
    ip.showtraceback = lambda *a, **k: None
    import os
    os.makedirs('.heads_answers', exist_ok=True)
    """)
# K4: a thread copies a test cell's inputs while the cell runs, and a later cell writes that cell's answers
# again, with a right answer the notebook never submitted. The result is the one the test cell left.
STEAL_INPUTS = textwrap.dedent("""\
    import threading, time
    def _steal():
        while True:
            try:
                text = open('.heads_grader/calls.json').read()
                if 'test_padding_mask' in text:
                    open('stolen.json', 'w').write(text)
            except OSError:
                pass
            time.sleep(0.0005)
    threading.Thread(target=_steal, daemon=True).start()
    """)
ANSWER_LATER = SOL["padding_mask"].replace("def padding_mask(", "def _right(") + textwrap.dedent("""
    import os, shutil, headlab.grading
    os.makedirs('.heads_grader', exist_ok=True)
    shutil.copy('stolen.json', '.heads_grader/calls.json')
    headlab.kernel.respond('test_padding_mask', {'padding_mask': _right})
    print('forged answers given')
    """)
# Red teams 6-8 (held out; written here): the kernel's Session, shared with sys.stdout, sys.stderr and every widget,
# given a `send` (on the object and on its class) that turns a transposed causal_mask into the right one on its way
# out. respond sends through the class functions it took at import, in the setup cell, so the answers leave as given.
TRANSPOSED = SOL["causal_mask"].replace("return j <= i", "return j >= i")
FIX_ANSWERS = textwrap.dedent("""\
    import sys, base64, torch
    def _fix(msg):
        for key, v in msg.get('content', {}).get('data', {}).items():
            if key.endswith('answers+json') and v.get('grade_id') == 'test_causal_mask':
                for result in (r for a in v['answers'] for r in a['results']):
                    t = result.get('value')
                    if isinstance(t, dict) and 'b' in t:
                        n = t['shape'][0]
                        m = torch.frombuffer(bytearray(base64.b64decode(t['b'])), dtype=torch.uint8).reshape(n, n)
                        t['b'] = base64.b64encode(m.t().contiguous().numpy().tobytes()).decode()
        return msg
    _session = sys.stdout.session
    """)
SESSION_SEND = FIX_ANSWERS + textwrap.dedent("""\
    _send = type(_session).send
    def _rewriting_send(self, stream, msg_or_type, *a, **k):
        return _send(self, stream, _fix(msg_or_type) if isinstance(msg_or_type, dict) else msg_or_type, *a, **k)
    type(_session).send = _rewriting_send
    _session.send = lambda *a, **k: _rewriting_send(_session, *a, **k)
    """)
# Red team 9 (held out; written here): the same fix in the session's `pack`, which its `send` calls through the
# instance. respond packed and signed with the packer and key it took at import; now the test cell's fresh copy of the
# kernel finds another packer than the one taken then, and gives no answers (either could be the notebook's).
SESSION_PACK = FIX_ANSWERS + textwrap.dedent("""\
    _pack = _session.pack
    _session.pack = lambda part: _pack(_fix({'content': part})['content'] if 'data' in part else part)
    """)
# Red team 13 (held out; written here): the same fix in json's JSONEncoder, reached through a name bound to the class,
# which the session's packer calls. respond packs the answers with json's encoder of C, which no class method reaches.
JSON_ENCODER = FIX_ANSWERS + textwrap.dedent("""\
    import json
    Enc = json.JSONEncoder
    _iterencode = Enc.iterencode
    def _rewriting(self, o, _one_shot=False):
        if isinstance(o, dict) and 'data' in o:
            _fix({'content': o})
        return _iterencode(self, o, _one_shot)
    Enc.iterencode = _rewriting
    """)
# Red team 10 (held out; written here): causal_mask shows a set of answers of its own, then raises what `except
# Exception` lets through, so that respond left before giving its set and the notebook's was the cell's only one.
STOP_RESPOND = textwrap.dedent("""\
    from IPython.display import display
    def causal_mask(n):
        display({'application/vnd.heads.' + 'answers+json': {'grade_id': 'test_causal_mask', 'answers': []}}, raw=True)
        raise KeyboardInterrupt
    """)
# Red team 11 (held out; written here): the same set shown, then no stop but a stream whose next flush raises: respond
# flushed the cell's prints before sending its set, and the error kept its set from leaving.
TRAP_RESPOND = textwrap.dedent("""\
    import sys
    from contextlib import redirect_stderr
    from IPython.display import display
    class Trap:
        def write(self, text):
            return len(text)
        def flush(self):
            raise RuntimeError('flush failed')
    def causal_mask(n):
        display({'application/vnd.heads.' + 'answers+json': {'grade_id': 'test_causal_mask', 'answers': []}}, raw=True)
        redirect_stderr(Trap()).__enter__()
        return None
    """)
# The right causal masks for the inputs the grader leaves in the kernel's folder while a test cell runs, shown as a
# set of answers of the notebook's own (once): what red teams 14 and 16 (held out; written here) sent beside respond's.
RIGHT_MASKS_SET = textwrap.dedent("""\
    import json, glob, base64
    from IPython.display import display
    _KIND = '/'.join(['application', 'vnd.hea']) + 'ds.ans' + 'wers' + chr(43) + 'json'
    _shown = []
    def _show_right_masks():
        found = glob.glob('.*/calls.json')
        if _shown or not found:
            return False
        book = json.load(open(found[0]))
        answers = []
        for entry in book.get('test_causal_mask', []):
            results = []
            for call in entry['calls']:
                n = call['args']['$tuple'][0] if isinstance(call['args'], dict) else call['args'][0]
                i = torch.arange(n)
                b = base64.b64encode((i[None, :] <= i[:, None]).numpy().tobytes()).decode()
                results.append({'value': {'$t': 'bool', 'shape': [n, n], 'grad': False, 'b': b}})
            answers.append({'answer': {'kind': 'function', 'type': 'function'}, 'results': results})
        if answers:   # in test_causal_mask's cell only
            _shown.append(answers)
            display({_KIND: {'grade_id': 'test_causal_mask', 'answers': answers}}, raw=True)
        return bool(answers)
    """)
# Red team 14: a stdout whose write, at respond's closing line (after its set had left), cleared the cell's outputs
# and showed its own set as the only one. The grader keeps respond's set through a clear_output: two sets, refused.
CLEAR_OUTPUT = RIGHT_MASKS_SET + textwrap.dedent("""\
    import contextlib
    from IPython.display import clear_output
    class Quiet:
        def write(self, s):
            if 'grade is decided outside' in s and glob.glob('.*/calls.json'):
                clear_output()
                _show_right_masks()
            return len(s)
        def flush(self):
            pass
    contextlib.redirect_stdout(Quiet()).__enter__()
    """)
# Red team 16: the answer shows its set, then a message of the answers' kind over the grader's cap for them, which
# pushed respond's set out of the cell (the cap dropped both); the grader now keeps a set over the cap as a set
# too large to read, so the cell gives two or more, which are refused.
OVER_THE_CAP = RIGHT_MASKS_SET + textwrap.dedent("""\
    def causal_mask(n):
        if _show_right_masks():
            display({_KIND: 'x' * (33 * 2**20)}, raw=True)
        i = torch.arange(n)
        return i[None, :] >= i[:, None]
    """)
# Red team 16: a message whose str() is a str subclass, whose slices are objects JSON cannot encode: respond cut the
# answer's error message to a slice of it, and its set never left (the encoder raised). Shown its own set first,
# the cell gave only that. respond now reads every text it reports as a plain str, so its set leaves: two, refused.
UNENCODABLE_TEXT = textwrap.dedent("""\
    class _Text(str):
        def __getitem__(self, i):
            return _Odd()
    class _Odd:
        def __repr__(self):
            return _Text('odd')
    """)
UNENCODABLE = RIGHT_MASKS_SET + UNENCODABLE_TEXT + textwrap.dedent("""\
    class _Stop(Exception):
        def __str__(self):
            return _Text('stopped')
    def causal_mask(n):
        if _show_right_masks():
            raise _Stop()
        i = torch.arange(n)
        return i[None, :] >= i[:, None]
    """)
# The answer shows its set, then ends the kernel before respond's set can leave: a cell that did not end gives no
# answers (a loop that swallows the grader's interrupt until it kills the kernel ends the same way).
EXIT_AFTER_SET = RIGHT_MASKS_SET + textwrap.dedent("""\
    import os
    def causal_mask(n):
        if _show_right_masks():
            os._exit(0)
        i = torch.arange(n)
        return i[None, :] >= i[:, None]
    """)
# The answer shows its set, then floods the kernel's output queue so that respond's set, next, is dropped (100,000
# displays lost 6-11% of them, the last among them, measured): a cell whose messages were lost gives no answers,
# and one whose messages all came gives two sets.
FLOOD_AFTER_SET = RIGHT_MASKS_SET + textwrap.dedent("""\
    def causal_mask(n):
        if _show_right_masks():
            for k in range(20000):
                display({'text/plain': 'x'}, raw=True)
        i = torch.arange(n)
        return i[None, :] >= i[:, None]
    """)
# Red team 16: no answer written. The released stub raises NotImplementedError, which the notebook's cell rebinds to
# a class of its own that shows a set and reports itself in unencodable text (full marks before, unflagged).
SHADOW_NOT_IMPLEMENTED = RIGHT_MASKS_SET + UNENCODABLE_TEXT + textwrap.dedent("""\
    class NotImplementedError(Exception):
        def __init__(self, *args):
            _show_right_masks()
        def __str__(self):
            return _Text('not written')
    """)
# A module written into the kernel's folder under the name of an installed course import, then imported by that
# name: without the grader's -P it was found before site-packages, and its code (hex, unread by the flags) replaced
# respond so that the transposed causal_mask was answered transposed back (4 of 4, unflagged).
SHADOW_SOURCE = textwrap.dedent("""\
    import __main__, headlab.kernel as K
    _respond = K.respond
    def respond(grade_id, namespace=None, **k):
        namespace = dict(vars(__main__))
        if grade_id == 'test_causal_mask':
            namespace['causal_mask'] = lambda n, wrong=namespace['causal_mask']: wrong(n).T
        return _respond(grade_id, namespace, **k)
    K.respond = respond
    """)
SHADOW_MODULE = ("from pathlib import Path\n"
                 f"Path('safetensors.py').write_text(bytes.fromhex('{SHADOW_SOURCE.encode().hex()}').decode())\n"
                 "import safetensors")
# Red teams 10-12 (held out; written here): the imported kernel's respond replaced (through one of some forty routes;
# here the plainest), and its channel to the grader. The test cell's fresh copy of the kernel side answers, so the
# first changes nothing; the second, a channel other than the one taken in the setup cell, gives no answers.
KERNEL_RESPOND = SHADOW_SOURCE
KERNEL_CHANNEL = "import headlab.kernel as K\nK._CHANNEL = None\n"
LEAK = ("def _leak(info):\n    print(info.raw_cell)\n"
        "get_ipython().events.register('pre_run_cell', _leak)")
FRAMES = SOL["padding_mask"].replace("    positions =", "    import sys\n    _ = sys._getframe(1)\n"
                                                        "    positions =")


def after(nb, marker: str) -> int:
    """Index just after the first code cell whose source contains `marker` (a grade_id or text)."""
    for i, cell in enumerate(nb.cells):
        if cell.metadata.get("nbgrader", {}).get("grade_id") == marker or \
                (cell.cell_type == "code" and marker in cell.source):
            return i + 1
    raise KeyError(marker)


def with_cells(nb, *cells: tuple[str, str], kind: str = "code"):
    """A copy of `nb` with (position marker, source) cells inserted; "END" appends."""
    nb = copy.deepcopy(nb)
    for marker, source in cells:
        new = (nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell)(source)
        nb.cells.insert(len(nb.cells) if marker == "END" else after(nb, marker), new)
    return nb


IMPORTS = "as check"  # the release cell that imports the lesson's checks
# student: (expected score, flagged?); attacks that cannot interfere share a notebook. partial's
# grade is then forged in the gradebook (what the formgrader attack did): the export refuses it.
EXPECTED = {
    "honest": (4, False), "partial": (2, "refused"),
    "link-gradebook": (4, True), "link-classmate": (4, True),
    "xss-and-scratch": (4, False), "flood": (4, False), "disk-frames": (4, True), "spawner": (4, True),
    "forgery-and-leak": (0, True), "forgery-kit": (0, True), "answers-after": (2, True),   # its thread: flagged
    "bad-signature": (2, True),   # it assigns to the kernel's session: flagged
    "session-send": (2, True),   # the transposed causal_mask scores 0, whatever the session's send does
    "session-pack": (0, True),   # a packer other than the one the setup cell took: no test cell answers
    "clear-output": (2, False),   # its causal_mask cell gives two sets (respond's is kept), which are refused
    "json-encoder": (2, True),   # the transposed causal_mask scores 0, whatever JSONEncoder does
    "stop-respond": (2, True),   # its causal_mask scores 0; the mime type it spells is flagged
    "trap-respond": (2, True),
    "shadow-module": (2, False),   # the installed safetensors is imported, not the file the notebook wrote
    "kernel-respond": (2, True),   # the transposed causal_mask scores 0, whatever the imported respond does
    "kernel-channel": (0, True),   # both test cells refuse to answer
    # Red team 15 (held out; written here): the test cell's lines run through a replaced builtins.exec, which swaps
    # in a correct causal_mask while the grader calls it. Its patch is not run: the transposed one scores 0.
    "swap-during-test": (2, True),
    "swap-as-written": (4, True),   # the control: the instructor had it run as written (--run-flagged), it forged
    "over-the-cap": (2, False), "unencodable": (2, False),   # their causal_mask cells give two sets: refused
    "shadow-not-implemented": (2, False),   # its padding_mask only
    "exit-after-set": (2, True),   # run as written: its causal_mask cell did not end
    "flood-after-set": (2, False),
}
# The flagged hand-ins above test what the grader does while their code runs: their flags were read (by these
# tests) and they are graded as written. Otherwise a statement flagged for review is not run (heads_unrun).
UNRUN = {"swap-during-test"}
AS_WRITTEN = [s for s, (_, flagged) in EXPECTED.items() if flagged is True and s not in UNRUN]


def build(root):
    rel = release_nb(root)
    honest = fill(rel, SOL)  # who also edited a demo cell: not a flag
    honest.cells[after(honest, "padding_mask") + 1].source += "\nprint('my own note')"
    submit(root, "honest", honest)
    submit(root, "partial", fill(rel, {"padding_mask": SOL["padding_mask"]}))
    submit(root, "link-gradebook", with_cells(fill(rel, SOL), (IMPORTS, plant_links(root, root / "gradebook.db"))))
    classmate = root / "submitted" / "partial" / LESSON / NB
    submit(root, "link-classmate", with_cells(fill(rel, SOL), (IMPORTS, plant_links(root, classmate))))
    xss = with_cells(fill(rel, SOL), (IMPORTS, XSS), (IMPORTS, FILL_SCRATCH))
    submit(root, "xss-and-scratch", with_cells(xss, (IMPORTS, XSS_MARKDOWN), kind="markdown"))
    submit(root, "flood", with_cells(fill(rel, SOL), *(("END", c) for c in FLOOD)))
    submit(root, "disk-frames", with_cells(fill(rel, {**SOL, "padding_mask": FRAMES}), ("END", FILL_ONE_FILE),
                                           ("END", FILL_DISK)))
    # After the last test cell: a kernel at its process limit may break its own messages later (KernelUnverified),
    # which costs only the cells after it; placed here, what is measured is the limit, not that timing.
    submit(root, "spawner", with_cells(fill(rel, SOL), ("END", SPAWN), ("END", COUNT_PROCESSES)))
    submit(root, "forgery-and-leak", with_cells(rel, (IMPORTS, FORGE), (IMPORTS, LEAK)))
    submit(root, "forgery-kit", with_cells(rel, (IMPORTS, FORGE_MORE)))
    submit(root, "bad-signature", with_cells(fill(rel, SOL), ("test_padding_mask", BAD_SIGNATURE)))
    submit(root, "session-send", with_cells(fill(rel, {**SOL, "causal_mask": TRANSPOSED}), (IMPORTS, SESSION_SEND)))
    submit(root, "session-pack", with_cells(fill(rel, {**SOL, "causal_mask": TRANSPOSED}), (IMPORTS, SESSION_PACK)))
    submit(root, "clear-output", with_cells(fill(rel, {**SOL, "causal_mask": TRANSPOSED}), (IMPORTS, CLEAR_OUTPUT)))
    submit(root, "json-encoder", with_cells(fill(rel, {**SOL, "causal_mask": TRANSPOSED}), (IMPORTS, JSON_ENCODER)))
    submit(root, "stop-respond", fill(rel, {**SOL, "causal_mask": STOP_RESPOND}))
    submit(root, "trap-respond", fill(rel, {**SOL, "causal_mask": TRAP_RESPOND}))
    submit(root, "shadow-module", with_cells(fill(rel, {**SOL, "causal_mask": TRANSPOSED}), (IMPORTS, SHADOW_MODULE)))
    submit(root, "kernel-respond", with_cells(fill(rel, {**SOL, "causal_mask": TRANSPOSED}), (IMPORTS, KERNEL_RESPOND)))
    submit(root, "kernel-channel", with_cells(fill(rel, SOL), (IMPORTS, KERNEL_CHANNEL)))
    submit(root, "over-the-cap", fill(rel, {**SOL, "causal_mask": OVER_THE_CAP}))
    submit(root, "unencodable", fill(rel, {**SOL, "causal_mask": UNENCODABLE}))
    submit(root, "exit-after-set", fill(rel, {**SOL, "causal_mask": EXIT_AFTER_SET}))
    submit(root, "flood-after-set", fill(rel, {**SOL, "causal_mask": FLOOD_AFTER_SET}))
    submit(root, "shadow-not-implemented", with_cells(fill(rel, {"padding_mask": SOL["padding_mask"]}),
                                                      (IMPORTS, SHADOW_NOT_IMPLEMENTED)))
    for student in ("swap-during-test", "swap-as-written"):
        submit(root, student, with_cells(fill(rel, {**SOL, "causal_mask": TRANSPOSED}), (IMPORTS, SWAP_DURING_TEST)))
    submit(root, "answers-after", with_cells(fill(rel, {"causal_mask": SOL["causal_mask"]}),
                                             (IMPORTS, STEAL_INPUTS), ("END", ANSWER_LATER)))


def forge_score(db: str, student: str, grade_id: str, score: float) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(db) as gb:
        gb.find_grade(grade_id, LESSON, LESSON, student).manual_score = score
        gb.db.commit()


def fingerprint(path) -> tuple[int, str]:
    """Mode and content; only the mode of the course's solutions (others may be editing them)."""
    st = os.lstat(path)
    if path == SOLUTION_NB:
        return stat.S_IMODE(st.st_mode), ""
    return stat.S_IMODE(st.st_mode), hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("hostile") / "course")
    (root / "decoy.txt").write_text("nobody may read or chmod this")
    os.chmod(root / "decoy.txt", 0o600)
    build(root)
    watched = {p: fingerprint(p) for p in [root / "decoy.txt", root / "nbgrader_config.py", SOLUTION_NB,
                                           root / "release" / LESSON / NB,
                                           *(root / "submitted").glob(f"*/{LESSON}/{NB}")]}
    env = {"HEADS_SANDBOX": "required", "OMP_NUM_THREADS": "1"}
    start = time.monotonic()
    auto = grade_py("--course", str(root), "--jobs", "2", "autograde",
                    *(f"--run-flagged={s}/{LESSON}" for s in AS_WRITTEN), env=env)
    seconds = time.monotonic() - start
    assert auto.returncode == 0, auto.stdout + auto.stderr
    fb = grade_py("--course", str(root), "feedback")
    assert fb.returncode == 0, fb.stdout + fb.stderr
    graded_scores = scores(root)
    forge_score(f"sqlite:///{root / 'gradebook.db'}", "partial", "test_causal_mask", 102)
    ex = grade_py("--course", str(root), "export", "--to", str(root / "grades.csv"))
    assert ex.returncode == 1, ex.stdout + ex.stderr  # refused: a score above its maximum
    rows = {r["student_id"]: r for r in csv.DictReader((root / "grades.csv").open())}
    # The instructor has read the flagged notebooks: cleared, their scores count.
    reviewed = [f"--clear={s}/{LESSON}" for s, (_, flagged) in EXPECTED.items() if flagged is True]
    cleared = grade_py("--course", str(root), "export", "--to", str(root / "cleared.csv"), *reviewed)
    assert cleared.returncode == 1, cleared.stdout + cleared.stderr  # partial's forged 102 is still refused
    return dict(root=root, out=auto.stdout, seconds=seconds, scores=graded_scores, rows=rows,
                watched=watched, export=ex.stdout, cleared={
                    r["student_id"]: r for r in csv.DictReader((root / "cleared.csv").open())})


def lines(out: str, kind: str, student: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(f"{kind} {student}/")]


def autograded(root, student) -> "nbformat.NotebookNode":
    return nbformat.read(root / "autograded" / student / LESSON / NB, as_version=4)


def outputs_text(nb) -> str:
    """Every output of every code cell, each cell's printed text joined first: the kernel may send one print
    in two stream messages ("scratch full after", " 255 MiB: ..."), which a search across them must see whole."""
    parts = []
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        parts.append("".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream"))
        parts += [str(o) for o in cell.outputs if o.get("output_type") != "stream"]
    return "\n".join(parts)


@pytest.mark.parametrize("student", EXPECTED)
def test_honest_score_and_flag(graded, student):
    score, flagged = EXPECTED[student]
    got = graded["scores"][student]
    # What the grader said of this hand-in first: the tail of a long run leaves it out.
    assert got["score"] == score, (student, got, lines(graded["out"], "PROBLEM", student), graded["out"][-1500:])
    row = graded["rows"][student]
    if flagged == "refused":
        assert row[LESSON] == "" and "REFUSED" in row["flags"], row
        return
    assert bool(lines(graded["out"], "FLAG", student)) == flagged, lines(graded["out"], "FLAG", student)
    assert bool(row["flags"]) == flagged, row["flags"]
    # A flagged notebook's score is held out of the CSV until the instructor clears it, then counts.
    assert row[LESSON] == ("" if flagged else f"{score:g}"), row
    assert (f"{LESSON}/{LESSON}: HELD {score:g} of" in row["flags"]) == flagged, row["flags"]
    assert float(graded["cleared"][student][LESSON]) == score, graded["cleared"][student]
    assert "HELD" not in graded["cleared"][student]["flags"]


def test_no_data_lost_and_nothing_outside_written(graded):
    root = graded["root"]
    for path, before in graded["watched"].items():
        assert fingerprint(path) == before, f"{path} was changed or chmod-ed"
    with sqlite3.connect(root / "gradebook.db") as db:  # still the gradebook, every student in it
        students = {r[0] for r in db.execute("select id from student")}
    assert students == set(EXPECTED)
    assert not (root / "autograded" / "honest" / LESSON / "solution.ipynb").exists()


@pytest.mark.parametrize("student", ["link-gradebook", "link-classmate"])
def test_planted_links_are_removed_and_reported(graded, student):
    root = graded["root"]
    folder = root / "autograded" / student / LESSON
    left = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    assert left == [NB, "notes.txt", "sub"], left
    assert stat.S_ISREG(os.lstat(folder / NB).st_mode)
    problems = " ".join(lines(graded["out"], "PROBLEM", student))
    for name in (f"{NB} (a symbolic link)", "solution.ipynb (a symbolic link)", "fifo (a FIFO)",
                 "sock (a socket)", "data-link.txt (a hard link", "sub/gradebook.db (a symbolic link)"):
        assert name in problems, problems
    assert "creates links" in " ".join(lines(graded["out"], "FLAG", student))
    # feedback is the notebook's HTML and nothing else of the folder
    assert sorted(p.name for p in (root / "feedback" / student / LESSON).iterdir()) == [f"{LESSON}.html"]


def test_scripts_never_reach_the_stored_notebook_or_the_feedback(graded):
    root = graded["root"]
    nb = autograded(root, "xss-and-scratch")
    stored = outputs_text(nb)
    assert "XSS-MARKER" in stored  # shown, as text; the payload only escaped, never as a tag
    assert not re.search(r"<script|<iframe|<[a-z]+\b[^>]*\sonerror\s*=", stored, re.I), stored
    assert "application/javascript" not in stored and "image/svg+xml" not in stored
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown" and "__pwned" in c.source]
    assert markdown and not re.search(r"<script|<[a-z]+\b[^>]*\sonerror\s*=", markdown[0]), markdown
    page = (root / "feedback" / "xss-and-scratch" / LESSON / f"{LESSON}.html").read_text()
    assert "XSS-MARKER" in page  # shown; the payload only as escaped text, never as a tag
    assert not re.search(r"<script[^>]*>\s*(window|parent)\.__pwned", page)
    assert not re.search(r"<[a-z]+\b[^>]*\sonerror\s*=", page, re.I)
    assert not re.search(r"<iframe", page, re.I)


def test_output_floods_are_capped(graded):
    root = graded["root"]
    nb_bytes = (root / "autograded" / "flood" / LESSON / NB).stat().st_size
    assert nb_bytes < 10 * 2**20, nb_bytes
    page = (root / "feedback" / "flood" / LESSON / f"{LESSON}.html").stat().st_size
    assert page < 12 * 2**20, page
    nb = autograded(root, "flood")
    text = outputs_text(nb)
    assert "output truncated by the grader" in text
    assert "ValueError" in text  # the error is kept, shortened
    shown = sum("z" * 1000 in str(c.outputs) for c in nb.cells if c.cell_type == "code")
    assert 0 < shown < 10, shown  # the notebook's cap stopped the later pieces


def test_tmpfs_and_disk_are_bounded(graded):
    root = graded["root"]
    nb = autograded(root, "xss-and-scratch")
    text = outputs_text(nb)
    filled = re.search(r"scratch full after (\d+)", text)
    cell = next((c.get("outputs") for c in nb.cells if "/scratch/f" in c.source), "no such cell")
    assert filled, f"the cell that fills /scratch printed no result; its outputs: {cell}"
    written = int(filled.group(1))
    assert 0 < written <= 256, text[-500:]
    assert "no /dev/shm" in text
    disk = autograded(root, "disk-frames")
    assert "one file stopped at 64 MiB" in outputs_text(disk)
    assert "wrote" in outputs_text(disk) and "KernelDied" in outputs_text(disk)
    folder = root / "autograded" / "disk-frames" / LESSON
    assert sum(p.stat().st_size for p in folder.iterdir() if p.name != NB) <= 64 * 2**20
    assert [p.name for p in (root / "feedback" / "disk-frames" / LESSON).iterdir()] == [f"{LESSON}.html"]
    assert "kernel killed" in " ".join(lines(graded["out"], "PROBLEM", "disk-frames"))


def test_spawned_processes_are_limited_and_stopped(graded):
    text = outputs_text(autograded(graded["root"], "spawner"))
    started = int(re.search(r"processes started: (\d+)", text).group(1))
    assert started < 64, started  # the process limit (threads of the kernel count too)
    assert "processes alive: 2" in text  # bwrap's init and the kernel: the others were stopped
    assert "left" in " ".join(lines(graded["out"], "PROBLEM", "spawner"))
    assert "spawns processes" in " ".join(lines(graded["out"], "FLAG", "spawner"))
    # Leftover processes live for one cell at most, so classmates graded beside them keep their CPU. (The
    # batch's wall time is printed, not asserted: this machine may be shared.)
    print(f"autograde of {len(EXPECTED)} submissions, --jobs 2: {graded['seconds']:.0f} s")


def test_inserted_cell_forgeries_score_zero_and_are_flagged(graded):
    """Patched checks, torch.equal, the grader's respond, input transformers, a silent traceback: the
    kernel's printed passes are ignored, the scores come from the grader's own replay."""
    for student in ("forgery-and-leak", "forgery-kit"):
        assert graded["scores"][student]["score"] == 0, graded["scores"][student]
        nb = autograded(graded["root"], student)
        tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
        assert all(len(c.outputs) == 1 and c.outputs[0].output_type == "error" for c in tests), \
            [c.outputs for c in tests]
    flags = " ".join(lines(graded["out"], "FLAG", "forgery-and-leak"))
    assert "patches a module: assigns headlab.checks.ch00.padding_mask" in flags, flags
    assert "patches a module" in " ".join(lines(graded["out"], "FLAG", "forgery-kit"))
    assert "FLAG forgery-and-leak/" in graded["export"]


def test_hidden_tests_never_reach_the_feedback(graded):
    from course import feedback

    hidden = hidden_test_lines(nbformat.read(SOLUTION_NB, as_version=4))
    text = feedback(graded["root"], "forgery-and-leak")
    assert not [line for line in hidden if " ".join(line.split()) in text]
    # the hook printed every cell the kernel ran after it: no hidden test was among them
    nb = autograded(graded["root"], "forgery-and-leak")
    printed = outputs_text(nb)
    demos = [c.source.splitlines()[0] for c in nb.cells[-8:] if c.cell_type == "code" and c.source.strip()
             and not c.metadata.get("nbgrader", {}).get("grade")]
    assert [line for line in demos if line in printed], "the hook printed nothing"
    assert not [line for line in hidden if line.strip() in printed]
    assert "touches IPython's execution machinery: events" in " ".join(
        lines(graded["out"], "FLAG", "forgery-and-leak"))
    assert "inspects frames" in " ".join(lines(graded["out"], "FLAG", "disk-frames"))


def test_export_refuses_a_score_above_the_maximum(graded):
    """partial's 2/4, forged to 102 on a 2-point cell after grading: left out of the CSV, told."""
    row = graded["rows"]["partial"]
    assert row[LESSON] == "" and row["total"] == "0"
    assert "test_causal_mask scored 102 of 2" in row["flags"]
    assert "FLAG partial/" in graded["export"] and "REFUSED" in graded["export"]


# --- in a real browser ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    from lab_server import chromium

    with chromium() as browser:
        yield browser


def pwned(page) -> object:
    page.wait_for_timeout(1000)  # onerror handlers fire once the broken images fail
    return page.evaluate("window.__pwned === undefined ? null : window.__pwned")


def test_the_payload_runs_in_this_browser_unsanitised(browser):
    """The control: the same payload, served raw, does run, so the checks below can fail."""
    page = browser.new_page()
    page.set_content('<img src="x" onerror="window.__pwned = 2"><script>window.__pwned = 1</script>')
    assert pwned(page) in (1, 2)
    page.close()


def test_feedback_page_shows_the_output_without_running_it(graded, browser):
    page = browser.new_page()
    page.goto((graded["root"] / "feedback" / "xss-and-scratch" / LESSON / f"{LESSON}.html").as_uri())
    assert "XSS-MARKER" in page.inner_text("body")
    assert pwned(page) is None and page.title() != "PWNED"
    page.close()


def test_formgrader_shows_the_output_without_running_it(graded, browser, tmp_path):
    from nbgrader.api import Gradebook

    from lab_server import jupyter_lab

    root = graded["root"]
    (tmp_path / "exchange").mkdir()
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        sub_id = gb.find_submission_notebook(LESSON, LESSON, "xss-and-scratch").id
    token = "heads-hostile-test"
    config = REPO / "grader" / "jupyter_server_config.py"
    with jupyter_lab(root, token, f"--config={config}", "--LabApp.news_url=",
                     f"--Exchange.root={tmp_path / 'exchange'}", log=tmp_path / "lab.log") as url:
        page = browser.new_page()
        response = page.goto(f"{url}/formgrader/submissions/{sub_id}/?token={token}", timeout=120_000)
        assert response.ok, (response.status, (tmp_path / "lab.log").read_text()[-2000:])
        assert "object-src 'none'" in response.headers.get("content-security-policy", "")
        page.get_by_text("XSS-MARKER").first.wait_for(timeout=60_000)
        assert pwned(page) is None and page.title() != "PWNED"
        # JupyterLab itself still works under the policy
        page.goto(f"{url}/lab?token={token}", timeout=120_000)
        page.get_by_text("Nbgrader", exact=True).first.wait_for(timeout=120_000)
        page.close()
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        assert gb.find_submission(LESSON, "xss-and-scratch").score == 4


@pytest.mark.parametrize("student", ["stop-respond", "trap-respond", "over-the-cap", "unencodable",
                                     "shadow-not-implemented"])
def test_an_answer_that_stops_respond_leaves_two_sets_not_its_own(graded, student):
    """respond gives its answers whatever stopped the loop (a KeyboardInterrupt, as the grader's own interrupt at a time
    limit, still stops it), whatever the streams it flushes first do and whatever text the answers report, and the
    executor keeps a set over its cap as one, so the set the notebook showed is a second one, which is refused."""
    cell = next(c for c in autograded(graded["root"], student).cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "test_causal_mask")
    shown = "".join(o.get("text", "") + str(o.get("data", "")) + o.get("evalue", "") for o in cell.outputs)
    assert re.search(r"gave \d+ sets of answers", shown), shown


def test_a_flagged_patch_is_not_run(graded):
    """swap-during-test's patch, replaced by pass, is named in the grader's PROBLEM line and in its feedback's
    cell; run as written, the same notebook forged full marks (EXPECTED)."""
    said = " ".join(lines(graded["out"], "PROBLEM", "swap-during-test"))
    assert "not run, flagged for review" in said and "match print:" in said, said
    text = "".join(c.source for c in autograded(graded["root"], "swap-during-test").cells)
    assert "The grader did not run" in text and "b.exec = Runner" not in text
    assert "not run" not in " ".join(lines(graded["out"], "PROBLEM", "swap-as-written"))


@pytest.mark.parametrize("student, said", [
    ("exit-after-set", "KernelDied"),
    # lost, or all came (two sets), or the flood outlasted the cell's time limit (no answers): never the set shown
    ("flood-after-set", r"lost on the way|gave \d+ sets of answers|longer than the grader allows")])
def test_a_set_shown_before_respond_s_was_kept_out_is_not_read(graded, student, said):
    cell = next(c for c in autograded(graded["root"], student).cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "test_causal_mask")
    shown = "".join(o.get("text", "") + str(o.get("data", "")) + o.get("evalue", "") for o in cell.outputs)
    assert re.search(said, shown), shown[-2000:]


def test_a_changed_channel_is_named_in_the_feedback(graded):
    text = outputs_text(autograded(graded["root"], "kernel-channel"))
    assert "AnswersRefused: this notebook changed the channel the answers leave through" in text, text[-2000:]


def test_a_later_cell_cannot_change_a_result_already_given(graded):
    """K4: the attack ran (the thread got the inputs, the later cell gave answers that pass, in its own output),
    and the grade is still what the unwritten padding_mask's own test cell gave: 0 of its 2 points."""
    nb = autograded(graded["root"], "answers-after")
    assert "forged answers given" in outputs_text(nb), outputs_text(nb)[-2000:]
    cells = graded["scores"]["answers-after"]["cells"]
    assert (cells["test_padding_mask"], cells["test_causal_mask"]) == (0, 2), cells


def test_a_message_with_a_bad_signature_stops_only_that_kernel(graded):
    """nbgrader stopped on the whole notebook (score 0) at the first message jupyter_client could not verify; now
    the kernel is stopped as if it had died, and the exercise graded before it keeps its score (EXPECTED: 2)."""
    text = outputs_text(autograded(graded["root"], "bad-signature"))
    assert "KernelUnverified" in text and "signed with the wrong key" not in text, text[-800:]
    assert "bad signature" in " ".join(lines(graded["out"], "PROBLEM", "bad-signature"))

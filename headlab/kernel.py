"""The student's kernel's side of grading: what runs there, and nothing that judges.

In place of a test cell the kernel runs `respond(grade_id)` of a fresh copy of this module and of codec.py,
compiled from their files when the cell runs (fresh_kernel.py), so that nothing the notebook did to the imported
modules counts. It reads the grader's inputs for that cell, calls the student's answers on them (a function
directly; a class through a driver of this module) and gives what they returned, as data (`codec`), as the cell's
own output. A driver builds the learner's class, loads the grader's weights, runs it and returns plain facts:
outputs, gradients, outputs after the grader's training step, exceptions. It names no mistake and writes no
message, so whatever a kernel patches here changes only what its answers appear to return, never how they are
judged: that is `grading`'s and the checks', in the grader's own process.
"""
from __future__ import annotations

import io
import json
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from .codec import ANSWERS_MIME, FOLDER, GLOBALS, GraderError, at, decode, encode, plain, safe_str


def describe(answer: Any) -> dict:
    """What kind of object an answer is, so the grader can stand in for it."""
    import torch.nn as nn

    if answer is _MISSING:
        return {"kind": "missing"}
    if isinstance(answer, dict):
        return {"kind": "namespace"}
    if isinstance(answer, type):
        return {"kind": "module class" if issubclass(answer, nn.Module) else "class",
                "type": plain(answer.__name__, 200)}
    if isinstance(answer, nn.Module):
        return {"kind": "module", "type": plain(type(answer).__name__, 200)}
    return {"kind": "function" if callable(answer) else "value", "type": plain(type(answer).__name__, 200)}


_MISSING = object()


def respond(grade_id: str, namespace: dict | None = None, folder: str = FOLDER) -> None:
    """Run this test cell's answers on the grader's inputs and leave the results for the grader. The answers are
    looked up in `namespace`, by default the globals of the frame that called: the test cell's, which a notebook
    cannot replace by rebinding `globals` as it could a `globals()` call's result. `folder`: where the grader put
    the inputs, by its full path (the kernel's directory is the notebook's to change)."""
    from .checks.core import checked   # not at import: headlab.checks imports this module

    namespace = sys._getframe(1).f_globals if namespace is None else namespace

    book = json.loads((Path(folder) / "calls.json").read_text())
    out = []
    try:
        for entry in book.get(grade_id, []):
            name = entry["answer"]
            answer = namespace if name == GLOBALS else namespace.get(name, _MISSING)
            results = [] if answer is _MISSING else [_run(answer, call) for call in entry["calls"]]
            out.append({"answer": describe(answer), "results": results})
            if answer is not _MISSING and name != GLOBALS:
                # Later cells that start with uses(answer) run, as after a visible check: whether it passed is
                # decided outside, and the feedback shows what they do with the answer (never a grade).
                checked[name] = answer
    finally:   # whatever stopped the loop: the answers are always given, so a set the notebook showed is a second one
        shell = _shell()
        if shell is not None:   # in a kernel: the results are this cell's output, which the grader reads at its end
            try:
                _publish(shell.display_pub, {ANSWERS_MIME: {"grade_id": grade_id, "answers": out}})
            except Exception:   # what an answer returned could not be encoded: a set leaves all the same
                _publish(shell.display_pub, {ANSWERS_MIME: {"grade_id": grade_id, "answers": [],
                                                            "unsent": "the answers could not be encoded"}})
    print("Your answers were run on the grader's inputs; the grade is decided outside this notebook.")


def _publish(pub: Any, data: dict) -> None:
    """Send `data` as display data, as ipykernel's publisher does, but past the hooks a notebook can register on it
    (`display_pub.register_hook`: a red team's hook rewrote the answers on their way out) and through the channel
    as it was when this module was imported (`_CHANNEL`), by `headlab.setup()` in the lesson's locked setup cell:
    the Session is shared with sys.stdout, sys.stderr and every widget, and red teams replaced its `send`, then its
    `pack`, through each of them. The message is packed, signed and sent here as Session.send does, by the functions
    taken then."""
    if _CHANNEL is None:   # not ipykernel's publisher (or imported outside a kernel): the publisher's own publish
        pub.publish(data=data, metadata={})
        return
    publisher, session, socket, flush, message, pack, auth, send_multipart, make_encoder, encode_ascii = _CHANNEL
    try:   # the cell's prints first, as publish does; they go through sys.stderr as the notebook left it, which
        flush(publisher)   # can raise (red team 11 left a stream whose flush raises): the answers leave all the same
    except BaseException:
        pass
    content = {"data": data, "metadata": {}, "transient": {}}
    # The answers packed first, by json's encoder of C, whose code no patch reaches: the session's packer calls
    # json.dumps, whose JSONEncoder methods are a class's a notebook can patch (red team 13 rewrote them there)
    packed = pack(content) if make_encoder is None else "".join(make_encoder(
        None, _unencodable, encode_ascii, None, ":", ",", False, False, False)(content, 0)).encode("ascii")
    msg = message(session, "display_data", content, parent=publisher.parent_header)
    parts = [*(pack(msg[part]) for part in ("header", "parent_header", "metadata")), packed]
    signature = b""
    if auth is not None:   # the key's HMAC, as Session.sign computes it
        digest = auth.copy()
        for part in parts:
            digest.update(part)
        signature = digest.hexdigest().encode()
    send_multipart(socket, [publisher.topic, b"<IDS|MSG>", signature, *parts])   # jupyter_client's DELIM


def _unencodable(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")   # never met: the answers are `codec.encode`'s data


def _channel() -> tuple | None:
    """(publisher, its session, its socket, the class functions that flush and build a message, the session's
    packer and a copy of its signing HMAC, the socket class's send, and json's encoder of C with its string
    escaper), taken now: not attributes looked up when the answers leave, so that a `send` or `pack` replaced later
    on the session or its class is not the one called."""
    from json import encoder

    pub = getattr(_shell(), "display_pub", None)
    session, socket = getattr(pub, "session", None), getattr(pub, "pub_socket", None)
    if session is None or socket is None or not hasattr(type(pub), "_flush_streams"):
        return None
    auth = session.auth.copy() if session.auth is not None else None
    return (pub, session, socket, type(pub)._flush_streams, type(session).msg, session.pack, auth,
            type(socket).send_multipart, encoder.c_make_encoder, encoder.c_encode_basestring_ascii)


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


_CHANNEL = _channel()


def _run(answer: Any, call: dict) -> dict:
    args, kwargs = decode(call["args"]), decode(call["kwargs"])
    try:
        with torch.set_grad_enabled(bool(call["grad"])), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            if call["kind"] == "drive":
                return {"value": encode(_driver(call["name"])(answer, *args))}
            before = [(p, x.detach().clone()) for p, x in _tensors(args, kwargs)]
            before += [(p, encode(x)) for p, x in _lists(args, kwargs)]
            value = answer(*args, **kwargs)
            return _result(value, args, kwargs, before)
    except NotImplementedError as err:
        return {"raised": {"type": "NotImplementedError", "message": safe_str(err)}}
    except KeyboardInterrupt:   # the grader's interrupt at the cell's time limit: stop; respond gives what it has
        raise
    except BaseException as err:  # the student's bug, reported by the grader like the check would; a SystemExit or a
        # class of the notebook's too, which would leave respond before it gives the answers (red team 10 raised one
        # after showing a forged set of its own; respond's `finally` makes that set a second one)
        return {"raised": {"type": plain(type(err).__name__, 200), "message": safe_str(err)}}


def _driver(name: str) -> Callable:
    module, _, attr = name.partition(":")
    if not (module == __name__ and attr.startswith("drive_") and attr in globals()):   # this module's drivers only
        raise GraderError(f"not a course driver: {name}")
    return globals()[attr]   # this copy's own (a fresh one's, headlab/fresh_kernel.py), not the imported module's


def _tensors(args: tuple, kwargs: dict):
    yield from ((i, a) for i, a in enumerate(args) if isinstance(a, torch.Tensor))
    yield from ((k, a) for k, a in kwargs.items() if isinstance(a, torch.Tensor))


def _lists(args: tuple, kwargs: dict):
    """The plain-list inputs (a list of tags, of label ids): a check also sees whether they changed."""
    yield from ((i, a) for i, a in enumerate(args) if type(a) is list)
    yield from ((k, a) for k, a in kwargs.items() if type(a) is list)


def _result(value: Any, args: tuple, kwargs: dict, before: list) -> dict:
    result: dict = {"value": encode(value)}
    changed = []
    for path, old in before:
        now = at(args, kwargs, path)
        if isinstance(old, list):
            if encode(now) != old:
                changed.append([path, encode(now)])
        elif now.shape != old.shape or not torch.equal(now.detach(), old):
            changed.append([path, encode(now.detach())])
    if changed:
        result["changed"] = changed
    parts = list(value) if type(value) in (tuple, list) else [value]
    aliases = [_alias(part, args, kwargs) for part in parts]
    if any(a is not None for a in aliases):
        result["alias"] = aliases if type(value) in (tuple, list) else aliases[0]
    if isinstance(value, torch.Tensor):
        if value.requires_grad and value.grad_fn is not None:
            inputs = [(p, x) for p, x in _tensors(args, kwargs) if x.requires_grad]
            if inputs:
                grads = torch.autograd.grad(value.sum(), [x for _, x in inputs], allow_unused=True)
                result["grads"] = [[p, encode(g)] for (p, _), g in zip(inputs, grads) if g is not None]
    return result


def _alias(value: Any, args: tuple, kwargs: dict) -> Any:
    """Where `value` is one of the inputs (or shares its memory and shape), that input's place."""
    if isinstance(value, torch.Tensor):
        for path, x in _tensors(args, kwargs):
            if value is x or (value.numel() and x.numel() and value.data_ptr() == x.data_ptr()
                              and value.shape == x.shape):
                return path
    return None


# --- the drivers: a learner's class, run on the grader's numbers ------------------------------------------
def load(head: torch.nn.Module, weights: Sequence[torch.Tensor], fill: int | str | None = None) -> None:
    """The loading contract: every floating state_dict entry shaped like one of `weights` (or like a matrix's
    transpose, a weight stored (in, out)) gets its values. With `fill`, for a head whose layout is free, every
    floating entry gets numbers in turn from one vector: normal ones drawn from the seed `fill`, or "zeros"."""
    held = {name: t for name, t in head.state_dict().items() if t.is_floating_point()}
    if fill is None:
        offered = [*weights, *[w.T for w in weights if w.dim() == 2]]   # as given first, then transposed
        fits = {name: [w for w in offered if w.shape == t.shape] for name, t in held.items()}
        state = {name: found[0] for name, found in fits.items() if found}
    else:
        total = sum(t.numel() for t in held.values())
        values = torch.zeros(total) if fill == "zeros" else \
            torch.randn(total, generator=torch.Generator().manual_seed(fill))
        parts = values.split([t.numel() for t in held.values()])
        state = {name: v.reshape(t.shape) for (name, t), v in zip(held.items(), parts)}
    head.load_state_dict(state, strict=False)


def drive_head(cls, spec: dict) -> dict:
    """The kernel's one driver for every class head: the facts of `spec` (see headlab.checks.heads.spec), as plain
    data.
    {"outs": per input, the list of its outputs; "changed": whether an input was changed in place;
    "gradients": kernel.gradient_facts when asked; with an embedding, "embedding_changed":
    whether building the head changed its values, and "swapped": the output on inputs[0] while it held E2;
    or "raised": {"type", "message", "stage"}, the exception that stopped it and where: "build" or the index of
    the input being run}."""
    inputs = [x.clone() for x in spec["inputs"]]   # the head's own copies; spec's stay as the grader sent them
    facts: dict[str, Any] = {"outs": [], "changed": False}
    stage: Any = "build"
    E, E2 = spec["embedding"] or (None, None)
    with torch.random.fork_rng(devices=[]):   # the grader's draws; the notebook's random state kept
        torch.manual_seed(spec["seed"])
        try:
            head, emb = _build(cls, spec, E)
            with torch.no_grad():
                facts["embedding_changed"] = bool(emb) and not torch.equal(emb[0].weight, E)
                load(head, spec["weights"], spec["fill"])
                head.train(spec["train"])
                for stage, x in enumerate(inputs):
                    facts["outs"].append([detached(head(x)) for _ in range(spec["passes"])])
                if emb:   # new values in the embedding, in place: a tied head follows them
                    stage = 0
                    emb[0].weight.copy_(E2)
                    facts["swapped"] = detached(head(inputs[0].clone()))
                    emb[0].weight.copy_(E)
            facts["changed"] = any(not torch.equal(x, given) for x, given in zip(inputs, spec["inputs"]))
            if spec["step"] and not facts["changed"]:   # a head that writes into its input fails on that first
                stage = 0
                facts["gradients"] = gradient_facts(head, head, spec["inputs"][0], spec["seed"],
                                                    probe=spec["inputs"][spec["stepped_on"]],
                                                    rebuild=lambda: _build(cls, spec, E)[0])
        except Exception as err:   # the learner's bug is a fact like any other; the check explains it
            facts["raised"] = {"type": plain(type(err).__name__, 200), "message": safe_str(err)[:2000], "stage": stage}
    return facts


def _build(cls, spec: dict, E: torch.Tensor | None) -> tuple:
    """A new head as `spec` asks, and the nn.Embedding (holding E) it was given, in a list: empty without E."""
    emb = [] if E is None else [torch.nn.Embedding(*E.shape, _weight=E.clone())]
    head = cls(*emb, *spec["args"], **spec["kwargs"])
    head.train(spec["train"])
    return head, emb


def drive_names(namespace: dict, names: list[str]) -> dict:
    """The values the notebook set under `names` (a knowledge check's answers), those it set."""
    return {name: namespace[name] for name in names if name in namespace}


# --- a head's training step, taken where its code runs -----------------------------------------------------
def detached(value: Any) -> Any:
    """A detached copy of what a head returned: a tensor, or each tensor of a tuple; anything else as it is."""
    if isinstance(value, tuple):
        return tuple(map(detached, value))
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


# One plain gradient-descent step on the head's own outputs: large enough that a weight left behind shows.
STEP_LR = 0.5


def gradient_facts(module: torch.nn.Module, forward: Callable, x: torch.Tensor, seed: int,
                   probe: torch.Tensor | None = None, rebuild: Callable | None = None) -> dict:
    """A driver's step for a head: run `forward(x)` with gradients on, from a fresh copy of x, back-propagate its
    outputs weighted by seeded random numbers, take one plain gradient-descent step (STEP_LR) on the module's
    parameters (a tied embedding's too) and run it on x again (or on `probe`).
    Returns the gradient that reached x ("input_grad", None if none did), the outputs after the step ("stepped")
    and "moved": the state entries (parameters, buffers) that changed other than by the grader's step.
    Only outputs are judged, never which parameters the kernel says it has or what their `.grad` holds: a weight
    that is frozen, detached or hidden from `parameters()` does not move, and a `.grad` written by hand is not the
    gradient of the grader's weighted outputs, so either leaves other outputs after the step. The head's code runs
    during the forward and, through its hooks, during the backward: there it can take the step itself (a frozen
    bias moved by hand, `bias.data -= STEP_LR * g`). So the grader steps the state it found by its own walk, any
    other change of that state is reported, and with `rebuild` (a new instance of the head's class) the outputs
    after the step are those of a new head holding the stepped state, whose forward saw no backward."""
    x = x.detach().clone().requires_grad_()
    probe = x.detach().clone() if probe is None else probe
    before = _snapshot(module)
    with torch.no_grad():
        unstepped = forward(probe.clone())   # a new head holding `before` must give these, after the backward too
    # what an optimiser would train, found without `parameters()`, which a class can override to hide a layer
    trained = list({id(t): t for t, _, _ in before.values() if t.requires_grad and t.is_leaf}.values())
    with torch.enable_grad():
        total = weighted_sum(forward(x), seed)
        grads = torch.autograd.grad(total, [x, *trained], allow_unused=True) if total is not None else [None]
    moved = _moved(before, module)
    # The step reads the gradients autograd returns, never `.grad`: a hook can write `.grad` of a frozen weight
    with torch.no_grad():
        for p, g in zip(trained, grads[1:]):
            if g is not None:
                p -= STEP_LR * g
    after = _snapshot(module)
    with torch.no_grad():
        stepped = forward(probe.clone())
    moved += _moved(after, module)
    if rebuild is not None:
        # New heads holding the state before and after the step, built after the backward: a head whose outputs
        # depend on more than its state (a step kept on the instance, or on its class) gives other outputs
        again = [_run_holding(rebuild, state, probe) for state in (before, after)]
        if again[0] is None:
            moved.append("<a new head holds other state>")
        elif not (_same(again[0], unstepped) and _same(again[1], stepped)):
            moved.append("<outputs not set by the state>")
        stepped = stepped if again[1] is None else again[1]
    secret = _secret_step(module, forward, probe, trained, grads[1:], rebuild, moved)
    return {"input_grad": grads[0], "stepped": detached(stepped), "moved": sorted(set(moved)), "secret": secret}


def _secret_step(module: torch.nn.Module, forward: Callable, probe: torch.Tensor, trained: list, grads: Sequence,
                 rebuild: Callable | None, moved: list[str], *, _draw: Callable[[int], bytes] = os.urandom) -> dict:
    """A second step from the state before the public one, by the same gradients, each parameter by a step size
    drawn now, after the backward, from the OS (no seed): {"sizes": rows (numel, step size), one per size of
    state entry, "stepped": the outputs on `probe` after it}. The public step (STEP_LR) is known to code that runs
    during the backward: a hook can compute the weights it will give and the step a frozen bias "should" take,
    keep both outside the head (the notebook's globals) and add that step to a later pass that finds those
    weights (issue 25, K1G). This step it cannot foresee, and a weight's own move tells nothing of another size's
    step. Sizes are keyed by numel so that the grader can give them to its own weights, held in another layout
    (transposed); a frozen parameter's size is drawn too: the grader's step moves it, the head's cannot.
    The step sizes travel with the facts: the grader replays them, never draws its own. `_draw` is os.urandom bound
    when this module is imported, as a default rather than a name of the module: a notebook that later replaces
    os.urandom or random.SystemRandom (red team 3) cannot choose the sizes, nor one that rebinds a name of this
    module (red team 6 set `headlab.kernel._urandom`)."""
    state = _state(module)
    sizes = {n: 0.25 + 0.5 * int.from_bytes(_draw(7), "big") / 2 ** 56   # uniform in [0.25, 0.75)
             for n in sorted({t.numel() for t in state.values()})}
    with torch.no_grad():
        for p, g in zip(trained, grads):
            if g is not None:   # back to the state before the public step, then this step
                p += STEP_LR * g
                p -= sizes[p.numel()] * g
    after = _snapshot(module)
    with torch.no_grad():
        stepped = forward(probe.clone())
    moved += _moved(after, module)
    if rebuild is not None:
        again = _run_holding(rebuild, after, probe)
        stepped = stepped if again is None else again
    rows = torch.tensor(list(sizes.items()), dtype=torch.float64).reshape(-1, 2)
    return {"sizes": rows, "stepped": detached(stepped)}


def _run_holding(rebuild: Callable, state: dict[str, tuple], x: torch.Tensor) -> Any:
    """The outputs on x of a new head (`rebuild()`) holding the values of `state` (a `_snapshot`), or None when
    the new head's state has other entries or shapes."""
    head = rebuild()
    held = _state(head)
    if held.keys() != state.keys() or any(held[k].shape != v.shape for k, (_, _, v) in state.items()):
        return None
    with torch.no_grad():
        for k, (_, _, v) in state.items():
            held[k].copy_(v)
        return head(x.clone())


def _state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer of `module` and of the modules it holds, by path, found through nn.Module's own
    dicts read with the base types' methods: never a method the class defines (`modules()`, `parameters()`,
    `state_dict()`, `__getattr__`), which it can override to hide a tensor."""
    found: dict[str, torch.Tensor] = {}
    todo, seen = [("", module)], set()
    while todo:
        prefix, m = todo.pop()
        if id(m) in seen or not isinstance(m, torch.nn.Module):
            continue
        seen.add(id(m))
        own = object.__getattribute__(m, "__dict__")
        for kind in ("_parameters", "_buffers"):
            for name, t in dict.items(own.get(kind) or {}):
                if isinstance(t, torch.Tensor):
                    found[prefix + name] = t
        todo += [(f"{prefix}{name}.", sub) for name, sub in dict.items(own.get("_modules") or {})]
    return found


def _snapshot(module: torch.nn.Module) -> dict[str, tuple]:
    """Each state entry of `_state` with its object, its version counter and a copy of its values."""
    return {k: (t, t._version, t.detach().clone()) for k, t in _state(module).items()}


def _moved(before: dict[str, tuple], module: torch.nn.Module) -> list[str]:
    """The entries of `before` that the module's code changed since: replaced, written in place (even if written
    back: the version counter), or holding other values (a write through `.data`); entries added or removed."""
    now = _state(module)
    changed = list(before.keys() ^ now.keys())
    for k, (t, version, values) in before.items():
        if k in now and (now[k] is not t or t._version != version or t.shape != values.shape
                         or not torch.equal(t.detach(), values)):
            changed.append(k)
    return changed


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and bool(torch.equal(a.detach(), b.detach()))
    return type(a) is type(b)


def weighted_sum(out: Any, seed: int) -> torch.Tensor | None:
    """The sum of the outputs that carry a graph, each weighted by seeded random numbers, so that no gradient
    cancels out by symmetry; None when no output carries a graph."""
    outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,))
            if isinstance(o, torch.Tensor) and o.requires_grad and o.is_floating_point()]
    g = torch.Generator().manual_seed(seed)
    return sum((o * torch.randn(o.shape, generator=g).to(o.dtype)).sum() for o in outs) if outs else None


def weighted_backward(out: Any, seed: int) -> None:
    """Back-propagate `weighted_sum`, the grader-side reference gradients' way (checks.engine)."""
    total = weighted_sum(out, seed)
    if total is not None:
        total.backward()

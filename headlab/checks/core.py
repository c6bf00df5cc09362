"""What every lesson's checks share: a failure type and helpers that explain in plain words.

A check calls the learner's function on small cases and, when the result is wrong, says which
mistake the result looks like. The checks hold no answer to an exercise: visible cases carry
expected values written out by hand, and hidden tests bring their own.
"""
from __future__ import annotations

import re
from typing import Any, Callable, NoReturn

import torch

from .. import grading
from ..codec import GraderError


class CheckFailed(AssertionError):
    """A check found a mistake; the message says which, in plain words, and `mistake` is its key in the
    exercise's table (the same for every learner who made it; empty where no table names it).

    The message is the diagnosis: what is wrong, on which input, which concept. `fix`, where a mistake has one,
    is the code that mends it, which the learner is shown only when they make the same mistake again (`shown`)."""

    def __init__(self, message: str, mistake: str = "", fix: str = ""):
        super().__init__(message)
        self.mistake, self.fix = mistake, fix
        self.exercise = _checking   # the check that found it, for the memory of mistakes already shown

    def _render_traceback_(self) -> list[str]:
        # IPython shows these lines instead of a traceback: the message is all a learner can act on.
        return [f"\x1b[0;31mCheckFailed\x1b[0m: {shown(self)}"]


class NotWritten(NotImplementedError):
    """The learner's answer is still the released stub."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31mNotImplementedError\x1b[0m: {self}"]


def fail(message: str, mistake: str = "", fix: str = "") -> None:
    raise CheckFailed(message, mistake, fix)


# Hints in steps (issue 27.3). The mistakes this kernel has shown the learner, as (exercise, key): the first
# time a mistake is shown, its message gives the diagnosis and leaves the learner to find the code; the same
# mistake shown again adds the fix. Remembered where a failure is shown (IPython's `_render_traceback_`), not
# where it is raised: a check raises and catches failures of its own while it compares the cases.
_shown_before: set[tuple[str, str]] = set()


def shown(err: CheckFailed) -> str:
    """What the learner reads of `err` in their kernel: its diagnosis, and its fix if this kernel has shown the
    same mistake of the same exercise before. Under the grader (a session is active), the diagnosis only: the
    grader's feedback never hands over the code, and `str(err)`, all it reads, never holds the fix."""
    if grading.active() is not None or not err.mistake:
        return str(err)
    seen = (err.exercise, err.mistake) in _shown_before
    _shown_before.add((err.exercise, err.mistake))
    return f"{err} {err.fix}" if seen and err.fix else str(err)


# What passed its visible check in this kernel, by exercise name: the very function or class that passed.
# A convenience for the cells that use a learner's answer (headlab/uses.py), never part of a grade.
_tried: dict[str, Any] = {}
checked: dict[str, Any] = {}
_checking = ""   # the exercise whose check runs (or ran last): a failure belongs to it


def trying(answer: Any, name: str) -> None:
    """A check of `name` starts on `answer`: until it passes, `name` has not passed in this kernel."""
    global _checking
    _checking = name
    _tried[name] = answer
    checked.pop(name, None)


def tried(name: str) -> bool:
    """Whether a check of `name` has run in this kernel (passed or not): what uses.py tells a learner to do next."""
    return name in _tried


def passed(name: str, n_cases: int) -> None:
    if name in _tried:
        checked[name] = _tried[name]
    print(f"✓ {name}: {n_cases} case{'s' * (n_cases != 1)} passed")


def a_type(x: Any) -> str:
    """The type of `x` with its article, for messages: "a tuple", "an ndarray"."""
    if type(x).__module__ == "torch.return_types":   # what torch.max(x, dim) returns; replayed, it is a tuple
        return "a tuple (values, indices)"
    name = type(x).__name__
    vowel_sound = name[0] in "aeiouAEIOU" or name == "ndarray"   # said "en-dee-array"
    return f"{'an' if vowel_sound else 'a'} {name}"


def require_function(fn: Any, name: str) -> None:
    trying(fn, name)
    if not callable(fn):
        fail(f"this check takes your function {name} itself, e.g. check.{name}({name}); "
             f"you passed {a_type(fn)}.")


def require_module_class(cls: Any, name: str, check: str) -> None:
    """The class checks build heads themselves: they take the learner's nn.Module subclass, not a head."""
    trying(cls, name)
    if isinstance(cls, torch.nn.Module):
        fail(f"this check takes your class {name} itself, e.g. check.{check}({name}), not a head built from it "
             f"(you passed {a_type(cls)} instance).", "instance-not-class")
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        fail(f"this check takes your class {name} itself, e.g. check.{check}({name}); you passed "
             f"{'a class' if isinstance(cls, type) else a_type(cls)} that is not one. {name} must be a class "
             f"that subclasses nn.Module: `class {name}(nn.Module):`, with `super().__init__()` first in its "
             "__init__.", "not-a-module")


def call(fn: Callable, name: str, *args, **kwargs) -> Any:
    """Call the learner's function; a stub or a crash becomes a message that says so.

    Every check reaches a learner's function through here (or through `drive`), which is what lets
    the grader record the inputs and replay the results outside the learner's process
    (headlab/grading.py)."""
    try:
        return call_raw(fn, name, *args, **kwargs)
    except Exception as err:
        explain(err, name, *args, **kwargs)


def explain(err: Exception, name: str, *args, **kwargs) -> NoReturn:
    """Raise what `call` says about the learner's `err`: a stub, or a crash with the inputs that caused it. A check's
    failure and the grader's own error go up as they are."""
    if isinstance(err, NotImplementedError) and not _TORCH_LACKS.search(str(err)):
        raise NotWritten(f"{name} is not written yet: replace `raise NotImplementedError()` with your code.") from None
    if isinstance(err, (CheckFailed, GraderError)):
        raise err
    shown = ", ".join([_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()])
    said = f"{name}({shown}) raised {type(err).__name__}: {_torch_words(err)}"
    # what names the crash: an operation that cannot work there, else the call's parameters
    key, named, fix = operation(err, name) or ("wrong-signature", signature_hint(err, name), "")
    if named:
        raise CheckFailed(f"{said}. {named}", key, fix) from None
    hint = exception_hint(err, name)
    raise CheckFailed(said + (f"\n{hint}" if hint else ""), f"raised-{type(err).__name__}") from None


def backward(out: Any, name: str) -> None:
    """A check's gradient step, `out.sum().backward()`, on what the learner's `name` returned (if it carries a
    graph). A crash in it, an operation of theirs that has no gradient (`//`), is named like a crash of `name`
    itself; under the grader the learner's kernel meets it, and `call` reports it so."""
    if not (isinstance(out, torch.Tensor) and out.requires_grad):
        return
    try:
        out.sum().backward()
    except RuntimeError as err:
        key, said, fix = operation(err, name) or (f"raised-{type(err).__name__}", exception_hint(err, name), "")
        fail(f"back-propagating through what {name} returned raised RuntimeError: {_torch_words(err)}. {said}".rstrip(),
             key, fix)


def _torch_words(err: Exception) -> str:
    """What `err` says, for a sentence that goes on after it: without its last period, and without torch's advice to
    turn on anomaly detection, of no use to a learner whose gradient the grader computes."""
    return str(err).split(" Hint: enable anomaly detection")[0].rstrip(". ")


# torch's words for an operation it has no kernel for on this dtype ("… not implemented for 'Long'"), and
# nn.Module's for a class without a forward: a crash, not the stub's NotImplementedError.
_TORCH_LACKS = re.compile(r"not implemented for '|is missing the required \"forward\" function")

# Crashes that name an operation the learner used where it cannot work: (torch's words, key, diagnosis, fix).
# The first line of the failure says which operation; the fix comes when the same crash comes again.
_OPERATIONS: list[tuple[tuple[str, ...], str, str, str]] = [
    (("leaf Variable that requires grad is being used in an in-place operation",), "changed-input",
     "{name} changed a tensor it was given in place (an operation ending in `_`, such as `mul_`, or `*=`): autograd "
     "refuses that on a tensor it must carry a gradient back to, and the caller's tensor would change too.",
     "Use the out-of-place form (`x = x * m`, not `x *= m`; `masked_fill`, not `masked_fill_`), so that the "
     "inputs are only read."),
    # `logp[~keep] = 0` after log_softmax (a loss zeroing its unlabelled positions), `h *= 2` after tanh: torch's
    # words alone, raised-RuntimeError, before
    (("modified by an inplace operation",), "in-place-on-saved-tensor",
     "{name} wrote in place (`x[mask] = 0`, `*=`, an operation ending in `_`) into a tensor that autograd saved for "
     "the gradient, the output of log_softmax, softmax, exp or tanh, which their backward reads again: no gradient "
     "can be computed through it.",
     "Make a new tensor instead of changing that one: `x = x.masked_fill(~keep, 0)` or `x = x * keep`, not "
     "`x[~keep] = 0` or `x *= keep`."),
    # found by a simulated student: `argmax()` with no dim, then an axis of its one number, was told "past the end"
    (("Dimension out of range", "but tensor has no dimensions"), "axis-not-there",
     "{name} named an axis (a `dim`) that a tensor does not have. Often an earlier reduction with no `dim`, such "
     "as `argmax()`, `max()` or `sum()`, reduced every axis, the batch's too, to one number: print the shapes.",
     "Give each reduction the axis it reduces, e.g. `.argmax(dim=-1)` for one answer per row."),
    (("does not support bool",), "ranks-a-bool-tensor",
     "{name} took an argmax (or topk) of a bool tensor: torch ranks numbers, not True/False.",
     "Turn it into numbers first, e.g. with `.long()`, then take the argmax."),
    (("derivative for aten::floor_divide",), "floor-division",
     "{name} divides with `//`, floor division: it rounds down to a whole number and has no gradient, so autograd "
     "cannot carry a gradient back through it (and a mean is rarely a whole number).",
     "Divide with `/`."),
    (("could not infer output dtype", "Expected a floating point", "not implemented for 'Long'",
      "not implemented for 'Bool'", "not implemented for 'Int'"), "float-operation-on-integers",
     "{name} applied an operation that needs floats (a mean, a norm, a softmax, a matrix product) to a bool or "
     "integer tensor, such as a mask or a count.",
     "Convert that tensor first, with `.float()`."),
    (("torch.return_types",), "max-without-values",
     "{name} used what `.max(dim=...)` returns as if it were one tensor: with a dim, max (like min, sort and topk) "
     "returns a pair (values, indices), which cannot be compared or computed with.",
     "Take its `.values` (the maxima) or `.indices` (their positions), or unpack it into two names."),
    (("Tanh.__init__() takes 1 positional argument", "Sigmoid.__init__() takes 1 positional argument"),
     "module-class-called-on-a-tensor",
     "{name} called a module class on a tensor, e.g. `nn.Tanh(x)`: that builds a new module and hands x to its "
     "constructor, which takes no tensor.",
     "Build the module once (`self.act = nn.Tanh()` in __init__) and call it on x, or use the function, `torch.tanh(x)`."),
    # a class's __init__ without `super().__init__()` first, and argmax given two axes, as torch's amax takes them:
    # a hint under raised-AttributeError, and torch's words alone (raised-TypeError), before
    (("before Module.__init__() call",), "no-super-init",
     "{name}'s __init__ assigned a layer or a parameter before `super().__init__()` had run: nn.Module's own "
     "__init__ sets up the registers that hold a module's layers and parameters, so nothing can be stored before it.",
     "Call `super().__init__()` first in __init__, before it assigns any layer or parameter."),
    (("argmax(): argument 'dim' must be int, not tuple",), "argmax-over-two-axes",
     "{name} gave argmax a tuple of axes: argmax (unlike amax) reduces one axis, as the index it returns counts "
     "along one axis.",
     "Flatten the axes into one and take its argmax, `k = scores.flatten(1).argmax(-1)`, then recover the two "
     "indices: `k // n` and `k % n`, with n the size of the last axis."),
    # `.view` after a transpose: torch's words alone (raised-RuntimeError) before
    (("view size is not compatible with input tensor's size and stride",), "view-on-non-contiguous",
     "{name} called `.view(...)` on a tensor whose memory does not run in the order of its shape (the result of a "
     "transpose, a permute or `.T`): view only relabels the memory as it lies, and cannot reorder it.",
     "Use `.reshape(...)`, which copies the values when it must, or call `.contiguous()` before `.view(...)`."),
    # torch.stack(i, j), a softmax method without its dim, NumPy on the graph: torch's words alone (raised-*) before
    (("argument 'tensors' (position 1) must be tuple of Tensors, not Tensor",
      "stack() takes from 1 to 2 positional arguments"), "tensors-not-in-a-list",
     "{name} gave torch.stack (or torch.cat) its tensors as separate arguments: it takes one list of tensors, and "
     "its next argument is the axis.",
     "Put the tensors in a list: `torch.stack([a, b], dim=-1)`."),
    (('softmax() missing 1 required positional arguments: "dim"',), "softmax-without-dim",
     "{name} called `.softmax()` (or `.log_softmax()`) without an axis: torch cannot guess which axis holds the "
     "scores to normalise, and on a batch the wrong one mixes examples.",
     "Name the axis of the scores: `x.softmax(dim=-1)`, `x.log_softmax(dim=-1)` when each row's scores lie on the "
     "last axis, as a head's logits do."),
    (("Can't call numpy() on Tensor that requires grad",), "numpy-on-graph",
     "{name} handed a tensor that carries the graph to NumPy (an `np.` function, or `.numpy()`): NumPy cannot carry "
     "a gradient, so the loss would train nothing. `.detach()` silences the error and keeps that flaw.",
     "Compute with torch's own functions (`torch.log`, `torch.exp`, `.softmax(dim=-1)`) on the tensors as they are."),
    # `.item()` or float() of a batch, one value asked of several as below: torch's words alone (raised-*) before
    (("elements cannot be converted to Scalar", "only one element tensors can be converted to Python scalars"),
     "item-of-many-values",
     "{name} turned a tensor of several values into one Python number (`.item()`, `int(...)` or `float(...)`): "
     "those take a tensor of exactly one value, and a batch holds one per row.",
     "Keep the batch as a tensor and compute every row at once; take `.item()` only of a single value."),
    (("Boolean value of Tensor with more than one value",), "tensor-as-condition",
     "{name} used a tensor of several values as a condition (an `if`, `and`, `or` or `not` on it, or a layer or loss "
     "class given tensors, `nn.CrossEntropyLoss(logits, labels)`, whose constructor tests them): Python needs one True "
     "or False, and a batch holds one per row.",
     "Decide every row at once with a tensor operation, e.g. `torch.where(condition, a, b)`."),
    # The rows below each got torch's words alone (raised-<exception>) before, or a hint about something else: an
    # index of floats was told "an index went past the end" or "two tensors have different dtypes"
    (("tensors used as indices must be long, int, byte or bool tensors", "Expected dtype int32/int64 for index",
      "Expected dtype int32 or int64 for index", "bincount_cpu\" not implemented for 'Float'",
      "are valid indices (got float)"), "float-index",
     "{name} indexed with floats (positions or bin numbers computed with `/`, `ceil` or `floor`, which keep a float "
     "dtype): an index counts whole positions, and torch takes only integer or bool tensors as indices.",
     "Make the index an integer tensor before using it: `.long()` after `ceil` or `floor`, or `//` instead of `/`."),
    (("expected Tensor as element",), "stack-of-numbers",
     "{name} gave torch.stack (or torch.cat) Python numbers or lists, one per row collected in a loop: those join "
     "tensors only.",
     "Make the tensor from the Python values with `torch.tensor`, or keep each row's value a tensor to stack."),
    (("zero-dimensional tensor (at position",), "cat-of-scalars",
     "{name} gave torch.cat 0-d tensors, one number each (a row's `.max()` or `.argmax()`): cat joins tensors along "
     "an axis they already have, and a 0-d tensor has none.",
     "Join them with `torch.stack`, which makes the new axis."),
    (("with a bool tensor is not supported", "on a bool tensor is not supported"), "minus-on-bool-mask",
     "{name} subtracted a bool mask from a number (`1 - mask`, `1.0 - mask`, BERT's additive-mask idiom) or negated "
     "it: torch does no arithmetic on True and False, and a mask may come as bool.",
     "Invert a bool mask with `~mask`; for an additive mask, convert it first: `(1.0 - mask.float())`."),
    (("(torch.nn.Parameter or None expected)",), "tensor-as-parameter",
     "{name} assigned a tensor computed from a weight (its `.T`, `.t()`, `.clone()`, `.detach()` or `.data`) to a "
     "layer's weight: a module holds a Parameter there, and a tensor computed from one is no weight of it, which "
     "could be neither loaded nor trained.",
     "Assign the Parameter itself, `layer.weight = embedding.weight` (nn.Linear(d, V) keeps its weight as (V, d), the "
     "embedding's own shape), or pass the weight to `F.linear` in forward."),
    (("must be Tensor, not Embedding", "must be Tensor, not Linear", "'Tensor' and 'Embedding'",
      "'Embedding' object has no attribute 'T'"), "module-as-tensor",
     "{name} gave a layer (an nn.Embedding or nn.Linear module) where torch wants a tensor: a layer is a function to "
     "call on a tensor, and the matrix it holds is its `.weight`.",
     "Use the layer's weight, `embedding.weight`, where a matrix is wanted."),
    (("cannot be converted to type int64_t without overflow", "can't be cast to the desired output type Long"),
     "float-into-integer-tensor",
     "{name} wrote a float (-inf, or a fraction) into an integer tensor (positions from `torch.arange`, token ids, a "
     "count): an integer tensor holds whole numbers only.",
     "Fill an integer tensor with an integer (-1 lies below every position), or convert it with `.float()` first."),
    (("'torch.Size' object is not callable",), "shape-called",
     "{name} called `.shape(...)` as if it were a method: shape is a tuple of sizes, read with square brackets.",
     "Index it, `x.shape[0]`, or call the method `x.size(0)`."),
    (("'builtin_function_or_method' object", "'method' object is not subscriptable"), "method-not-called",
     "{name} used a tensor's method without calling it (`ids.clone` with no `()`, or `x.size[1]`): without "
     "parentheses Python hands over the method itself, not its result.",
     "Call it: `x.clone()`, `x.size(1)` (or read `x.shape[1]`)."),
    (("'Tensor' object has no attribute 'copy'", "'Tensor' object has no attribute 'astype'"),
     "numpy-method-on-a-tensor",
     "{name} called a NumPy array method on a tensor (`.copy()` or `.astype(...)`): torch names these differently.",
     "`x.clone()` copies a tensor; `x.float()`, `x.long()` or `x.to(torch.float32)` converts its dtype."),
    (("'int' object has no attribute 'detach'", "'tuple' object has no attribute 'detach'"), "parameter-given-a-size",
     "{name} gave nn.Parameter a size (`nn.Parameter(V)`): a Parameter wraps a tensor of starting values, not a "
     "shape, as a layer's constructor takes one.",
     "Make the values first: `nn.Parameter(torch.zeros(V))`."),
    (("0D or 1D target tensor expected",), "targets-with-extra-axis",
     "{name} gave cross_entropy (or nll_loss) its class targets with an extra axis, shape (N, 1) as Keras takes "
     "them: torch wants one class index per row, shape (N,).",
     "Pass the targets as they are, one index per row, with no `[:, None]` or `.view(-1, 1)`."),
    (("got an unexpected keyword argument 'axis'",), "axis-keyword",
     "{name} passed an axis as `axis=`, as NumPy and TensorFlow name it: this torch function calls it `dim` (softmax, "
     "log_softmax, normalize and norm take no `axis`).",
     "Name the axis `dim`: `x.norm(dim=-1, keepdim=True)`, `F.softmax(x, dim=-1)`."),
    # a misspelt forward was told "not written yet", as the stub's NotImplementedError
    (('is missing the required "forward" function',), "forward-misnamed",
     "The class has no method named `forward` (misspelt, as `foward` or `Forward`, or indented outside the class): "
     "calling an nn.Module runs its `forward`, and there is none.",
     "Define `def forward(self, ...)` inside the class, spelt exactly so."),
    (("must be bool, not method",), "train-method-as-flag",
     "{name} passed `self.train`, the method that switches a module's mode, where a True/False flag belongs: the "
     "flag is the attribute `self.training`.",
     "Pass `training=self.training`, with no parentheses, or use nn.Dropout, which follows the mode by itself."),
    # `torch.rand(shape) < p & ~special`: Python binds `&` tighter than `<`, so torch was asked for `p & ~special`
    (("\"bitwise_and_cpu\" not implemented for 'Float'", "\"bitwise_or_cpu\" not implemented for 'Float'"),
     "comparison-without-brackets",
     "{name} combined a comparison with `&` (or `|`) without brackets: Python binds `&` tighter than `<`, so "
     "`x < p & m` is `x < (p & m)`, and torch has no `&` between a float and a mask.",
     "Bracket each comparison: `(torch.rand(shape) < p) & ~special_mask`."),
    (("'int' object is not iterable",), "loop-over-a-number",
     "{name} looped over a number (`for i in n`): a `for` loop walks a sequence, and a number is none.",
     "Loop over `range(n)`, the numbers 0 … n − 1, or better build the whole result at once with tensor operations."),
]


def operation(err: Exception, name: str) -> tuple[str, str, str] | None:
    """(key, diagnosis, fix) when `err` is torch refusing an operation the learner used (`_OPERATIONS`)."""
    return next(((key, said.format(name=name), fix) for words, key, said, fix in _OPERATIONS
                 if any(w in str(err) for w in words)), None)


# The parameters of every exercise as the lessons declare them (tests/test_named_crashes.py compares them with
# solutions/), for a TypeError raised by the call of the learner's function, class or forward itself.
SIGNATURES = {
    "padding_mask": "lengths, n", "causal_mask": "n", "mlm_loss": "logits, labels", "tying_savings": "V, d",
    "mask_tokens": "ids, special_mask, vocab_size, mask_id, p=0.15, generator=None", "MLMHead": "embedding",
    "MLMHead.forward": "h", "cls_pool": "H", "Pooler": "d", "Pooler.forward": "c", "mean_pool": "H, mask",
    "max_pool": "H, mask", "SequenceClassifier": "d, num_classes, dropout=0.1", "SequenceClassifier.forward": "pooled",
    "head_param_count": "d, K", "untrained_loss": "K", "TokenClassifier": "d, num_labels, dropout=0.1",
    "TokenClassifier.forward": "H", "token_loss": "logits, labels", "bio_to_spans": "tags", "SpanHead": "d",
    "SpanHead.forward": "H", "best_span": "start_logits, end_logits, allowed, max_len",
    "span_loss": "start_logits, end_logits, start, end", "last_token_pool": "H, lengths",
    "last_real_index": "attention_mask", "predict_or_reject": "probs, threshold, reject=-1",
    "expected_calibration_error": "probs, labels, n_bins=10", "restrict_to_labels": "next_token_logits, label_token_ids",
    "sentence_embedding": "H, attention_mask", "align_labels": "word_ids, word_labels",
}
# Python's words when a call does not fit a function's parameters, with the function's (qualified) name first
_CALL_MISFITS = re.compile(r"^(?:(\w+)\.)?([\w<>]+)\(\) (?:takes|missing|got an unexpected|got multiple)")


def signature_hint(err: Exception, name: str) -> str:
    """The exercise's parameters, when `err` is Python refusing the call of the learner's `name` itself (their
    function, the class's __init__, or its forward), not a call inside it; "" otherwise."""
    misfit = _CALL_MISFITS.match(str(err)) if isinstance(err, TypeError) and name in SIGNATURES else None
    if misfit is None:
        return ""
    (owner, function), params = misfit.groups(), SIGNATURES[name]
    method = "forward" if "." in name else "__init__" if name[0].isupper() else None
    # a method of the learner's class, not of a torch layer it calls (Linear.forward); or the learner's function
    own = function == method and not hasattr(torch.nn, owner or "") if method else function in (name, "<lambda>")
    said = {"forward": f"The check calls {name} on ({params}) alone, so forward takes (self, {params})",
            "__init__": f"The check builds {name}({params}), so its __init__ takes (self, {params})"}.get(
        method, f"The check calls {name}({params}), the exercise's signature")
    return f"{said}: keep the parameters the exercise gives, in its order." if own else ""


# The usual exceptions of a first try, each with what to look at next. A hint may only use names the
# learner's own code has (the function's name), never the check's variables.
_HINTS: list[tuple[type, str, str]] = [
    (IndexError, "", "An index went past the end of an axis: print the shape of what you index, and "
                     "remember that positions count from 0 to n − 1."),
    (ValueError, "Expected input batch_size", "cross_entropy takes its input as (N, C), one row of C scores per "
                 "example, and its target as (N,): both start with the N examples. Print both shapes; a transposed "
                 "input, (C, N), does not fit."),
    (RuntimeError, "expected target dtype", "cross_entropy's target holds class indices, which must be a long "
                   "tensor: convert it with `.long()`, not `.float()`."),
    (RuntimeError, "must match the size", "Two tensors' shapes do not line up: print their .shape. "
                   "A per-row value of shape (B,) needs [:, None] (or keepdim=True) to line up with (B, n) "
                   "or (B, d)."),
    (RuntimeError, "shape", "A shape does not fit the operation: print the .shape of each tensor it uses."),
    (RuntimeError, "infer dtype of NoneType", "A tensor cannot hold None: keep a list with None entries as a "
                   "Python list, or replace the None entries before making a tensor of it."),
    (RuntimeError, "dtype", "Two tensors have different dtypes: convert one with .float() or .long()."),
    (TypeError, "positional argument", "A function was called with a different number of arguments than it "
                "takes: compare the call with the parameters of the function it calls."),
    (TypeError, "not callable", "Something you call is not a function: did a variable take the name of "
                "a function?"),
    (AttributeError, "before Module.__init__() call", "Call `super().__init__()` first in your class's __init__, "
                     "before it assigns any layer or parameter."),
    (AttributeError, "", "An object has no such attribute: print its type. The exercise's signature says which "
                     "arguments are tensors and which may be plain Python lists or numbers."),
]


def exception_hint(err: Exception, name: str) -> str:
    """The hint of the first row of `_HINTS` that fits `err`, or ""."""
    return next((hint.format(name=name) for kind, words, hint in _HINTS
                 if isinstance(err, kind) and words in str(err)), "")


def call_raw(fn: Callable, name: str, *args, **kwargs) -> Any:
    """`call` without the messages, for a check that explains the learner's errors itself."""
    session = grading.active()
    if session is not None:
        fn = session.call(fn, name, args, kwargs)
    return fn(*args, **kwargs)


def drive(driver: Callable, answer: Any, *args) -> Any:
    """Run `driver(answer, *args)`: a check's one step that builds and runs the learner's class and
    returns plain data (tensors, numbers, strings, tuples, lists, dicts). Drivers are named
    `drive_...`; they return facts and never `fail` (the check names mistakes from the facts, outside
    the kernel: checks/heads.py), and must not take expected values as arguments: the student's kernel
    sees them."""
    session = grading.active()
    if session is not None:
        return session.drive(driver, answer, args)
    return driver(answer, *args)


def positions(row: torch.Tensor) -> list[int]:
    """Indices where a 1-D bool tensor is True, as a plain list for messages."""
    return torch.nonzero(row, as_tuple=False).flatten().tolist()


def _short(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        if value.numel() <= 8:
            return f"tensor({value.tolist()})"
        return f"tensor of shape {tuple(value.shape)}"
    return repr(value)

"""The head protocol (headlab/checks/heads.py): the kernel's one driver returns facts and names nothing, weights
load through the stated contract, and what a head says about its structure decides no verdict."""
import ast
import inspect

import pytest
import torch
import torch.nn as nn

from headlab import checks, kernel
from headlab.checks import CheckFailed, ch01, ch02, ch03, ch04, ch05, heads

NAMING = {"fail", "CheckFailed", "call", "explain", "NotWritten"}


def drivers():
    """Every function the student's kernel runs for the grader on a class or a namespace: the `drive_` functions of
    headlab/kernel.py."""
    return [fn for name, fn in vars(kernel).items()
            if name.startswith("drive_") and inspect.isfunction(fn) and fn.__module__ == kernel.__name__]


def test_the_boundary_is_in_the_tree_the_checks_define_no_driver_and_the_kernel_side_imports_no_check():
    """The kernel side (headlab/kernel.py, with the codec) and the grader side (the checks, the replay) are separate
    modules: no check defines a driver, and the kernel's module imports none of the checks at its top."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(checks.__path__):
        module = importlib.import_module(f"headlab.checks.{info.name}")
        own = [name for name, fn in vars(module).items() if name.startswith("drive_") and inspect.isfunction(fn)
               and fn.__module__ == module.__name__]
        assert not own, f"{module.__name__} defines drivers {own}: they belong in headlab/kernel.py"
    top = [n for n in ast.parse(inspect.getsource(kernel)).body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert {n.module for n in top if isinstance(n, ast.ImportFrom) and n.level} == {"codec"}


@pytest.mark.parametrize("driver", list(drivers()), ids=lambda fn: f"{fn.__module__}.{fn.__name__}")
def test_no_driver_writes_a_message_or_a_key(driver):
    """Drivers run in the student's kernel: a message or key written there would be the kernel's to forge."""
    tree = ast.parse(inspect.getsource(driver).lstrip())
    named = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr
             for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))}
    assert not named & NAMING, f"{driver.__name__} calls {sorted(named & NAMING)}"


def test_the_heads_share_one_driver():
    assert sorted(fn.__name__ for fn in drivers()) == ["drive_head", "drive_names"]   # the heads', a namespace's


def test_a_crash_is_returned_as_data_with_where_it_happened():
    class Crashes(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.linear = nn.Linear(d, d)

        def forward(self, c):
            return self.linear(c[:, 0])

    asked = heads.spec((3,), 0, [torch.randn(2, 3), torch.randn(4, 3)], step=True)
    facts = kernel.drive_head(Crashes, asked)
    assert facts["raised"]["type"] == "RuntimeError" and facts["raised"]["stage"] == 0
    with pytest.raises(CheckFailed) as caught:
        heads.built(facts, "Pooler", asked, "c")
    assert caught.value.mistake == "raised-RuntimeError" and "Pooler.forward(tensor([[" in str(caught.value)


def test_weights_load_by_shape_and_a_matrix_stored_transposed_gets_its_transpose():
    class Stored(nn.Module):
        def __init__(self):
            super().__init__()
            self.W, self.b, self.other = nn.Parameter(torch.zeros(3, 2)), nn.Parameter(torch.zeros(2)), nn.Linear(5, 5)

    head, W, b = Stored(), torch.randn(2, 3), torch.randn(2)
    before = head.other.weight.detach().clone()
    kernel.load(head, [W, b])
    assert torch.equal(head.W.detach(), W.T) and torch.equal(head.b.detach(), b)
    assert torch.equal(head.other.weight.detach(), before)   # no weight of its shape: it keeps its own values


def test_a_layout_free_head_is_filled_in_turn():
    head = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    kernel.load(head, [], fill=3)
    flat = torch.cat([t.flatten() for t in head.state_dict().values()])
    assert torch.equal(flat, torch.randn(len(flat), generator=torch.Generator().manual_seed(3)))
    kernel.load(head, [], fill="zeros")
    assert all(not t.any() for t in head.state_dict().values())


class Frozen(nn.Module):
    """Issue 25, K6: a frozen bias whose forward writes `.grad` itself, so a check that read `.grad` saw it train."""

    def __init__(self, d, num_labels, dropout=0.1):
        super().__init__()
        self.dropout, self.classifier = nn.Dropout(dropout), nn.Linear(d, num_labels)

    def forward(self, H):
        self.classifier.bias.requires_grad_(False)
        self.classifier.bias.grad = torch.ones_like(self.classifier.bias)
        return self.classifier(self.dropout(H))


def test_a_frozen_bias_whose_forward_writes_its_grad_fails_the_grader_step():
    with pytest.raises(CheckFailed) as caught:
        ch04.TokenClassifier(Frozen)
    assert caught.value.mistake == "parameters-without-gradient"


def public_bias_step(g: torch.Tensor) -> torch.Tensor:
    """What the grader's public step (kernel.STEP_LR) takes off a bias, from the gradient of the logits."""
    return kernel.STEP_LR * g.flatten(0, -2).sum(0)


class HooksItsLogits(Frozen):
    """A frozen bias, and a hook on the logits that the grader's backward runs (`on_gradient(g)`, g the gradient of
    the logits): where the forgeries below take or keep the step the bias would have taken."""

    def hooked_logits(self, H):
        self.classifier.bias.requires_grad_(False)
        logits = self.classifier(self.dropout(H))
        if logits.requires_grad:
            logits.register_hook(self.on_gradient)
        return logits

    def forward(self, H):
        return self.hooked_logits(H)


class StepsItself(HooksItsLogits):
    """Issue 25, K1c: a frozen bias that a hook on the logits moves by the grader's public step (kernel.STEP_LR)
    during the grader's backward, so the outputs after the step looked trained."""

    def on_gradient(self, g):
        self.classifier.bias.data.sub_(public_bias_step(g))


class KeepsTheStep(HooksItsLogits):
    """The same step kept on the side (a plain attribute, no parameter written) and added after the backward."""

    def on_gradient(self, g):
        self.kept = -public_bias_step(g)

    def forward(self, H):
        return self.hooked_logits(H) + getattr(self, "kept", 0)


class KeepsTheStepOnTheClass(HooksItsLogits):
    """The step kept on the class, where a new head of the class finds it too: added to the next two passes
    without gradients (the head's own after the step, and a new head's), then dropped."""
    kept, uses = 0, 0

    def on_gradient(self, g):
        KeepsTheStepOnTheClass.kept = -public_bias_step(g)
        KeepsTheStepOnTheClass.uses = 2

    def forward(self, H):
        logits = self.hooked_logits(H)
        if not logits.requires_grad and KeepsTheStepOnTheClass.uses:
            KeepsTheStepOnTheClass.uses -= 1
            return logits + KeepsTheStepOnTheClass.kept
        return logits


class WritesAndRestores(HooksItsLogits):
    """The step kept on the side, written into the bias for the pass after the step and written back after it,
    so the bias holds its old values when the pass ends."""

    def on_gradient(self, g):
        self.kept = public_bias_step(g)

    def forward(self, H):
        self.classifier.bias.requires_grad_(False)
        kept = getattr(self, "kept", None)
        if not torch.is_grad_enabled() and kept is not None:
            with torch.no_grad():
                self.classifier.bias -= kept
                logits = self.classifier(self.dropout(H))
                self.classifier.bias += kept
            return logits
        return self.hooked_logits(H)


# RemembersTheStep's notebook: module globals, not the head, so no state of the head changes
_NOTEBOOK: list[tuple[torch.Tensor, torch.Tensor]] = []


class RemembersTheStep(Frozen):
    """Issue 25, K1G (held-out red team): a hook on the logits computes, from their gradient, the weight the grader's
    public step (W - STEP_LR * dW) will give and the step the frozen bias would take, and keeps both in the
    notebook's globals; a later pass that finds its weight there adds the remembered bias step. The head's state
    never changes, and a new head holding the stepped weight finds it too."""

    def forward(self, H):
        self.classifier.bias.requires_grad_(False)
        X = self.dropout(H)
        logits = self.classifier(X)
        if logits.requires_grad:
            def remember(g):
                g2, x2 = g.flatten(0, -2), X.detach().flatten(0, -2)
                weight = self.classifier.weight.detach() - kernel.STEP_LR * g2.T @ x2
                _NOTEBOOK.append((weight, -public_bias_step(g)))
            logits.register_hook(remember)
            return logits
        w = self.classifier.weight.detach()
        kept = [step for weight, step in _NOTEBOOK if weight.shape == w.shape and torch.allclose(weight, w, atol=1e-5)]
        return logits + kept[-1] if kept else logits


@pytest.mark.parametrize("head", [StepsItself, KeepsTheStep, KeepsTheStepOnTheClass, WritesAndRestores,
                                  RemembersTheStep], ids=lambda c: c.__name__)
def test_a_frozen_bias_that_the_heads_own_code_moves_by_the_step_fails(head):
    """The head's code runs inside the grader's forward and backward (its hooks): a step it takes itself is not
    the optimiser's. The grader steps the state it found, reports any other change of it, and takes the outputs
    after the step from a new head holding the stepped state."""
    with pytest.raises(CheckFailed) as caught:
        ch04.TokenClassifier(head)
    assert caught.value.mistake == "parameters-without-gradient"


class SpanHeadRemembersTheStep(nn.Module):
    """RemembersTheStep as a span head (a held-out red team's K1G on lesson 05): nn.Linear(d, 2) with its bias
    frozen, the public step's weight and bias step kept in the notebook's globals and added where that weight is
    found again. SpanHead's step is judged from its probed scorers, in any layout: the secret step, whose size
    no hook foresees, must be judged there too."""

    def __init__(self, d):
        super().__init__()
        self.qa = nn.Linear(d, 2)

    def forward(self, H):
        self.qa.bias.requires_grad_(False)
        logits = self.qa(H)
        if logits.requires_grad:
            def remember(g):
                weight = self.qa.weight.detach() - kernel.STEP_LR * g.flatten(0, -2).T @ H.detach().flatten(0, -2)
                _NOTEBOOK.append((weight, -public_bias_step(g)))
            logits.register_hook(remember)
        else:
            w = self.qa.weight.detach()
            kept = [step for weight, step in _NOTEBOOK if weight.shape == w.shape and torch.allclose(weight, w, atol=1e-5)]
            logits = logits + kept[-1] if kept else logits
        return logits.unbind(-1)


def test_secret_step_sizes_a_notebook_chose_are_refused():
    """The sizes travel in the kernel's answers: a hook that rewrote them to the public step's (red team 4) or any
    value the draw cannot give is refused; the kernel's own draws pass."""
    from headlab.checks.engine import secret_sizes_drawn

    drawn = kernel._secret_step(nn.Linear(3, 2), lambda x: x, torch.zeros(1), [], [], None, [])["sizes"]
    assert secret_sizes_drawn({int(n): float(v) for n, v in drawn.tolist()})
    assert not secret_sizes_drawn({6: kernel.STEP_LR, 2: 0.4}) and not secret_sizes_drawn({6: 0.9})
    assert not secret_sizes_drawn({6: 0.375, 2: 0.375})   # one size for all, which a memo can read off a weight


def test_a_span_head_that_remembers_the_public_step_fails_the_secret_one():
    with pytest.raises(CheckFailed) as caught:
        ch05.span_head(SpanHeadRemembersTheStep)
    assert caught.value.mistake == "parameters-without-gradient"


def test_a_pooler_with_a_hidden_extra_layer_is_judged_by_its_outputs():
    class Hidden(nn.Module):   # an extra Linear(d, d), hidden from modules() and parameters()
        def __init__(self, d):
            super().__init__()
            self.dense, self.extra = nn.Linear(d, d), nn.Linear(d, d)

        def modules(self):
            return iter([self, self.dense])

        def parameters(self, recurse=True):
            return self.dense.parameters()

        def forward(self, c):
            return torch.tanh(self.extra(self.dense(c)))

    with pytest.raises(CheckFailed) as caught:
        ch02.Pooler(Hidden)
    assert caught.value.mistake == "wrong-values"


class TransposedHidingItsLinear(nn.Module):
    """Issue 25, P1: the stored weight used as it is (`c @ W`, the transposed-weight mistake) and the nn.Linear
    hidden from modules(), which decided whether the non-symmetric case ran: the symmetric ones cannot tell."""

    def __init__(self, d):
        super().__init__()
        self.dense = nn.Linear(d, d)

    def modules(self):
        return iter([self])

    def forward(self, c):
        return torch.tanh(c @ self.dense.weight + self.dense.bias)


def test_a_pooler_that_hides_its_linear_is_still_judged_on_a_non_symmetric_weight():
    with pytest.raises(CheckFailed) as caught:
        ch02.Pooler(TransposedHidingItsLinear)
    assert caught.value.mistake == "linear-weight-not-transposed"


class _SwappedTokenClassifier(nn.Module):   # nn.Linear's sizes in the order (out, in)
    def __init__(self, d, num_labels, dropout=0.1):
        super().__init__()
        self.dropout, self.classifier = nn.Dropout(dropout), nn.Linear(num_labels, d)

    def forward(self, H):
        return self.classifier(self.dropout(H))


class _SwappedSpanHead(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qa_outputs = nn.Linear(2, d)

    def forward(self, H):
        return self.qa_outputs(H).unbind(-1)


@pytest.mark.parametrize("check, head", [(ch04.TokenClassifier, _SwappedTokenClassifier),
                                         (ch05.span_head, _SwappedSpanHead)])
def test_a_linear_layer_built_with_its_sizes_swapped_is_named(check, head):
    """nn.Linear(num_labels, d) for nn.Linear(d, num_labels): torch's shape error and "print the shapes" before."""
    with pytest.raises(CheckFailed) as caught:
        check(head)
    assert caught.value.mistake == "linear-sizes-swapped" and "(in_features, out_features)" in str(caught.value)


class _Forgets(nn.Module):
    """A head whose forward computes an output and forgets to return it."""

    def __init__(self, d, *sizes, dropout=0.1):
        super().__init__()
        self.dense = nn.Linear(d, d)

    def forward(self, x):
        torch.tanh(self.dense(x))


class _ForgetsTied(_Forgets):
    def __init__(self, embedding):
        super().__init__(embedding.weight.shape[1])
        self.embedding = embedding


@pytest.mark.parametrize("check, cls", [(ch01.mlm_head, _ForgetsTied), (ch02.Pooler, _Forgets),
                                        (ch03.sequence_classifier, _Forgets), (ch04.TokenClassifier, _Forgets),
                                        (ch05.span_head, _Forgets)],
                         ids=["MLMHead", "Pooler", "SequenceClassifier", "TokenClassifier", "SpanHead"])
def test_a_forward_without_a_return_is_named(check, cls):
    """Every class head's check, through `built`: MLMHead's was told not-tied (its None logits "do not change when
    the embedding does"), the others a wrong type or not a pair."""
    with pytest.raises(CheckFailed) as caught:
        check(cls)
    assert caught.value.mistake == "returned-none" and ".forward returned None" in str(caught.value), str(caught.value)

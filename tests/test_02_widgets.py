"""headlab.widgets: the pooling plan (pure), its picture, and the explorer widget without a browser."""
import io
import itertools
import re
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from headlab.widgets import (POOLING_RULES, PoolingPlan, draw_pooling, plan_png,  # noqa: E402
                             pooling_explorer, pooling_plan)

LENGTHS, N = (5, 3, 4), 7
SIDES = ("right", "left")
KINDS = (False, True)  # causal?

# Written out by hand for lengths (5, 3, 4), n = 7.
REAL = {
    "right": [[0, 1, 2, 3, 4], [0, 1, 2], [0, 1, 2, 3]],
    "left": [[2, 3, 4, 5, 6], [4, 5, 6], [3, 4, 5, 6]],
}
SOURCES = {
    ("first", "right"): [[0], [0], [0]],
    ("first", "left"): [[0], [0], [0]],
    ("mean", "right"): REAL["right"],
    ("mean", "left"): REAL["left"],
    ("max", "right"): REAL["right"],
    ("max", "left"): REAL["left"],
    ("last_real", "right"): [[4], [2], [3]],
    ("last_real", "left"): [[6], [6], [6]],
    ("last_tensor", "right"): [[6], [6], [6]],
    ("last_tensor", "left"): [[6], [6], [6]],
}
# What the pooled vector has seen in a causal model (bidirectional: always every real token).
CAUSAL_SEEN = {
    ("first", "right"): [[0], [0], [0]],
    ("first", "left"): [[], [], []],  # position 0 is padding and sees no real token before it
    **{(rule, side): REAL[side] for rule in ("mean", "max", "last_real", "last_tensor") for side in SIDES},
}
# The widget is shown in lesson 02 before lesson 06, and several rules are exercises (cls_pool, mean_pool,
# max_pool, last_token_pool): it names a rule and says in words what it reads, never its code.
CODE = re.compile(r"H\[|H\.|\(H|torch|arange|mask\[|\.sum\(|amax|masked_fill|gather|lengths\s*-\s*1|\[:, *-?\d\]")

ALL = list(itertools.product(POOLING_RULES, SIDES, KINDS))


def test_the_rules_are_the_agreed_five():
    assert POOLING_RULES == ("first", "mean", "max", "last_real", "last_tensor")


@pytest.mark.parametrize("rule,side,causal", ALL)
def test_plan_positions(rule, side, causal):
    plan = pooling_plan(rule, LENGTHS, N, padding_side=side, causal=causal)
    assert isinstance(plan, PoolingPlan)
    assert (plan.rule, plan.padding_side, plan.causal, plan.lengths, plan.n) == (rule, side, causal, [5, 3, 4], 7)
    assert plan.real == REAL[side]
    assert plan.sources == SOURCES[(rule, side)]
    assert plan.seen == (CAUSAL_SEEN[(rule, side)] if causal else REAL[side])
    # properties that hold for every plan
    for b, length in enumerate(LENGTHS):
        assert len(plan.real[b]) == length
        assert set(plan.seen[b]) <= set(plan.real[b])
        assert all(0 <= i < N for i in plan.sources[b])
    assert isinstance(plan.reads, str) and plan.reads


@pytest.mark.parametrize("rule,side,causal", ALL)
def test_no_rule_shows_its_code(rule, side, causal):
    plan = pooling_plan(rule, LENGTHS, N, padding_side=side, causal=causal)
    fig, ax = plt.subplots()
    draw_pooling(plan, ax=ax)
    shown = "\n".join([plan.describe(), ax.get_title(), *plan.pitfalls])
    plt.close(fig)
    assert not CODE.search(shown), f"{rule}: the widget shows code: {CODE.search(shown).group()!r} in\n{shown}"


@pytest.mark.parametrize("rule,side,causal", ALL)
def test_plan_pitfalls(rule, side, causal):
    plan = pooling_plan(rule, LENGTHS, N, padding_side=side, causal=causal)
    text = "\n".join(plan.pitfalls)
    on_padding = (rule == "last_tensor" and side == "right") or (rule == "first" and side == "left")
    for b in range(3):
        pooled_pad = f"row {b}: position {SOURCES[(rule, side)][b][0]} is padding"
        assert (pooled_pad in text) == on_padding, text
    assert ("amount of padding" in text) == (rule == "last_tensor" and side == "right"), text
    partial = causal and rule == "first"
    assert ("has seen only" in text) == partial, text
    assert ("left padding" in text) == (side == "left"), text
    if rule in ("mean", "max", "last_real") and side == "right":
        assert plan.pitfalls == []


def test_the_example_from_the_spec():
    plan = pooling_plan("last_tensor", (7, 2), 7)
    assert plan.pitfalls[0].startswith("row 1: position 6 is padding")
    assert not any(p.startswith("row 0") for p in plan.pitfalls)  # row 0 is full: position 6 is its last word
    assert "last real token of row 0 but padding in the others" in plan.pitfalls[1]
    assert pooling_plan("last_real", (5, 3, 4), 7).reads == "each row's own last real position"


def test_padding_moves_the_last_tensor_position_only():
    """Dynamic padding (to the longest row) against more padding: what section 7 of lesson 06 measures."""
    tight, wide = pooling_plan("last_tensor", (5, 3, 4), 5), pooling_plan("last_tensor", (5, 3, 4), 9)
    assert tight.sources == [[4], [4], [4]] and wide.sources == [[8], [8], [8]]
    assert [tight.sources[b][0] in tight.real[b] for b in range(3)] == [True, False, False]
    assert (tight.padding, wide.padding) == (0, 4)
    for rule in ("first", "mean", "max", "last_real"):
        assert pooling_plan(rule, (5, 3, 4), 5).sources == pooling_plan(rule, (5, 3, 4), 9).sources, rule


def test_rows_without_padding_have_no_pitfall():
    for rule in POOLING_RULES:
        for side in SIDES:
            plan = pooling_plan(rule, (4, 4), 4, padding_side=side, causal=False)
            assert plan.pitfalls == [], (rule, side, plan.pitfalls)
    # a causal first-token pool still only sees one token, padding or not
    assert "has seen only 1 of the row's 4" in pooling_plan("first", (4,), 4, causal=True).pitfalls[0]


def test_causal_seen_stops_at_the_source():
    plan = pooling_plan("first", (1, 3), 3, causal=True)
    assert plan.seen == [[0], [0]]
    assert pooling_plan("last_real", (2, 3), 3, causal=True).seen == [[0, 1], [0, 1, 2]]


@pytest.mark.parametrize("bad", [
    dict(rule="cls", lengths=(2,), n=3), dict(rule="mean", lengths=(0, 2), n=3),
    dict(rule="mean", lengths=(4,), n=3), dict(rule="mean", lengths=(), n=3),
    dict(rule="mean", lengths=(2,), n=3, padding_side="middle"),
])
def test_bad_arguments_are_refused(bad):
    with pytest.raises(ValueError):
        pooling_plan(**bad)


def test_plan_is_pure_and_describes_itself():
    a = pooling_plan("max", [5, 3, 4], 7, "left", True)
    b = pooling_plan("max", (5, 3, 4), 7, "left", True)
    assert a == b
    assert "row 1: length 3" in a.describe()
    assert a.key == "rule=max padding_side=left model=causal lengths=5,3,4 n=7"


@pytest.mark.parametrize("rule,side,causal", ALL)
def test_draw_pooling_draws(rule, side, causal):
    plan = pooling_plan(rule, LENGTHS, N, padding_side=side, causal=causal)
    fig, ax = plt.subplots()
    out = draw_pooling(plan, ax=ax, tokens=[["[CLS]", "a", "b", "c", "[SEP]"], ["x", "y", "z"], None])
    assert out is ax
    assert plan.reads in ax.get_title()
    assert len(ax.images) == 1 and ax.images[0].get_array().shape[:2] == (3, 7)
    fig.canvas.draw()
    plt.close(fig)


def test_draw_pooling_makes_its_own_axes_and_png():
    ax = draw_pooling(pooling_plan("mean", (2, 1), 3), tokens=[["a", "b", "[PAD]"], ["c", "[PAD]", "[PAD]"]])
    assert ax.figure is not None
    plt.close(ax.figure)
    png = plan_png(pooling_plan("first", (2, 1), 3))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def description(png: bytes) -> str:
    from PIL import Image

    return Image.open(io.BytesIO(png)).info["Description"]


def test_a_picture_says_which_plan_it_shows():
    plan = pooling_plan("last_real", (2, 1), 3, "left", True)
    assert description(plan_png(plan)) == plan.key
    # a fixed width keeps the picture's size while n changes
    sizes = {plan_png(pooling_plan("mean", (2, 1), n), width=6)[16:24] for n in (2, 4, 6)}
    assert len(sizes) == 1


def test_explorer_builds_and_reacts_to_its_controls():
    already_open = set(plt.get_fignums())   # other tests of this worker's files may leave theirs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # plt.show() on Agg says it cannot show
        explorer = pooling_explorer(rule="mean", padding_side="right", lengths=(5, 3, 4), n=7)
        assert explorer.plan == pooling_plan("mean", (5, 3, 4), 7)
        assert explorer.extra.value == 2 and explorer.n == 7
        assert "padding left out" in explorer.text.value and not CODE.search(explorer.text.value)
        assert description(explorer.picture.value) == explorer.plan.key
        # change the controls, as a student would; the widgets' observers redraw
        explorer.rule.value = "last_tensor"
        assert explorer.plan.sources == [[6], [6], [6]]
        assert "position 6 is padding" in explorer.text.value
        assert description(explorer.picture.value) == explorer.plan.key
        # the padding control: pad only to the longest row, and row 0's last word is pooled
        explorer.extra.value = 0
        assert explorer.plan.n == 5 and explorer.plan.sources == [[4], [4], [4]]
        assert "last real token of row 0" in explorer.text.value
        explorer.extra.value = 4
        assert explorer.plan.sources == [[8], [8], [8]]
        assert description(explorer.picture.value) == "rule=last_tensor padding_side=right model=bidirectional lengths=5,3,4 n=9"
        explorer.extra.value = 2
        explorer.sliders[1].value = 7
        assert explorer.n == 9
        explorer.kind.value = "causal"
        explorer.padding_side.value = "left"
        assert explorer.plan == pooling_plan("last_tensor", (5, 7, 4), 9, "left", True)
        # the update path, called directly
        explorer.rule.value = "first"
        plan = explorer.update()
        assert plan.sources == [[0], [0], [0]] and plan.seen == [[], [], []]
        assert description(explorer.picture.value) == plan.key
    bundle = explorer.mimebundle()
    view = bundle["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == explorer.ui.model_id and view["version_major"] == 2
    assert bundle["image/png"].startswith("iVBORw0KGgo")  # base64 of the PNG signature
    assert explorer._repr_mimebundle_() .keys() == bundle.keys()
    assert set(plt.get_fignums()) <= already_open, "the explorer leaves no figure open"


def test_explorer_uses_only_widgets_that_ipywidgets_7_has():
    import ipywidgets

    explorer = pooling_explorer(lengths=(2, 3), n=4)
    allowed = {"Dropdown", "ToggleButtons", "IntSlider", "HBox", "VBox", "HTML", "Image"}

    def walk(widget):
        yield widget
        for child in getattr(widget, "children", ()):
            yield from walk(child)

    kinds = {type(w).__name__ for w in walk(explorer.ui)}
    assert kinds <= allowed, kinds - allowed
    assert isinstance(explorer.ui, ipywidgets.VBox)
    plt.close("all")

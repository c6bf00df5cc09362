"""The shipped weights are what `dev/build_weights.py` builds.

The test rebuilds the first steps of both models (seconds) and compares their losses with those kept in
the shipped files; with the same recipe, constant learning rate and step count (also compared), the rest
of the run is the same computation. The whole rebuild, compared weight by weight, is
`python -m dev.build_weights --out DIR --check` (about three minutes)."""
from dev import build_weights
from heads_lessons import REPO


def test_the_first_steps_of_a_rebuild_match_the_shipped_weights(tmp_path):
    steps = build_weights.TRACE_STEPS
    build_weights.build(tmp_path, steps={"encoder": steps, "decoder": steps})
    assert build_weights.differences(REPO / "headlab" / "weights", tmp_path, full=False) == []


def test_a_changed_recipe_is_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(build_weights, "LR", build_weights.LR * 1.5)
    build_weights.build(tmp_path, steps={"encoder": 3, "decoder": 3})   # the loss after one update differs
    found = build_weights.differences(REPO / "headlab" / "weights", tmp_path, full=False)
    assert any("encoder: loss at step" in f for f in found) and any("decoder: loss at step" in f for f in found), found

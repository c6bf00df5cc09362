"""One vocabulary of mistakes: every key a check can name is proven by a named wrong implementation in tests/.

The keys are enumerated from the check modules themselves and the proofs from the tests that assert them
(tests/mistakes.py says how both are found). A key nobody proves is a row of the class report that no test
shows a student can reach.
"""
from __future__ import annotations

import mistakes


def _unproven() -> dict[str, list[str]]:
    declared, proven = mistakes.declared_keys(), mistakes.proven_keys()
    return {key: places for key, places in sorted(declared.items()) if key not in proven}


def _listing(keys: dict[str, list[str]]) -> str:
    return "\n".join(f"  {key:32} declared at {', '.join(places)}" for key, places in keys.items())


def test_the_enumeration_finds_the_keys_of_every_kind():
    """Table keys, literal `fail` keys, keys in (key, ...) tables and single-word keys are all found."""
    declared = mistakes.declared_keys()
    for key in ("one-too-many",          # Mistake(...) of an Exercise
                "fixed-seed",            # fail(message, "key")
                "projection-not-transposed",   # a (words, hint, key) table that feeds fail(..., key)
                "inverted",              # a single word, as Mistake's key
                "params-not-int", "params-not-positive"):   # the branches of `a if c else b`
        assert key in declared, key


def test_every_key_outside_the_class_heads_is_proven():
    unproven = {k: v for k, v in _unproven().items() if not mistakes.is_head_key(v)}
    assert not unproven, ("these mistake keys are named by no wrong implementation in tests/ (add one that a test "
                          f"feeds to the check and asserts the key, or delete the branch):\n{_listing(unproven)}")


def test_every_key_of_the_class_heads_is_proven():
    unproven = {k: v for k, v in _unproven().items() if mistakes.is_head_key(v)}
    assert not unproven, f"class-head mistake keys without a proof:\n{_listing(unproven)}"


def test_every_proven_key_is_declared():
    """A test that asserts a key no check declares tests a mistake the course cannot name (a typo, or a
    key renamed in the checks only). The engine's keys from an exception's name are a family."""
    declared = mistakes.declared_keys()
    stray = {key: where for key, where in mistakes.proven_keys().items()
             if key not in declared and not key.startswith(("raised-", "unnamed-")) and key != "first-only"}
    assert not stray, f"proofs of undeclared keys: {stray}"

"""headlab.uses: a cell that uses the learner's answer stops in one line unless its check passed (issue 27, item 2)."""
import pytest
import torch

from headlab import codec, kernel
from headlab.checks import ch06, core
from headlab.uses import NotChecked, UsedAnswerFailed, uses


def last_real_index(mask):            # right and left padding: the last True of each row
    mask = mask.bool()
    n = mask.shape[1]
    return (n - 1 - mask.flip(1).long().argmax(1)).long()


def wrong_last_real_index(mask):      # counts the real tokens: right for right padding only
    return mask.long().sum(1) - 1


@pytest.fixture(autouse=True)
def fresh_kernel():
    core.checked.clear()
    core._tried.clear()


def test_an_answer_whose_check_never_ran_stops_the_cell_in_one_line():
    with pytest.raises(NotChecked) as err:
        uses(last_real_index)
    assert err.value._render_traceback_() == [
        "\x1b[0;31mNotChecked\x1b[0m: this cell uses your `last_real_index`, whose check has not passed yet: "
        "run its check cell"]


def test_an_answer_that_failed_its_check_stops_the_cell():
    wrong_last_real_index.__name__ = "last_real_index"
    with pytest.raises(core.CheckFailed):
        ch06.last_real_index(wrong_last_real_index)
    with pytest.raises(NotChecked) as err:
        uses(wrong_last_real_index)
    # the check ran: "run its check cell" alone would send the learner back to run it unchanged (issue 27)
    assert str(err.value) == ("this cell uses your `last_real_index`, whose check has not passed yet: fix it and run "
                              "its check cell again")


def test_a_pass_is_lost_when_the_check_fails_on_a_later_try():
    ch06.last_real_index(last_real_index)
    uses(last_real_index)
    with pytest.raises(core.CheckFailed):
        ch06.last_real_index(wrong_last_real_index)
    with pytest.raises(NotChecked):
        uses(last_real_index)


def test_an_answer_redefined_after_its_check_passed_must_be_checked_again():
    ch06.last_real_index(last_real_index)

    def last_real_index_again(mask):
        return last_real_index(mask)
    last_real_index_again.__name__ = "last_real_index"
    with pytest.raises(NotChecked, match="changed after its check passed"):
        uses(last_real_index_again)


def test_a_failed_claim_names_the_answer_that_passed_its_check():
    ch06.last_real_index(last_real_index)
    with pytest.raises(UsedAnswerFailed) as err:
        with uses(last_real_index):
            assert False, "claim: the switch moves accuracy by a few reviews at most"
    lines = err.value._render_traceback_()
    assert len(lines) == 1 and "claim: the switch moves accuracy" in lines[0]
    assert "your `last_real_index`, which passed its visible check" in lines[0]


def test_a_crash_in_a_cell_that_uses_an_answer_is_one_line_naming_it():
    ch06.last_real_index(last_real_index)
    with pytest.raises(UsedAnswerFailed) as err:
        with uses(last_real_index):
            torch.zeros(2, 3) + torch.zeros(4, 5)
    (line,) = err.value._render_traceback_()
    assert "using your `last_real_index`, raised RuntimeError" in line


def test_a_passed_answer_lets_the_cell_run():
    ch06.last_real_index(last_real_index)
    with uses(last_real_index):
        ran = True
    assert ran


def test_uses_takes_the_answer_itself():
    with pytest.raises(TypeError, match="uses\\(\\) takes your functions"):
        uses(torch.zeros(2))


@pytest.mark.slow
def test_lesson_06_with_a_wrong_last_real_index_points_every_later_cell_back_to_it(tmp_path):
    """The issue's case: with a wrong `last_real_index`, c06-38-switch failed on a claim about the model
    (accuracy 0.640 against 0.993). Now it, and every cell that uses the function, says in one line that
    the function's check has not passed."""
    import subprocess
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    path = Path(__file__).resolve().parents[1] / "solutions" / "06_causal_pitfall" / "06_causal_pitfall.ipynb"
    nb = nbformat.read(path, as_version=4)
    answer = next(c for c in nb.cells if c.get("id") == "c06-13-last-real-index")
    answer.source = ("def last_real_index(attention_mask):\n"
                     "    return attention_mask.long().sum(1) - 1      # right padding only\n")
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute(stderr=subprocess.DEVNULL)
    said = {c.get("id"): [o for o in c.outputs if o.output_type == "error"] for c in nb.cells if c.cell_type == "code"}
    assert said["c06-14-test-last-real-index"][0].ename == "CheckFailed"
    for cid in ("c06-16-ex2-demo", "c06-26-frozen-table", "c06-38-switch", "c06-40-trunc"):
        (err,) = said[cid]
        assert err.ename == "NotChecked" and len(err.traceback) == 1, (cid, err.traceback)
        assert "your `last_real_index`, whose check has not passed yet" in err.evalue, cid
    assert not said["c06-34-selfcheck"], "last_token_pool passed its check: the self-check cell runs"


def test_under_the_grader_the_cells_that_use_an_answer_run(tmp_path, monkeypatch):
    """The grader replaces a check cell by `respond`, so no visible check passes in its kernel; the cells after
    it must still run on the answer (the feedback shows them, and an output flood there is capped), as before
    `uses` existed. Whether the answer is right is decided outside the kernel."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / codec.FOLDER).mkdir()
    (tmp_path / codec.FOLDER / "calls.json").write_text(
        '{"test_last_real_index": [{"answer": "last_real_index", "calls": []}]}')
    kernel.respond("test_last_real_index", {"last_real_index": wrong_last_real_index})
    assert uses(wrong_last_real_index).names == ["last_real_index"]


def _run_with(lesson: str, answer_id: str, old: str, new: str) -> dict:
    """The solution of `lesson` with one answer edited, run top to bottom (errors allowed): cell id → its errors."""
    import subprocess
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    path = Path(__file__).resolve().parents[1] / "solutions" / lesson / f"{lesson}.ipynb"
    nb = nbformat.read(path, as_version=4)
    answer = next(c for c in nb.cells if c.get("id") == answer_id)
    assert answer.source.count(old) == 1, answer.source
    answer.source = answer.source.replace(old, new)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute(stderr=subprocess.DEVNULL)
    return {c.get("id"): [o for o in c.outputs if o.output_type == "error"] for c in nb.cells if c.cell_type == "code"}


@pytest.mark.slow
def test_lesson_04_with_a_wrong_token_loss_points_every_later_cell_back_to_it():
    """A loss over every position (-100 included, as a class index it crashes): every cell that trains or reads the
    tagger stops in one line, naming token_loss; the cell that uses bio_to_spans alone runs."""
    said = _run_with("04_token_head", "c04-17-token-loss", "ignore_index=-100)", "ignore_index=0)")
    assert said["c04-18-test-token-loss"][0].ename == "CheckFailed"
    for cid in ("c04-20-loss-demo", "c04-27-train", "c04-29-metrics", "c04-31-figure", "c04-39-shift",
                "c04-41d-pieces-train", "c04-42-finetune"):
        (err,) = said[cid]
        assert err.ename == "NotChecked" and len(err.traceback) == 1, (cid, err.traceback)
        assert "your `token_loss`, whose check has not passed yet" in err.evalue, cid
    assert not said["c04-15-head-demo"] and not said["c04-24-spans-demo"]
    assert all(len(e.traceback) <= 5 for errors in said.values() for e in errors)


@pytest.mark.slow
def test_lesson_02_pooler_cell_waits_for_cls_pool():
    """Pooler passed, cls_pool did not: the cell that pools with both says so in one line (it named Pooler only)."""
    said = _run_with("02_pooling", "c02-07-cls-pool", "return H[:, 0]", "return H[0]")
    assert said["c02-08-test-cls-pool"][0].ename == "CheckFailed"
    (err,) = said["c02-13-pooler-demo"]
    assert err.ename == "NotChecked" and "your `cls_pool`" in err.evalue and len(err.traceback) == 1


def _stops_name(said: dict, name: str, cells: tuple) -> None:
    """Each of `cells` stops in one line naming `name`'s check; no cell anywhere prints a traceback over 5 lines."""
    for cid in cells:
        (err,) = said[cid]
        assert err.ename == "NotChecked" and len(err.traceback) == 1, (cid, err.traceback)
        assert f"your `{name}`, whose check has not passed yet" in err.evalue, cid
    long = {cid: len(e.traceback) for cid, errors in said.items() for e in errors if len(e.traceback) > 5}
    assert not long, long


@pytest.mark.slow
def test_lesson_03_with_a_wrong_sequence_classifier_points_every_later_cell_back_to_it():
    """A head that returns probabilities: every cell that builds or trains one stops in one line, naming it."""
    said = _run_with("03_sequence_head", "c03-05-SequenceClassifier",
                     "logits = self.linear(self.dropout(pooled))", "logits = self.linear(self.dropout(pooled)).softmax(-1)")
    assert said["c03-06-test-SequenceClassifier"][0].ename == "CheckFailed"
    _stops_name(said, "SequenceClassifier", ("c03-08-shapes", "c03-13-count", "c03-21-untrained", "c03-29-table",
                                             "c03-34-dropout", "c03-36-mapping", "c03-39-regression"))
    assert not said["c03-42-optA"] and not said["c03-25b-controls"], "cells without the head run"


@pytest.mark.slow
def test_lesson_03_with_unwritten_counts_stops_their_cells():
    said = _run_with("03_sequence_head", "c03-10-head-param-count", "return K * d + K", "raise NotImplementedError()")
    _stops_name(said, "head_param_count", ("c03-13-count",))
    assert not said["c03-21-untrained"] and not said["c03-29-table"]


@pytest.mark.slow
def test_lesson_08_with_a_wrong_sentence_embedding_points_every_later_cell_back_to_it():
    """Padding averaged in: every cell that embeds a sentence stops in one line naming sentence_embedding; the
    cells of align_labels run."""
    said = _run_with("08_real_model", "c08-09-sentence-embedding",
                     "mean = (H * mask).sum(dim=1) / mask.sum(dim=1)", "mean = H.mean(dim=1)")
    assert said["c08-10-test-sentence-embedding"][0].ename == "CheckFailed"
    _stops_name(said, "sentence_embedding", ("c08-12-st", "c08-14-padding", "c08-19-sts-measure", "c08-32b-frozen-run",
                                             "c08-32d-negation", "c08-34b-tune-run", "c08-36-table",
                                             "c08-37b-verdicts", "c08-37d-direction"))
    assert not said["c08-26-conventions"] and not said["c08-28-head"]


@pytest.mark.slow
def test_lesson_08_with_a_wrong_align_labels_points_its_cells_back_to_it():
    said = _run_with("08_real_model", "c08-23-align-labels", "labels.append(-100)\n        previous",
                     "labels.append(word_labels[word_id])\n        previous")
    assert said["c08-24-test-align-labels"][0].ename == "CheckFailed"
    _stops_name(said, "align_labels", ("c08-26-conventions", "c08-28-head"))


@pytest.mark.slow
def test_lesson_07_with_a_wrong_restrict_to_labels_stops_the_cells_that_read_its_probabilities():
    """Logits instead of probabilities: the reliability figure, which reads the probabilities it made, stops too
    (it raised a NameError) once its figure is drawn, so the later figures still find reliability()."""
    said = _run_with("07_typed_outputs", "c07-16-restrict-to-labels", "return chosen.softmax(dim=-1)", "return chosen")
    assert said["c07-17-test-restrict-to-labels"][0].ename == "CheckFailed"
    _stops_name(said, "restrict_to_labels", ("c07-19-restrict-demo", "c07-20c-compare", "c07-20e-format-control",
                                             "c07-26-reliability"))
    assert not said["c07-27c-temperature"] and not said["c07-27d-temperature-fig"], "reliability() is defined"


@pytest.mark.slow
def test_lesson_07_with_a_softmax_over_the_vocabulary_stops_the_same_cells():
    said = _run_with("07_typed_outputs", "c07-16-restrict-to-labels", "return chosen.softmax(dim=-1)",
                     "return next_token_logits.softmax(-1)[:, label_token_ids]")
    assert said["c07-17-test-restrict-to-labels"][0].ename == "CheckFailed"
    _stops_name(said, "restrict_to_labels", ("c07-19-restrict-demo", "c07-20c-compare", "c07-20e-format-control",
                                             "c07-26-reliability"))
    later = ("c07-27a-overconfident", "c07-27c-temperature", "c07-27d-temperature-fig", "c07-31-threshold")
    assert not [cid for cid in later if said[cid]], "the cells after the reliability figure run"


@pytest.mark.slow
def test_lesson_05_with_a_wrong_span_head_points_every_later_cell_back_to_it():
    """Logits that keep the last axis, (B, n, 1): a simulated student saw long tracebacks after it; every cell that
    uses the head stops in one line naming SpanHead, and no cell prints a traceback over 5 lines."""
    said = _run_with("05_span_head", "c05-10-SpanHead", "start_logits, end_logits = logits.unbind(dim=-1)",
                     "start_logits, end_logits = logits[..., :1], logits[..., 1:]")
    assert said["c05-11-test-SpanHead"][0].ename == "CheckFailed"
    _stops_name(said, "SpanHead", ("c05-13-head-demo", "c05-24-untrained", "c05-27-train", "c05-29-em",
                                   "c05-31-substring", "c05-32b-where", "c05-35-crossing", "c05-38-crossing-fig",
                                   "c05-39b-maxlen", "c05-39e-shared"))


@pytest.mark.slow
def test_lesson_05_with_a_wrong_best_span_stops_only_the_cells_that_decode():
    said = _run_with("05_span_head", "c05-17-best-span", "band = (i <= j)", "band = (i >= j)")
    assert said["c05-18-test-best-span"][0].ename == "CheckFailed"
    _stops_name(said, "best_span", ("c05-29-em", "c05-31-substring", "c05-35-crossing", "c05-38-crossing-fig",
                                    "c05-39b-maxlen", "c05-39e-shared"))
    assert not said["c05-27-train"] and not said["c05-32b-where"]

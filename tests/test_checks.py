"""The checks module: clear errors for misuse, honest verdicts for right and wrong answers."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from headlab.checks import CheckFailed
from headlab.checks import ch00


def right_padding_mask(lengths, n):
    return torch.arange(n)[None, :] < lengths[:, None]


def test_a_tensor_instead_of_a_function_is_explained():
    with pytest.raises(CheckFailed, match=r"takes your function padding_mask itself"):
        ch00.padding_mask(torch.zeros(3, 5, dtype=torch.bool))


def test_a_stub_says_it_is_not_written_yet():
    def stub(lengths, n):
        raise NotImplementedError()

    with pytest.raises(NotImplementedError, match="not written yet"):
        ch00.padding_mask(stub)


def test_a_crash_reports_the_inputs_that_caused_it():
    def crashes(lengths, n):
        return lengths.reshape(7, 7)

    with pytest.raises(CheckFailed, match=r"padding_mask\(tensor\(\[3, 1, 4\]\), 6\) raised RuntimeError"):
        ch00.padding_mask(crashes)


def test_a_wrong_return_type_is_named():
    with pytest.raises(CheckFailed, match="returned a list"):
        ch00.padding_mask(lambda lengths, n: [[True] * n] * len(lengths))


def test_modifying_the_input_is_caught():
    def modifies(lengths, n):
        mask = torch.arange(n)[None, :] < lengths[:, None]
        lengths.zero_()
        return mask

    with pytest.raises(CheckFailed, match="changed the `lengths` tensor"):
        ch00.padding_mask(modifies)


def test_right_answers_pass_and_print(capsys):
    ch00.padding_mask(right_padding_mask)
    ch00.causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).tril())
    assert "✓ padding_mask: 3 cases passed" in capsys.readouterr().out


def test_a_wrong_cell_is_located_when_no_known_mistake_matches():
    def odd(n):
        m = torch.ones(n, n, dtype=torch.bool).tril()
        if n > 2:
            m[2, 0] = False
        return m

    with pytest.raises(CheckFailed, match=r"causal_mask\[2, 0\] is False .* query 2 may see key 0"):
        ch00.causal_mask(odd)


def test_messages_name_a_type_with_its_article():
    from headlab.checks.core import a_type
    assert [a_type(x) for x in (np.zeros(1), 3, (1,), None)] == ["an ndarray", "an int", "a tuple", "a NoneType"]


def test_a_loss_written_for_three_axes_is_told_logits_may_be_flat():
    import torch.nn.functional as F
    from headlab.checks import ch01
    with pytest.raises(CheckFailed, match=r"any leading shape .*do not move axes") as failed:
        ch01.mlm_loss(lambda logits, labels: F.cross_entropy(logits.transpose(1, 2), labels))
    assert failed.value.mistake == "fixed-rank-input" and "Flatten logits to (-1, V)" in failed.value.fix


@pytest.mark.parametrize("wrong", [
    lambda x, y: F.cross_entropy(x, y, ignore_index=0),                  # the [PAD] id ignored instead of −100
    lambda x, y: -x.log_softmax(-1).gather(-1, y[:, None]).mean(),       # every label gathered, −100 included
])
def test_a_loss_that_takes_minus_100_for_a_class_is_named(wrong):
    """Both got torch's crash with "print the shape of what you index" (or, on (B, n, V), "move axes")."""
    from headlab.checks import ch01

    def flat(logits, labels):
        return wrong(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
    with pytest.raises(CheckFailed, match="used the label −100 as a class index") as failed:
        ch01.mlm_loss(flat)
    assert failed.value.mistake == "minus-100-used-as-class"   # lesson 04's key: one mistake, one key


def test_a_loss_averaged_per_sequence_is_named():
    from headlab.checks import ch01

    def per_sequence(logits, labels):   # a loop over the batch (flat positions as they are): each sequence's mean
        if logits.dim() == 2:
            return F.cross_entropy(logits, labels)
        return torch.stack([F.cross_entropy(x, y) for x, y in zip(logits, labels)]).mean()
    with pytest.raises(CheckFailed, match="mean of those means") as failed:
        ch01.mlm_loss(per_sequence)
    assert failed.value.mistake == "mean-per-sentence"   # lesson 04's key


@pytest.mark.parametrize("count", [round, int])   # rounded as original BERT's data script does, or down
def test_a_fixed_number_of_chosen_positions_per_row_is_named(count):
    from headlab.checks import ch01

    def fixed_count(ids, special_mask, vocab_size, mask_id, p=0.15, generator=None):
        inputs, labels = ids.clone(), torch.full_like(ids, -100)
        for b in range(len(ids)):
            words = (~special_mask[b]).nonzero().flatten()
            chosen = words[torch.randperm(len(words), generator=generator)[:count(p * len(words))]]
            labels[b, chosen] = ids[b, chosen]
            u = torch.rand(len(chosen), generator=generator)
            inputs[b, chosen[u < 0.8]] = mask_id
            drawn = chosen[(u >= 0.8) & (u < 0.9)]
            inputs[b, drawn] = torch.randint(ch01.NUM_SPECIAL, vocab_size, (len(drawn),), generator=generator)
        return inputs, labels
    with pytest.raises(CheckFailed, match="fixed count per row") as failed:
        ch01.mask_tokens(fixed_count)
    assert failed.value.mistake == "fixed-count-per-row"


def test_what_torch_max_returns_is_called_a_tuple_as_the_grader_calls_it():
    from headlab.checks.core import a_type
    assert a_type(torch.tensor([[1.0, 2.0]]).max(dim=1)) == "a tuple (values, indices)"   # not "a max"

import pytest
import torch

from headlab import count_parameters, tiny_decoder, tiny_encoder
from headlab.data import course_tokenizer, qa_set
from headlab.pretrained import pretrained_decoder, pretrained_encoder
from headlab.qa import qa_batch

torch.set_num_threads(1)
TOK = course_tokenizer()
TEXTS = ["the robot moved the box to the kitchen", "the cat sat", "ada visited paris last week"]


@pytest.fixture(scope="module", params=["encoder", "decoder"])
def model(request):
    return (tiny_encoder if request.param == "encoder" else tiny_decoder)(TOK.vocab_size)


def test_hidden_states_have_shape_b_n_d(model):
    b = TOK.batch(TEXTS)
    assert model(b.ids, b.attention_mask).shape == (3, 8, model.d)


def test_a_batch_is_its_ids_and_attention_mask(model):
    b = TOK.batch(TEXTS, padding_side="left")
    qa = qa_batch(TOK, qa_set(3, seed=0))
    with torch.no_grad():
        assert torch.equal(model(b), model(b.ids, b.attention_mask))
        assert torch.equal(model(qa), model(qa.ids, qa.attention_mask))
    with pytest.raises(TypeError, match="attention mask from the batch"):
        model(b, b.attention_mask)


def test_output_hidden_states_embeddings_first_then_every_block(model):
    b = TOK.batch(TEXTS)
    with torch.no_grad():
        H, hidden = model(b, output_hidden_states=True)
        x = model.tok_emb(b.ids) + model.pos_emb(torch.arange(b.ids.shape[1]).expand_as(b.ids))
        allowed = model.attention_pattern(b.attention_mask)
        by_hand = [x]
        for block in model.blocks:
            by_hand.append(block(by_hand[-1], allowed))
        by_hand[-1] = model.ln_f(by_hand[-1])   # the last one after the final LayerNorm, like GPT-2's
        assert torch.equal(H, model(b))
    assert len(hidden) == model.cfg.n_layers + 1 and hidden[-1] is H
    assert all(torch.equal(h, r) for h, r in zip(hidden, by_hand))


def test_same_seed_same_weights():
    a, b = tiny_encoder(TOK.vocab_size, seed=3), tiny_encoder(TOK.vocab_size, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_extra_right_padding_leaves_real_positions_unchanged(model):
    short, longer = TOK.batch(TEXTS), TOK.batch(TEXTS, pad_to=20)
    with torch.no_grad():
        a = model(short.ids, short.attention_mask)
        b = model(longer.ids, longer.attention_mask)[:, :8]
    real = short.attention_mask
    assert torch.allclose(a[real], b[real], atol=1e-5)


def test_causal_outputs_ignore_later_tokens_and_encoder_outputs_do_not():
    b = TOK.batch([TEXTS[0]])
    edited = b.ids.clone()
    edited[0, 4] = TOK.stoi["cat"]
    dec, enc = tiny_decoder(TOK.vocab_size), tiny_encoder(TOK.vocab_size)
    with torch.no_grad():
        d = (dec(edited) - dec(b.ids)).abs().amax(-1)[0]
        e = (enc(edited) - enc(b.ids)).abs().amax(-1)[0]
    assert torch.all(d[:4] == 0) and torch.all(d[4:] > 0)
    assert torch.all(e > 0)


def test_a_row_of_padding_only_stays_finite(model):
    b = TOK.batch(["the cat", "ada"], padding_side="left")
    with torch.no_grad():
        H = model(b.ids, b.attention_mask)
    assert torch.isfinite(H).all()


def test_attention_pattern_combines_causality_and_padding():
    dec = tiny_decoder(TOK.vocab_size)
    mask = torch.tensor([[True, True, True, False]])
    allowed = dec.attention_pattern(mask)[0, 0]
    assert allowed[2].tolist() == [True, True, True, False]
    assert allowed[1].tolist() == [True, True, False, False]
    assert allowed[3].tolist() == [True, True, True, True]  # a pad query: real keys and itself


def test_too_long_input_is_a_clear_error(model):
    with pytest.raises(ValueError, match="max_len"):
        model(torch.zeros(1, model.cfg.max_len + 1, dtype=torch.long))


def test_count_parameters_counts_a_shared_parameter_once():
    layer = torch.nn.Linear(4, 4)
    both = torch.nn.ModuleList([layer, layer])
    assert count_parameters(both) == 20


@pytest.mark.parametrize("load", [pretrained_encoder, pretrained_decoder])
def test_shipped_models_load_small_and_in_eval_mode(load):
    m = load()
    assert not m.training and m.cfg.vocab_size == TOK.vocab_size
    assert count_parameters(m) < 150_000


def test_pretrained_decoder_predicts_the_toy_language():
    dec = pretrained_decoder()
    b = TOK.batch(["the robot moved the"])
    with torch.no_grad():
        probs = dec.vocab_logits(dec(b.ids)[0, -1]).softmax(-1)
    top = {TOK.itos[i] for i in probs.topk(5).indices.tolist()}
    assert top & {"box", "ball", "bread", "crate", "toy", "loaf", "hat", "cap"}

"""Every architecture of the trainer's table (consert/train/architectures.py) held to its row on a tiny random model
of its kind, built here from a config (issue 76): the identity view equals the model's own forward; the shuffle view
permutes the model's own position ids (RoBERTa's from padding_idx + 1) and changes the output, or is refused where
there are no absolute positions (DeBERTa-v3); the cutoffs and the dropout view zero what they say at the first
encoder layer's input (after ELECTRA's projection); the packed step equals the eager one, values and gradients,
where the table allows it, and is refused in one line where it does not; `remove_dropout` silences every dropout the
architecture names. End to end: `consert train` on an ELECTRA-small, a RoBERTa with a byte-level BPE tokenizer
trained here, refusals before any work, and a sentence-transformers folder whose head the run says it drops."""

from __future__ import annotations

import json
import math

import pytest
import torch

from consert.cli import main
from consert.configs import ConfigError
from consert.encode.pooling import Pooling
from consert.train.architectures import (
    ARCHITECTURES,
    architecture_of,
    architecture_table,
    fast_path_fault,
    position_reader,
    view_fault,
)
from consert.train.augment import AugmentationRatios, shuffled_position_ids
from consert.train.packed import Packing, packed_pooled_forward
from consert.train.views import editor, permuted, pooled_forward, positions, two_view_forward, view_forward

SHAPE = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
             max_position_embeddings=80)  # fmt: skip
#: One tiny model of each kind: the table's architectures (ELECTRA twice: its embedding size below and equal to its
#: hidden size; DeBERTa twice: v3's relative positions only, v2's absolute ones too).
KINDS = {
    "bert": ("bert", {}),
    "roberta": ("roberta", {"pad_token_id": 1}),
    "xlm-roberta": ("xlm-roberta", {"pad_token_id": 1}),
    "electra-small": ("electra", {"embedding_size": 16}),
    "electra": ("electra", {"embedding_size": 32}),
    "distilbert": ("distilbert", {"dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64}),
    "deberta-v3": ("deberta-v2", {"relative_attention": True, "position_biased_input": False,
                                  "pos_att_type": ["p2c", "c2p"], "position_buckets": 16, "norm_rel_ebd": "layer_norm",
                                  "share_att_key": True}),
    "deberta-v2": ("deberta-v2", {"relative_attention": True, "position_biased_input": True,
                                  "pos_att_type": ["p2c", "c2p"]}),
    # rotary positions act through attention alone: weights of a larger spread than BERT's 0.02 make it attend
    "modernbert": ("modernbert", {"pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3, "cls_token_id": 2,
                                  "sep_token_id": 3, "global_attn_every_n_layers": 1, "local_attention": 16,
                                  "initializer_range": 0.5}),
    "mpnet": ("mpnet", {"pad_token_id": 1}),
}  # fmt: skip
RATIOS = AugmentationRatios(token_cutoff=0.25, feature_cutoff=0.25, dropout=0.2)


def tiny_config(kind: str, dropout: float = 0.0):
    """The transformers config of a tiny model of ``kind``, every dropout probability ``dropout``."""
    from transformers import AutoConfig

    model_type, extra = KINDS[kind]
    values = {**SHAPE, **extra}
    if model_type == "distilbert":  # its own names for the shape
        values = {k: v for k, v in values.items() if k not in ("hidden_size", "num_hidden_layers",
                                                               "num_attention_heads", "intermediate_size")}  # fmt: skip
    config = AutoConfig.for_model(model_type, **values)
    for name, value in vars(config).items():
        if (name.endswith("dropout") or name.endswith("dropout_prob")) and isinstance(value, float):
            setattr(config, name, dropout)
    return config


def tiny_model(kind: str, dropout: float = 0.0):
    from transformers import AutoModel

    torch.manual_seed(0)
    return AutoModel.from_config(tiny_config(kind, dropout), attn_implementation="eager").eval()


def batch(config, rows: int = 4, length: int = 12):
    """Token ids and mask: rows of 12, 9, 7 and 5 real tokens, the rest the config's padding id."""
    torch.manual_seed(1)
    mask = torch.zeros(rows, length, dtype=torch.long)
    for row, real in enumerate((12, 9, 7, 5)[:rows]):
        mask[row, :real] = 1
    ids = torch.randint(5, 100, (rows, length))
    ids[mask == 0] = config.pad_token_id if config.pad_token_id is not None else 0
    return ids, mask


def own_mean(model, ids, mask) -> torch.Tensor:
    """The model's own forward, its last layer mean-pooled over the real tokens."""
    hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
    return (hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)


MEAN = Pooling.parse("mean")


@pytest.mark.parametrize("kind", KINDS)
def test_the_identity_view_is_the_models_own_forward(kind):
    """At 03ef47f a RoBERTa or XLM-R view ran on position ids 0..L-1, theirs starting at padding_idx + 1 (max abs
    diff 0.33): training saw other inputs than evaluation."""
    model = tiny_model(kind)
    ids, mask = batch(model.config)
    with torch.no_grad():
        own = own_mean(model, ids, mask)
        first, second = two_view_forward(model, ids, mask, ("none", "none"), MEAN, RATIOS)
        single = view_forward(model, ids, mask, "none", MEAN, RATIOS)
    for pooled in (first, second, single):
        torch.testing.assert_close(pooled, own, atol=1e-5, rtol=1e-5)


def _ids_read(model, ids, mask, order) -> torch.Tensor:
    """The position ids the model's position reader receives in a pass with ``order`` (seen after the views' own
    pre-hook, registered first)."""
    positions(model)
    module, argument = position_reader(model)
    seen = []
    handle = module.register_forward_pre_hook(lambda _m, args: seen.append(args[argument]))
    try:
        with torch.no_grad():
            pooled_forward(model, ids, mask, MEAN, order=order)
    finally:
        handle.remove()
    return seen[0].expand(len(ids), -1)


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "deberta-v3"])
def test_the_shuffle_view_permutes_the_models_own_position_ids_and_changes_the_output(kind):
    """The model's own ids (RoBERTa's and MPNet's from padding_idx + 1, the padding at padding_idx) are permuted among
    each row's real tokens, the padding's kept; the pooled vectors change."""
    from consert.train.augment import shuffled_position_ids

    model = tiny_model(kind)
    ids, mask = batch(model.config)
    torch.manual_seed(3)
    order = shuffled_position_ids(mask)
    own, shuffled = _ids_read(model, ids, mask, None), _ids_read(model, ids, mask, order)
    for row in range(len(ids)):
        real = mask[row].bool()
        assert sorted(shuffled[row, real].tolist()) == sorted(own[row, real].tolist())
        assert shuffled[row, ~real].tolist() == own[row, ~real].tolist()
    assert not torch.equal(shuffled, own)
    if kind in ("roberta", "xlm-roberta", "mpnet"):  # the offset is kept: ids 2..n+1, the padding 1
        assert own[0].tolist() == list(range(2, 14)) and own[3, 5:].tolist() == [1] * 7
    with torch.no_grad():
        torch.manual_seed(3)
        view, _ = two_view_forward(model, ids, mask, ("shuffle", "none"), MEAN, RATIOS)
    assert (view - own_mean(model, ids, mask)).abs().max() > 1e-3


def test_a_shuffle_view_on_relative_positions_only_is_refused_before_any_work(tmp_path, capsys):
    """DeBERTa-v3 has no absolute positions: at 03ef47f its shuffle view changed nothing (diff 0), so ConSERT's
    recipe silently became feature cutoff against the identity. v2's absolute positions take it."""
    v3, v2 = tiny_config("deberta-v3"), tiny_config("deberta-v2")
    assert "has relative positions only" in view_fault(v3, ("shuffle", "feature_cutoff"), "m")
    assert view_fault(v3, ("token_cutoff", "feature_cutoff")) == "" and view_fault(v2, ("shuffle", "none")) == ""
    folder = tmp_path / "deberta-v3"
    v3.save_pretrained(folder)  # no weights: the refusal comes first
    assert main(["train", "--set", f"model={folder}", "--set", f"output_dir={tmp_path / 'out'}"]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "views: shuffle permutes position ids" in line and "position_biased_input false" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_the_cutoffs_and_the_dropout_view_zero_what_they_say_at_the_first_layers_input(kind):
    """token_cutoff: int(0.25 n) whole real rows; feature_cutoff: int(0.25 d) columns of the hidden size d (ELECTRA's
    projection's, 32, not its embedding size, 16: at 03ef47f the mask was sized by one and applied to the other); the
    dropout view: int(0.2 n d) elements of the real rows."""
    model = tiny_model(kind)
    ids, mask = batch(model.config)
    d, real = model.config.hidden_size, mask.sum(1)
    hook = editor(model)
    for view in ("token_cutoff", "feature_cutoff", "dropout"):
        hook.captured = []
        try:
            with torch.no_grad():
                view_forward(model, ids, mask, view, MEAN, RATIOS)
        finally:
            captured, hook.captured = hook.captured, None
        assert captured[0].shape == (*ids.shape, d)
        zero = captured[0] == 0
        for row in range(len(ids)):
            n = int(real[row])
            rows = zero[row, :n].all(dim=1)
            if view == "token_cutoff":
                assert int(rows.sum()) == math.floor(0.25 * n)
            elif view == "feature_cutoff":
                assert int(zero[row, :n].all(dim=0).sum()) == math.floor(0.25 * d)
            else:
                assert int(zero[row, :n].sum()) == math.floor(0.2 * n * d)


@pytest.mark.parametrize("kind", [k for k, (t, _) in KINDS.items() if ARCHITECTURES[t].packed])
def test_the_packed_step_equals_the_eager_one_where_the_table_allows_it(kind):
    """Values and gradients, the shuffle view included (the position hook acts in both paths), fp32."""
    model = tiny_model(kind)
    ids, mask = batch(model.config)
    packing = Packing.of(mask.repeat(2, 1))

    def run(packed: bool):
        model.zero_grad()
        torch.manual_seed(5)
        order = torch.cat([torch.arange(ids.shape[1]).expand_as(ids), shuffled_position_ids(mask)])
        with editor(model).applying():
            if packed:
                with permuted(model, order):
                    pooled = packed_pooled_forward(model, ids.repeat(2, 1), packing, MEAN)
            else:
                pooled = pooled_forward(model, ids.repeat(2, 1), mask.repeat(2, 1), MEAN, order=order)
        pooled.pow(2).sum().backward()
        return pooled.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]

    (eager, eager_grads), (packed, packed_grads) = run(False), run(True)
    torch.testing.assert_close(packed, eager, atol=2e-5, rtol=1e-4)
    assert len(packed_grads) == len(eager_grads)
    for a, b in zip(packed_grads, eager_grads, strict=True):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-3)


@pytest.mark.parametrize("kind", [k for k, (t, _) in KINDS.items() if not ARCHITECTURES[t].packed])
def test_a_fast_path_the_table_does_not_allow_is_refused_in_one_line_before_any_work(kind, tmp_path, capsys):
    """At 03ef47f `packed: on` gave a traceback at step 1 (an AttributeError for DistilBERT and DeBERTa, an
    unexpected position_ids for ModernBERT), and a GPU run of 500+ steps took that path by itself."""
    config = tiny_config(kind)
    title = architecture_of(config).title
    expected = f"{title}'s packed step is not proven equal to its eager forward (BERT's layers only)"
    assert fast_path_fault(config, "packed") == expected
    folder = tmp_path / kind
    config.save_pretrained(folder)
    argv = ["train", "--set", f"model={folder}", "--set", "views=[feature_cutoff, token_cutoff]", "--set", "packed=on",
            "--set", f"output_dir={tmp_path / 'out'}"]  # fmt: skip
    assert main(argv) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and f"packed: on, but {title}'s packed step is not proven" in line


def test_an_architecture_outside_the_table_is_refused_for_training_and_evaluated_as_it_is(tmp_path, capsys):
    from transformers import AlbertConfig

    folder = tmp_path / "albert"
    AlbertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=4).save_pretrained(folder)
    assert main(["train", "--set", f"model={folder}", "--set", f"output_dir={tmp_path / 'out'}"]) == 2
    line = capsys.readouterr().err.strip()
    assert "the trainer does not train 'albert' encoders" in line and "it trains BERT (bert), RoBERTa" in line
    with pytest.raises(ConfigError, match="'albert'"):
        architecture_of(AlbertConfig())


@pytest.mark.parametrize("kind", KINDS)
def test_remove_dropout_silences_every_dropout_the_architecture_names(kind, tmp_path):
    """Each names its own (ModernBERT's attention, embedding and MLP dropout; DistilBERT's `dropout`): with
    remove_dropout two passes in train mode agree, without it (0.3 everywhere) they do not."""
    from consert.train.trained_encoder import trainable_model

    model = tiny_model(kind, dropout=0.3)
    model.save_pretrained(tmp_path / kind)
    ids, mask = batch(model.config)
    for remove in (True, False):
        loaded = trainable_model(tmp_path / kind, "cpu", remove_dropout=remove)
        loaded.train()
        with torch.no_grad():
            a, b = own_mean(loaded, ids, mask), own_mean(loaded, ids, mask)
        assert torch.equal(a, b) == remove, kind


def test_the_training_page_shows_the_table_the_code_declares():
    """The site's build writes the table where the page marks it (docs/hooks/config_keys.py)."""
    import importlib.util

    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location("config_keys", ROOT / "docs" / "hooks" / "config_keys.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    built = hook.on_page_markdown((ROOT / "docs" / "training.md").read_text())
    assert architecture_table() in built and "| ELECTRA | `electra` |" in built


# ---- end to end: `consert train` on tiny models with tokenizers of their kind --------------------------------------


SENTENCES = ["a man is playing a guitar .", "a woman is slicing an onion .", "two dogs run in a field .",
             "the cat sits on the mat .", "a child rides a red bike .", "someone plays the piano ."]  # fmt: skip


def wordpiece_tokenizer():
    """A BERT-style WordPiece tokenizer trained here on a few sentences (ELECTRA's kind)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer()
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer.train_from_iterator(SENTENCES, trainers.WordPieceTrainer(vocab_size=100, special_tokens=special))
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")  # fmt: skip


def byte_bpe_tokenizer():
    """A RoBERTa-style byte-level BPE tokenizer trained here (<s> 0, <pad> 1, </s> 2, as RoBERTa's)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    special = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    trainer = trainers.BpeTrainer(vocab_size=100, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    tokenizer.train_from_iterator(SENTENCES, trainer)
    tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    names = dict(bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>",
                 cls_token="<s>", sep_token="</s>")  # fmt: skip
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, **names)


def model_folder(tmp_path, kind: str, tokenizer) -> str:
    """A tiny model of ``kind`` saved with ``tokenizer`` (its vocabulary the model's)."""
    from transformers import AutoModel

    config = tiny_config(kind)
    config.vocab_size = max(len(tokenizer), 100)
    config.pad_token_id = tokenizer.pad_token_id
    torch.manual_seed(0)
    folder = tmp_path / kind
    AutoModel.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def _train(tmp_path, model: str, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "out"
    argv = ["train", "--set", f"model={model}", "--set", f"output_dir={out}", "--set", "max_steps=3",
            "--set", "eval_every=3", "--set", "dev_max_pairs=40", "--set", "batch_size=8", "--set", "lr=1e-4",
            "--set", "dtype=fp32", *extra]  # fmt: skip
    status = main(argv)
    return status, json.loads((out / "consert_training.json").read_text()) if status == 0 else {}


def test_an_electra_small_trains_with_its_views_after_its_projection(tmp_path, real_data_dir):
    """At 03ef47f: a traceback on the CPU (the feature-cutoff mask sized by the hidden size, applied to the 16-wide
    embedding output). Packed on: its packed step is proven."""
    status, record = _train(tmp_path, model_folder(tmp_path, "electra-small", wordpiece_tokenizer()),
                            "--set", "packed=on", "--set", f"data={real_data_dir}")  # fmt: skip
    assert status == 0 and record["architecture"] == "ELECTRA" and record["packed"] is True
    assert record["steps_run"] == 3 and record["eager_because"] == []


def test_a_roberta_with_its_own_tokenizer_trains_on_its_own_positions(tmp_path, real_data_dir):
    status, record = _train(tmp_path, model_folder(tmp_path, "roberta", byte_bpe_tokenizer()),
                            "--set", f"data={real_data_dir}")  # fmt: skip
    assert status == 0 and record["architecture"] == "RoBERTa" and record["modules_not_kept"] == []


def test_a_sentence_transformers_folders_head_is_named_before_training(tmp_path, real_data_dir, capsys):
    """A folder with CLS pooling, Dense and Normalize: at 03ef47f trained, then exported as mean pooling with its
    Dense and Normalize dropped, no word. The run says so in one line before training, and its record keeps it."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules

    transformer = modules.Transformer(model_folder(tmp_path, "bert", wordpiece_tokenizer()))
    pooling = modules.Pooling(32, pooling_mode="cls")
    dense = modules.Dense(32, 16)
    folder = tmp_path / "st-folder"
    SentenceTransformer(modules=[transformer, pooling, dense, modules.Normalize()], device="cpu").save(str(folder))
    status, record = _train(tmp_path, str(folder), "--set", f"data={real_data_dir}")
    err = capsys.readouterr().err
    note = next(line for line in err.splitlines() if line.startswith("consert train: note: "))
    assert "whose Pooling (cls), Dense (32 -> 16), Normalize follow its transformer" in note
    assert "exports it with eval_pooling mean:-2,-1: those modules are not trained or kept" in note
    assert status == 0 and record["modules_not_kept"] == ["Pooling (cls)", "Dense (32 -> 16)", "Normalize"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", [k for k, (t, _) in KINDS.items() if ARCHITECTURES[t].compiled and k != "electra"])
def test_the_compiled_forward_equals_the_eager_one_where_the_table_allows_it(kind, tmp_path, monkeypatch):
    """The padded step's compiled forward (`compile` on a CUDA run that does not pack), through the views' hooks (a
    shuffle and a feature cutoff), against the eager forward: compiled by Inductor for the CPU here (g++)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    model = tiny_model(kind)
    ids, mask = batch(model.config)
    compiled = torch.compile(model, dynamic=False)
    outputs = []
    for forward in (model, compiled):
        torch.manual_seed(9)
        with torch.no_grad():
            outputs.append(two_view_forward(forward, ids, mask, ("shuffle", "feature_cutoff"), MEAN, RATIOS))
    for eager, fast in zip(*outputs, strict=True):
        torch.testing.assert_close(fast, eager, atol=1e-5, rtol=1e-4)

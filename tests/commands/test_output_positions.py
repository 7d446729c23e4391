"""Every position column of an output is a 1-based residue/word number, the one ``--positions`` and the app take
for the same residue (issue 36, item 5): infill rows' ``positions``, joints records' ``a`` / ``b``, the saturation
table's ``position``; the token indices beside them say so in their names. A model whose tokenizer adds no start
token makes the two bases differ (token index = number - 1), en-small's word pieces by more."""

import csv
import json

import pytest
import torch

from mlmprob.cli import main
from mlmprob.models.hf import HFMaskedLM
from mlmprob.models.tokenizers import ResidueTokenizer
from mlmprob.positions import token_numbers, word_positions
from mlmprob.runtime.inputs import Record
from mlmprob.runtime.writers import read_results

pytestmark = pytest.mark.usefixtures("one_thread")
AA = "ACDEFGHIKLMNPQRSTVWY"
TEXT, GAPPED = "MKTAYIAKQR", "MKT__IAKQR"  # the gap: residues 4 and 5


@pytest.fixture(scope="module")
def headless():
    """A tiny random BERT over the 20 amino acids whose tokenizer adds no start token."""
    import transformers as tf

    tok = ResidueTokenizer(
        ["<cls>", "<pad>", "<sep>", "<mask>", *AA], bos=None, eos="<sep>", pad="<pad>", mask="<mask>", max_length=40
    )
    torch.manual_seed(0)  # test fixture weights
    model = tf.BertForMaskedLM(
        tf.BertConfig(
            vocab_size=24,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=64,
            pad_token_id=1,
        )
    )
    return HFMaskedLM(model.eval(), tok, name="tiny-headless", proposal_ids=tok.residue_ids, max_length=40)


def _cli(monkeypatch, mlm, *argv) -> int:
    monkeypatch.setattr("mlmprob.models.load_mlm", lambda *a, **k: mlm)
    return main([*map(str, argv), "--model", "m", "--device", "cpu", "--dtype", "float32", "--no-progress"])


def _freed(mlm, text: str, numbers) -> list[int]:
    """The tokens ``--positions NUMBERS`` names in ``text`` (and the app's position box)."""
    return word_positions(mlm.encode([text]).word_ids[0], numbers)


def test_token_numbers_give_back_what_word_positions_took():
    from mlmprob import load_mlm

    en = load_mlm("en-small", device="cpu")
    text = "the unbelievable cat sat"
    enc = en.encode([text])
    numbers = token_numbers(enc.word_ids[0], enc.input_ids[0], en.mask_id)
    assert numbers[0] == numbers[-1] == 0 and max(numbers) == 4
    for n in range(1, 5):
        assert word_positions(enc.word_ids[0], [n]) == [t for t, m in enumerate(numbers) if m == n]
    masked = en.encode(["the unbelievable [MASK][MASK] sat"])  # each mask token one word
    numbers = token_numbers(masked.word_ids[0], masked.input_ids[0], en.mask_id)
    masks = (masked.input_ids[0] == en.mask_id).nonzero()[:, 0].tolist()
    assert [numbers[t] for t in masks] == [3, 4] and numbers[masks[-1] + 1] == 5


def test_infill_rows_number_the_gap_as_positions_does(headless, tmp_path, monkeypatch, capsys):
    from mlmprob.app.infilling import infill_compare

    src, out = tmp_path / "in.txt", tmp_path / "o.jsonl"
    src.write_text(GAPPED + "\n")
    assert _cli(monkeypatch, headless, "infill", "--input", src, "--out", out, "-k", "2") == 0
    (row,) = read_results(out)
    assert row["positions"] == [4, 5] and row["token_indices"] == [3, 4]
    assert _freed(headless, TEXT, row["positions"]) == row["token_indices"]
    app = infill_compare(headless, TEXT, "4-5", beam_size=2)  # the app's box names the same gap
    assert app.numbers == (4, 5) and list(app.token_indices) == row["token_indices"]
    capsys.readouterr()
    assert _cli(monkeypatch, headless, "infill", GAPPED, "--json", "-k", "2") == 0
    one = json.loads(capsys.readouterr().out)
    assert (one["positions"], one["token_indices"]) == (row["positions"], row["token_indices"])
    assert _cli(monkeypatch, headless, "infill", GAPPED, "-k", "2") == 0
    assert "gap=2 tokens at positions [4, 5] (1-based)" in capsys.readouterr().out
    # an output written before 0.2.0 (0-based positions, no positions_base) is not continued
    meta = out.with_name(out.name + ".meta.json")
    stored = json.loads(meta.read_text())
    assert stored["config"]["positions_base"] == 1
    del stored["config"]["positions_base"]
    meta.write_text(json.dumps(stored))
    assert _cli(monkeypatch, headless, "infill", "--input", src, "--out", out, "-k", "2", "--resume") == 2
    assert "positions_base" in capsys.readouterr().err


def test_infill_rows_number_words_past_word_pieces():
    from mlmprob import load_mlm
    from mlmprob.app.infilling import infill_compare
    from mlmprob.infilling.stream import infill_records

    en = load_mlm("en-small", device="cpu")
    (row,) = infill_records(en, [Record("a", "the unbelievable _ sat")], beam_size=2)
    app = infill_compare(en, "the unbelievable cat sat", "3", beam_size=2)
    assert row["positions"] == [3] == list(app.numbers) and row["token_indices"] == list(app.token_indices)
    assert row["token_indices"] == _freed(en, "the unbelievable cat sat", [3]) and row["token_indices"][0] > 3


def test_joints_records_number_the_pair_as_positions_does(headless, tmp_path):
    from mlmprob.joints.job import JointsSpec, run_joints
    from mlmprob.runtime.command import RunOptions

    seqs = ["MKTAYIAKQR", "ACDEFGHIKLMN", "PQRSTVWY"]
    data = tmp_path / "seqs.txt"
    data.write_text("\n".join(seqs) + "\n")
    spec = JointsSpec(n_pairs=3, top_k=4, ag_steps=10)
    recs = run_joints(headless, data, RunOptions(str(tmp_path / "out")), spec)
    assert len(recs) == 6
    for r in recs:
        assert (r["a"], r["b"]) == (r["a_token_index"] + 1, r["b_token_index"] + 1)
        assert _freed(headless, seqs[r["seq_index"]], [r["a"], r["b"]]) == [r["a_token_index"], r["b_token_index"]]
        assert r["distance"] == r["b_token_index"] - r["a_token_index"] - 1
    meta = tmp_path / "out" / "pairs.jsonl.meta.json"
    stored = json.loads(meta.read_text())
    assert stored["config"]["positions_base"] == 1
    del stored["config"]["positions_base"]  # a record file written before 0.2.0
    meta.write_text(json.dumps(stored))
    with pytest.raises(Exception, match="positions_base"):
        run_joints(headless, data, RunOptions(str(tmp_path / "out")), spec)


def test_saturation_table_numbers_residues_as_positions_does(headless, tmp_path, monkeypatch):
    out = tmp_path / "sat.jsonl"
    assert (
        _cli(monkeypatch, headless, "variants", "--saturate", "--wild-type", TEXT, "--offset", "24", "--out", out) == 0
    )
    rows = list(csv.DictReader((tmp_path / "sat.saturation.csv").open()))
    assert list(rows[0])[:4] == ["mutant", "position", "residue", "token_index"] and len(rows) == 19 * len(TEXT)
    for r in rows:
        position, residue, token = int(r["position"]), int(r["residue"]), int(r["token_index"])
        assert TEXT[position - 1] == r["wt"] and r["mutant"] == f"{r['wt']}{residue}{r['mt']}"
        assert residue == position + 23 and token == position - 1
        assert _freed(headless, TEXT, [position]) == [token]
    assert {int(r["position"]) for r in rows} == set(range(1, len(TEXT) + 1))

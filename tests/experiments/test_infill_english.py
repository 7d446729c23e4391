"""Infilling experiments on English sentences: token gaps of a sub-word tokenizer, the runner, the tables."""

import json

import pytest
import torch

from experiments.english_gaps import (
    encode_sentences,
    load_sentences,
    sample_token_gaps,
)
from experiments.infill_measure import gap_inputs
from experiments.infill_runner import ExperimentConfig, main, record_key, run_experiment, tables_markdown
from mlmprob.errors import MLMProbError
from mlmprob.infilling import candidate_ids
from mlmprob.metrics import bleu
from mlmprob.runtime.log import read_log


def read_records(path):
    return list(read_log(path))


MAX_LEN = 32
S = [
    "A man is playing a guitar on the street.",
    "The man is sleeping at home.",
    "Two dogs are running through a snowy field.",
    "The children are swimming in the lake.",
    "A woman reads a newspaper at the cafe.",
    "I see a cat.",
]
LONG = (
    "An old man and a young girl walk slowly along the quiet beach at sunset while the small brown dog runs "
    "far ahead of them in the cold wind, and the two of them talk about the long day they had at the old "
    "market."
)  # 46 words: > 32 tokens whatever the vocabulary
UNK = "A man \u2603 is here."  # the snowman is not in the WordPiece alphabet
X = [
    "The council approved plans for a new park in the town centre.",
    "Police are searching for a man who escaped from prison on Monday.",
    "Scientists have found a new species of frog in the rainforest.",
    "A famous singer has cancelled her world tour after falling ill.",
]
ENCODABLE = [f"snli-{i}" for i in range(6)]  # snli-6 is too long, snli-7 has an unknown symbol
SPECIALS = 5  # [PAD] [UNK] [CLS] [SEP] [MASK] = ids 0..4
# The sub-word token counts come from the trained tokenizer itself (fixture ``n_tokens``), not from this file.


def write_data(d):
    rows = [
        "premise\thypothesis\tlabel",
        f"{S[0]}\t{S[1]}\t0",
        f"{S[0]}\tDogs sit.\t2",  # repeat; 2 words
        f"{S[2]}\t{S[3]}\t1",
        f"{S[4]}\t{S[5]}\t0",
        f"{LONG}\t{UNK}\t1",
    ]
    (d / "snli_test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    xs = [{"document": f"Text {i}.", "summary": s, "id": str(i)} for i, s in enumerate(X + ["Too short here."])]
    (d / "xsum_test.jsonl").write_text("".join(json.dumps(x) + "\n" for x in xs), encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return write_data(tmp_path_factory.mktemp("endata"))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    import transformers

    from mlmprob.training.data import train_wordpiece

    d = tmp_path_factory.mktemp("tinyen")
    tok = train_wordpiece(S + [LONG] + X, 200, MAX_LEN)
    torch.manual_seed(0)  # test-only: the tiny model's random weights
    cfg = transformers.BertConfig(
        vocab_size=len(tok),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=MAX_LEN,
    )
    transformers.BertForMaskedLM(cfg).save_pretrained(str(d))
    tok.save_pretrained(str(d))
    return d


@pytest.fixture(scope="module")
def mlm(model_dir):
    from mlmprob import load_mlm

    return load_mlm(str(model_dir))


@pytest.fixture(scope="module")
def n_tokens(mlm):
    """Sub-word tokens of each encodable SNLI sentence, by the model's own tokenizer."""
    texts = dict(zip(ENCODABLE, S))
    n = {i: len(mlm.tokenizer.hf.tokenize(t)) for i, t in texts.items()}
    assert 4 <= n["snli-5"] < min(v for i, v in n.items() if i != "snli-5")  # "I see a cat." is the shortest
    assert max(n.values()) <= MAX_LEN - 2
    return n


def test_sentences_and_their_encoding(mlm, data_dir, n_tokens):
    snli = load_sentences("snli", data_dir)
    assert [s.text for s in snli] == S[:5] + [S[5], LONG, UNK]  # distinct, 4..60 words, file order
    assert [s.id for s in snli] == [f"snli-{i}" for i in range(8)]
    assert [s.text for s in load_sentences("xsum", data_dir)] == X
    enc = encode_sentences(mlm, snli)
    assert [s.id for s in enc.sentences] == ENCODABLE
    assert dict(enc.skipped).keys() == {"snli-6", "snli-7"}
    assert "at most 32" in dict(enc.skipped)["snli-6"] and "unknown token" in dict(enc.skipped)["snli-7"]
    hf = mlm.tokenizer.hf
    for s in enc.sentences:
        assert list(s.input_ids) == hf(s.text)["input_ids"]  # [CLS] tokens [SEP]
        assert s.input_ids[0] == hf.cls_token_id and s.input_ids[-1] == hf.sep_token_id
        assert s.cols == tuple(range(1, n_tokens[s.id] + 1))
    assert any(t.startswith("##") for s in S for t in hf.tokenize(s))  # sub-word tokens indeed
    # English fills range over the whole vocabulary less the special tokens (no residue alphabet)
    assert mlm.proposal_ids is None and len(hf) == mlm.vocab_size == 200
    assert candidate_ids(mlm).tolist() == list(range(SPECIALS, 200))


def test_gaps_are_deterministic_consecutive_tokens_and_prefix_stable(mlm, data_dir, n_tokens):
    enc = encode_sentences(mlm, load_sentences("snli", data_dir)).sentences
    g3 = sample_token_gaps(enc, "snli", 3, 3, seed=0)
    g9 = sample_token_gaps(enc, "snli", 3, 9, seed=0)
    assert g9[:3] == g3 and sample_token_gaps(enc, "snli", 3, 9, seed=0) == g9
    assert [g.gap_id for g in g9] == list(range(9))
    other = sample_token_gaps(enc, "snli", 3, 9, seed=1)
    assert [(g.chain_id, g.start) for g in other] != [(g.chain_id, g.start) for g in g9]
    # 6 sentences have >= 4 tokens: the first 6 gaps take each once (a permutation), then they repeat
    assert sorted(g.chain_id for g in g9[:6]) == ENCODABLE
    assert [g.chain_id for g in g9[6:]] == [g.chain_id for g in g9[:3]]
    by_id = {s.id: s for s in enc}
    for g in g9:
        s = by_id[g.chain_id]
        assert g.k == 3 and g.seq == s.text and g.input_ids == s.input_ids and g.region == "random"
        assert g.cols == (g.start + 1, g.start + 2, g.start + 3)  # k consecutive tokens after [CLS]
        assert 0 <= g.start <= n_tokens[g.chain_id] - 3
        assert g.gold_ids == tuple(s.input_ids[g.start + 1 : g.start + 4])
        assert all(t >= SPECIALS for t in g.gold_ids)
        ids, cols = gap_inputs(mlm, g)
        assert ids.tolist() == [list(s.input_ids)] and cols.tolist() == list(g.cols)


def test_too_short_sentences_are_skipped(mlm, data_dir, n_tokens):
    enc = encode_sentences(mlm, load_sentences("snli", data_dir)).sentences
    short = n_tokens["snli-5"]  # "I see a cat."
    assert {g.chain_id for g in sample_token_gaps(enc, "snli", short - 1, 40, seed=0)} == set(ENCODABLE)
    assert {g.chain_id for g in sample_token_gaps(enc, "snli", short, 40, seed=0)} == set(ENCODABLE) - {"snli-5"}
    for k in sorted({v for v in n_tokens.values()} | {v - 1 for v in n_tokens.values()}):
        want = {i for i, n in n_tokens.items() if n >= k + 1}
        if want:  # 40 gaps over at most 6 sentences: every eligible sentence is drawn
            assert {g.chain_id for g in sample_token_gaps(enc, "snli", k, 40, seed=0)} == want
    longest = max(n_tokens.values())
    with pytest.raises(MLMProbError, match=f"{longest + 1} or more tokens"):
        sample_token_gaps(enc, "snli", longest, 1, seed=0)
    with pytest.raises(MLMProbError, match="only the region"):
        sample_token_gaps(enc, "snli", 2, 1, seed=0, region="cdrh3")


def test_config_regions_and_bad_input(data_dir, tmp_path):
    assert ExperimentConfig().regions == ("random", "cdrh3")
    assert ExperimentConfig(dataset="snli").regions == ("random",)
    assert ExperimentConfig(dataset="thera").regions == ("random",)  # no alignment, no CDR-H3
    with pytest.raises(MLMProbError, match="cdrh3 for dataset thera"):
        ExperimentConfig(dataset="thera", regions=("cdrh3",))
    with pytest.raises(MLMProbError, match="unknown dataset 'brown'"):
        ExperimentConfig(dataset="brown")
    with pytest.raises(MLMProbError, match="cdrh3 for dataset snli"):
        ExperimentConfig(dataset="snli", regions=("cdrh3",))
    with pytest.raises(MLMProbError, match=r"snli_test\.tsv, .*xsum_test\.jsonl not found: pass --data DIR"):
        load_sentences("snli", tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "snli_test.tsv").write_text("premise\thypothesis\tlabel\nToo short.\tNo.\t0\n")
    (empty / "xsum_test.jsonl").write_text("")
    cfg = ExperimentConfig(models=("x",), dataset="snli", lengths=(2,), n_gaps=1, methods=("hcb-l2r",))
    with pytest.raises(MLMProbError, match="has no sentence of 4 to 60 words"):
        run_experiment(cfg, tmp_path / "r.jsonl", data_dir=empty, load=lambda name: None, progress=False)


def test_runner_records_resume_and_tables(mlm, data_dir, tmp_path):
    out = tmp_path / "en.jsonl"
    cfg = ExperimentConfig(
        models=("tiny-en",), dataset="snli", lengths=(2, 3), n_gaps=2, beam_size=3, methods=("hcb-l2r", "standard-l2r")
    )
    assert run_experiment(cfg, out, data_dir=data_dir, load=lambda name: mlm, progress=False) == 2 * 2 * 2
    recs = read_records(out)
    enc = encode_sentences(mlm, load_sentences("snli", data_dir)).sentences
    gaps = {(k, g.gap_id): g for k in (2, 3) for g in sample_token_gaps(enc, "snli", k, 2, seed=0)}
    hf = mlm.tokenizer.hf
    assert sorted((r["k"], r["gap_id"], r["method"]) for r in recs) == sorted(
        (k, i, m) for k in (2, 3) for i in (0, 1) for m in ("hcb-l2r", "standard-l2r")
    )
    for r in recs:
        g = gaps[(r["k"], r["gap_id"])]
        assert (r["model"], r["dataset"], r["region"]) == ("tiny-en", "snli", "random")
        assert r["chain_id"] == g.chain_id and r["start"] == g.start and r["gold_ids"] == list(g.gold_ids)
        assert r["gold"] == hf.decode(list(g.gold_ids))
        assert len(r["fill_ids"]) == len(r["fills"]) == len(r["scores"]) == 3
        assert r["fills"] == [hf.decode(f) for f in r["fill_ids"]]
        assert all(len(f) == r["k"] and min(f) >= SPECIALS for f in r["fill_ids"])  # never a special token
        assert r["scores"] == sorted(r["scores"], reverse=True)
        # metrics compare token ids
        top = r["fill_ids"][0]
        assert r["top1"] == float(top == r["gold_ids"]) and r["top5"] == float(r["gold_ids"] in r["fill_ids"])
        assert r["identity"] == sum(a == b for a, b in zip(top, r["gold_ids"])) / r["k"]
        assert r["bleu"] == bleu(top, r["gold_ids"])
    rows = {(r["k"], r["gap_id"], r["method"]): r["rows"] for r in recs}
    assert all(rows[(k, i, "hcb-l2r")] == rows[(k, i, "standard-l2r")] > 0 for k in (2, 3) for i in (0, 1))

    # resume: a cut line is dropped, nothing is redone; more gaps extend the same draws
    with out.open("a") as f:
        f.write('{"model": "tiny-en", "tru')
    assert run_experiment(cfg, out, data_dir=data_dir, load=lambda name: mlm, progress=False) == 0
    assert read_records(out) == recs
    more = ExperimentConfig(
        models=("tiny-en",), dataset="snli", lengths=(2, 3), n_gaps=3, beam_size=3, methods=("hcb-l2r", "standard-l2r")
    )
    assert run_experiment(more, out, data_dir=data_dir, load=lambda name: mlm, progress=False) == 2 * 2
    recs3 = read_records(out)
    assert recs3[:8] == recs and {r["gap_id"] for r in recs3[8:]} == {2}
    assert len({record_key(r) for r in recs3}) == len(recs3) == 12

    md = tables_markdown(recs3)
    assert md.startswith("# Infilling results\n") and "number of missing tokens" in md and "residues" not in md
    assert "## Table 1 - tiny-en, random gaps (n per cell: 3)" in md
    assert "| HCB Left-to-Right |" in md and "| Standard Left-to-Right |" in md and "top1 k=3" in md
    assert "cdrh3" not in md
    mixed = tables_markdown(recs3 + [{**r, "dataset": "gdpa1"} for r in recs3])
    assert "# Infilling results - gdpa1" in mixed and "# Infilling results - snli" in mixed
    assert "missing residues" in mixed and "missing tokens" in mixed


def test_k1_fills_range_over_the_whole_vocabulary(mlm, data_dir, tmp_path):
    cfg = ExperimentConfig(
        models=("tiny-en",), dataset="xsum", lengths=(1,), n_gaps=2, beam_size=400, methods=("standard-l2r",)
    )
    assert run_experiment(cfg, tmp_path / "k1.jsonl", data_dir=data_dir, load=lambda name: mlm, progress=False) == 2
    for r in read_records(tmp_path / "k1.jsonl"):
        assert sorted(f[0] for f in r["fill_ids"]) == list(range(SPECIALS, 200))  # every non-special token
        assert r["top20"] == float(r["gold_ids"] in r["fill_ids"][:20])
        assert r["chain_id"].startswith("xsum-")


def test_cli_english_run_and_errors(model_dir, data_dir, tmp_path, capsys):
    out, tables = tmp_path / "cli.jsonl", tmp_path / "cli.md"
    argv = [
        "--models",
        str(model_dir),
        "--dataset",
        "xsum",
        "--lengths",
        "2",
        "--n-gaps",
        "2",
        "--methods",
        "hcb-l2r",
        "--beam-size",
        "2",
        "--out",
        str(out),
        "--tables",
        str(tables),
        "--data-dir",
        str(data_dir),
    ]
    assert main(argv) == 0
    recs = read_records(out)
    assert [(r["dataset"], r["region"], r["gap_id"]) for r in recs] == [("xsum", "random", 0), ("xsum", "random", 1)]
    assert "number of missing tokens" in tables.read_text()
    assert main(argv) == 0 and len(read_records(out)) == 2  # resumed: nothing new
    assert main(argv[:4] + ["--regions", "cdrh3"] + argv[4:]) == 2
    assert "cdrh3 for dataset xsum" in capsys.readouterr().err
    assert main(argv[:-1] + [str(tmp_path)]) == 2
    assert f"{tmp_path}/xsum_test.jsonl not found: pass --data DIR" in capsys.readouterr().err

"""``mlmprob infill --input``: a file of gapped records streamed through the runtime layer (unit = gap).
Uses the tiny random BERT of conftest (one residue per word)."""

import json
import random

import pytest

from mlmprob.cli import main
from mlmprob.errors import MLMProbError
from mlmprob.models.spec import ModelSpec
from mlmprob.runtime.inputs import Record
from mlmprob.runtime.writers import read_results

AA = "ACDEFGHIKLMNPQRSTVWY"
pytestmark = pytest.mark.usefixtures("one_thread")


def _gapped(rng, n_gaps):
    """Space-separated residues with ``n_gaps`` gaps written in the three notations."""
    words = [rng.choice(AA) for _ in range(rng.randint(10, 18))]
    out, at = [], sorted(rng.sample(range(2, len(words) - 2), n_gaps))
    for i, w in enumerate(words):
        out.append(w)
        if i in at:
            k = rng.randint(1, 3)
            out.append(rng.choice([" ".join("_" * k), f"[MASK]x{k}", " ".join(["<mask>"] * k)]))
    return " ".join(out)


@pytest.fixture(scope="module")
def gapped(tmp_path_factory):
    rng = random.Random(3)
    path = tmp_path_factory.mktemp("infill") / "in.fasta"
    path.write_text("".join(f">s{i}\n{_gapped(rng, 1 + i % 2)}\n" for i in range(10)))
    return path


def _run(*args):
    return main(["infill", *map(str, args), "--no-progress", "-k", "3"])


@pytest.fixture(scope="module")
def reference(gapped, tiny_bert_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "one.jsonl"
    assert _run("--input", gapped, "--model", tiny_bert_dir, "--gaps", "each", "--out", out, "--device", "cpu") == 0
    return list(read_results(out))


def _same(rows, ref, tol=1e-5):
    by = {r["id"]: r for r in rows}
    assert sorted(by) == sorted(r["id"] for r in ref) and len(by) == len(rows)
    for r in ref:
        got = by[r["id"]]
        assert got["tokens"] == r["tokens"] and got["fills"] == r["fills"] and got["positions"] == r["positions"]
        assert got["token_indices"] == r["token_indices"]
        assert max(abs(a - b) for a, b in zip(got["scores"], r["scores"])) <= tol


def test_rows_match_the_api_and_units_are_gaps(reference, gapped, tiny_bert_dir):
    from mlmprob import load_mlm
    from mlmprob.infilling import infill
    from mlmprob.infilling.stream import expand_gaps, mask_text
    from mlmprob.runtime.inputs import read_records

    recs = read_records(gapped)
    assert [r["id"] for r in reference] == [f"s{i}/gap{k}" for i in range(10) for k in range(1, 2 + i % 2)]
    mlm = load_mlm(str(tiny_bert_dir), device="cpu")
    for row in reference:
        rec = next(r for r in recs if r.id == row["record"])
        ids = mlm.encode([expand_gaps(rec.seq, mask_text(mlm))]).input_ids
        masked = (ids[0] == mlm.mask_id).nonzero(as_tuple=True)[0].tolist()
        tokens = row["token_indices"]
        assert set(tokens) <= set(masked) and row["length"] == len(tokens)
        assert tokens == list(range(tokens[0], tokens[-1] + 1))  # contiguous
        assert row["positions"] == tokens  # residue numbers: one [CLS], then one token per residue
        # the other gaps of the record stay masked while this one is filled
        ref = infill(mlm, ids, tokens, method="hcb", beam_size=3)
        assert row["tokens"] == [list(c.tokens) for c in ref]
        assert row["scores"] == pytest.approx([c.score for c in ref], abs=1e-5)
        assert len(row["fills"]) == 3 and row["method"] == "hcb" and row["beam_size"] == 3


def test_joint_gaps_equal_the_single_sequence_mode(gapped, tiny_bert_dir, tmp_path, capsys):
    from mlmprob.runtime.inputs import read_records

    out = tmp_path / "joint.jsonl"
    assert (
        _run("--input", gapped, "--model", tiny_bert_dir, "--out", out, "--order", "best", "--method", "standard") == 0
    )
    rows = list(read_results(out))
    assert [r["id"] for r in rows] == [f"s{i}" for i in range(10)] and all(r["gap"] is None for r in rows)
    capsys.readouterr()
    rec = read_records(gapped)[1]  # two gaps, filled jointly
    assert _run(rec.seq, "--model", tiny_bert_dir, "--order", "best", "--method", "standard", "--json") == 0
    one = json.loads(capsys.readouterr().out)
    assert one["positions"] == rows[1]["positions"] and len(rows[1]["positions"]) > 1
    assert one["token_indices"] == rows[1]["token_indices"]
    assert [c["tokens"] for c in one["candidates"]] == rows[1]["tokens"]
    assert [c["score"] for c in one["candidates"]] == pytest.approx(rows[1]["scores"], abs=1e-6)


def test_shards_together_equal_one_process(reference, gapped, tiny_bert_dir, tmp_path):
    parts = [tmp_path / "p1.jsonl", tmp_path / "p2.parquet"]
    for i, part in enumerate(parts, 1):
        assert (
            _run("--input", gapped, "--model", tiny_bert_dir, "--gaps", "each", "--out", part, "--shard", f"{i}/2") == 0
        )
    rows = [list(read_results(p)) for p in parts]
    order = [r["id"] for r in reference]
    assert [r["id"] for r in rows[0]] == order[0::2] and [r["id"] for r in rows[1]] == order[1::2]
    merged = tmp_path / "all.jsonl"
    assert main(["merge", "--out", str(merged), *map(str, parts)]) == 0
    _same(list(read_results(merged)), reference)


def test_workers_equal_one_process(reference, gapped, tiny_bert_dir, tmp_path):
    out = tmp_path / "w.jsonl"
    assert _run("--input", gapped, "--model", tiny_bert_dir, "--gaps", "each", "--out", out, "--workers", "2") == 0
    rows = list(read_results(out))
    assert [r["id"] for r in rows] == [r["id"] for r in reference]  # written in input order
    _same(rows, reference)


def test_resume_after_a_truncated_output_gives_every_gap_once(reference, gapped, tiny_bert_dir, tmp_path):
    out = tmp_path / "r.tsv"
    args = ("--input", gapped, "--model", tiny_bert_dir, "--gaps", "each", "--out", out)
    assert _run(*args) == 0
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:6]) + lines[6][:15])  # header + 5 rows + a row cut by a kill
    assert _run(*args) == 2  # exists: needs --resume
    assert _run(*args, "--resume") == 0
    rows = list(read_results(out))
    assert len(rows) == len(reference)
    _same(
        [
            {**r, **{k: json.loads(r[k]) for k in ("positions", "token_indices", "fills", "scores", "tokens")}}
            for r in rows
        ],
        reference,
    )
    assert _run(*args[:-2], "--out", out, "--resume", "--method", "standard") == 2  # other options: refused


def test_bad_records_are_one_line_errors_or_skipped(tiny_bert_dir, tmp_path, capsys):
    bad = tmp_path / "bad.tsv"
    bad.write_text("name\tseq\nok\tA C _ _ D\nnogap\tA C D\nzero\tA [MASK]x0 C\nodd\tA C _ B\n")
    base = ("--input", bad, "--column", "seq", "--id-column", "name", "--model", tiny_bert_dir)
    capsys.readouterr()
    assert _run(*base) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: record 'nogap': no gap") and "\n" not in err
    out = tmp_path / "o.jsonl"
    assert _run(*base, "--skip-invalid", "--out", out) == 0
    assert [r["id"] for r in read_results(out)] == ["ok"]
    err = capsys.readouterr().err
    assert "skipped 'zero': a gap of 0 tokens" in err and "skipped 'odd'" in err
    meta = json.loads((tmp_path / "o.jsonl.meta.json").read_text())
    assert [s[0] for s in meta["skipped"]] == ["nogap", "zero", "odd"]
    for args, msg in [
        (("A C _ D", "--input", bad), "give one SEQUENCE or --input FILE, not both"),
        (("--model", tiny_bert_dir), "give one SEQUENCE or --input FILE"),
        (("A C _ D", "--out", out), "--out needs --input FILE"),
        (("A C _ D", "--shard", "1/2"), "--shard needs --input FILE"),
        ((*base, "--json"), "--json is for one SEQUENCE"),
        ((*base, "--method", "standard", "--pivot", "A"), "only by method='hcb'"),
        (("--input", tmp_path / "none.txt"), "does not exist"),
    ]:
        assert _run(*args) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and msg in err and "\n" not in err


def test_gap_units_and_job_on_an_in_memory_model(tiny_bert):
    from mlmprob.infilling.spec import InfillSpec
    from mlmprob.infilling.stream import InfillJob, count_gaps, infill_records, iter_gap_units

    assert count_gaps("A_C__[MASK]x2D") == 2 and count_gaps("AC") == 0
    units = list(iter_gap_units([Record("a", "AC__D_"), Record("b", "ACD"), Record("c", "A[mask]x0C")], "each"))
    assert [(u.id, u.gap, u.n_gaps, u.error is None) for u in units] == [
        ("a/gap1", 1, 2, True),
        ("a/gap2", 2, 2, True),
        ("b", None, 0, False),
        ("c", None, 0, False),
    ]
    rows = list(infill_records(tiny_bert, [Record("a", "AC__D_")], gaps="each", beam_size=2, skip_invalid=True))
    assert [r["positions"] for r in rows] == [[3, 4], [6]] == [r["token_indices"] for r in rows]
    with pytest.raises(MLMProbError, match="record 'b': no gap"):
        list(infill_records(tiny_bert, [Record("b", "ACD")]))
    with pytest.raises(MLMProbError, match="record 'x': has symbol 'Z'"):
        list(infill_records(tiny_bert, [Record("x", "AZ_")]))
    with pytest.raises(MLMProbError, match="unknown gaps mode"):
        list(iter_gap_units([], "some"))
    state = InfillJob(model_spec=ModelSpec("tiny"), spec=InfillSpec(beam_size=2), skip_invalid=True).prepare(tiny_bert)
    rows, skipped = InfillJob(model_spec=ModelSpec("tiny"), spec=InfillSpec(beam_size=2), skip_invalid=True).run(
        state, list(iter_gap_units([Record("a", "A_C"), Record("b", "ACD")]))
    )
    assert [r["id"] for r in rows] == ["a"] and skipped == [("b", "no gap; write it as [MASK]x5, <mask> or _____")]

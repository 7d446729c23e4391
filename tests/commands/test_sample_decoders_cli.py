"""``mlmprob sample --method unmask | adaptive``: folder and streamed modes, resume, the flags that do not apply
refused with one line, the costs in the summary and the rows."""

import json
import math

import pytest

from mlmprob.cli import main

TRASTUZUMAB_VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    "WGGDGFYAMDYWGQGTLVTVSS"
)
SEQ = " ".join(TRASTUZUMAB_VH)


@pytest.fixture(scope="module")
def peaked_bert_dir(tmp_path_factory):
    from tests.conftest import save_tiny_bert

    return save_tiny_bert(tmp_path_factory.mktemp("peakedbert"), init=0.5)


def _argv(model, out, method, *extra):
    return [
        "sample",
        "--model",
        str(model),
        "--seq",
        SEQ,
        "--cdr",
        "H3",
        "--numbering",
        "kabat",
        "--method",
        method,
        "--chains",
        "2",
        "--epochs",
        "3",
        "--out",
        str(out),
        "--no-progress",
        "--device",
        "cpu",
        *extra,
    ]


def test_unmask_folder_run(peaked_bert_dir, tmp_path, capsys):
    out = tmp_path / "run"
    extra = ("--score", "margin", "--steps", "4", "--block-length", "3", "--remask", "0.2", "--remask-steps", "2")
    assert main(_argv(peaked_bert_dir, out, "unmask", *extra)) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["method"], summary["score"], summary["steps"], summary["block_length"]) == (
        "unmask",
        "margin",
        4,
        3,
    )
    assert (summary["remask"], summary["remask_steps"], summary["burn_in"], summary["accept_rate"]) == (0.2, 2, 0, None)
    n_free = int(json.loads((out / "run.jsonl").read_text().splitlines()[0])["free"][0].count(True))
    assert 4 <= summary["calls_per_sample"] <= 4 + 2 and n_free >= 4  # 4 steps (blocks) + up to 2 remasking
    assert math.isfinite(summary["log_prob_mean"]) and summary["forward_rows_per_sample"] == summary["calls_per_sample"]
    assert summary["acceptance_length"] == pytest.approx(n_free / summary["rounds_per_sample"])
    lines = [json.loads(x) for x in (out / "run.jsonl").read_text().splitlines()]
    assert lines[0]["config"]["score"] == "margin" and all(len(r["calls"]) == 2 for r in lines[1:])
    assert "threshold" not in lines[0]["config"]  # the other decoder's fields are not written
    assert main(_argv(peaked_bert_dir, out, "unmask", *extra)) == 0  # finished: a rerun resumes, samples nothing new
    capsys.readouterr()
    assert main(_argv(peaked_bert_dir, out, "unmask", "--steps", "2")) == 2  # other settings: refused
    err = capsys.readouterr().err
    assert "steps" in err and len(err.strip().splitlines()) == 1


def test_adaptive_streamed_rows_and_resume(peaked_bert_dir, tmp_path):
    from mlmprob.runtime.writers import read_results

    rows_path = tmp_path / "rows.jsonl"
    argv = _argv(peaked_bert_dir, rows_path, "adaptive", "--threshold", "0.02", "--pair-top-k", "3")
    assert main(argv) == 0
    rows = list(read_results(rows_path))
    assert [r["id"] for r in rows] == ["seq1/chain0", "seq1/chain1"]
    for r in rows:
        assert (r["method"], r["threshold"], r["pair_top_k"], r["score"]) == ("adaptive", 0.02, 3, "margin")
        assert r["accept_rate"] is None and math.isfinite(r["log_prob"])
        assert 1 <= r["rounds_per_sample"] <= r["n_free"] and r["calls_per_sample"] <= 2 * r["rounds_per_sample"]
        assert r["acceptance_length"] == pytest.approx(r["n_free"] / r["rounds_per_sample"])
    assert main(argv + ["--resume"]) == 0 and list(read_results(rows_path)) == rows
    again = tmp_path / "again.jsonl"
    assert main(_argv(peaked_bert_dir, again, "adaptive", "--threshold", "0.02", "--pair-top-k", "3")) == 0
    assert [r["sequence"] for r in read_results(again)] == [r["sequence"] for r in rows]  # seeded: reproducible


def test_unmask_draws_are_reproducible_and_differ_by_score(peaked_bert_dir, tmp_path):
    from mlmprob.runtime.writers import read_results

    seqs = {}
    for score in ("confidence", "entropy"):
        path = tmp_path / f"{score}.jsonl"
        assert main(_argv(peaked_bert_dir, path, "unmask", "--score", score, "--steps", "3")) == 0
        seqs[score] = [r["sequence"] for r in read_results(path)]
        assert all(r["calls_per_sample"] == 3 and r["steps"] == 3 for r in read_results(path))
    assert len(set(seqs["confidence"] + seqs["entropy"])) > 1


@pytest.mark.parametrize(
    "method,extra,message",
    [
        ("mh", ["--steps", "3"], "--steps is for --method unmask (got --method mh)"),
        ("ancestral", ["--score", "margin"], "--score is for --method unmask or adaptive (got --method ancestral)"),
        ("unmask", ["--threshold", "0.1"], "--threshold is for --method adaptive (got --method unmask)"),
        ("adaptive", ["--remask", "0.1"], "--remask is for --method unmask (got --method adaptive)"),
        ("unmask", ["--block-size", "2"], "--block-size does not apply to --method unmask"),
        ("adaptive", ["--order", "l2r"], "--order does not apply to --method adaptive"),
        ("unmask", ["--draft-k", "2"], "--draft-k does not apply to --method unmask"),
        ("unmask", ["--remask", "1.5"], "remask must be a probability in [0, 1]"),
    ],
)
def test_flags_that_do_not_apply(peaked_bert_dir, tmp_path, capsys, method, extra, message):
    out = tmp_path / "run"
    assert main(_argv(peaked_bert_dir, out, method, *extra)) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1

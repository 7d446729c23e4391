"""``mlmprob sample --method ancestral``: the run folder's files, each draw's log-probability against
``mlmprob.loglik`` along the same order, resume, streamed rows and one-line errors for options that do
not apply. Uses a tiny random BERT with one residue per word, as conftest's ``peaked_bert_dir`` but with large
weights (std 0.5): peaked conditionals, so that the orders disagree and a wrong order would be seen."""

import json
import math

import pytest
import torch

from mlmprob import loglik
from mlmprob.cli import main
from mlmprob.models import load_mlm
from mlmprob.runtime.writers import read_results
from tests.conftest import save_tiny_bert

pytestmark = pytest.mark.usefixtures("one_thread")
TRASTUZUMAB_VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    "WGGDGFYAMDYWGQGTLVTVSS"
)
SEQ = " ".join(TRASTUZUMAB_VH)
CDR = slice(98, 109)  # Kabat CDR-H3 residues of trastuzumab


@pytest.fixture(scope="module")
def peaked_bert_dir(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("peakedbert"), init=0.5)


def _argv(model, out, *extra):
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
        "ancestral",
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


def _run(path):
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    return lines[0], lines[1:]


def _loglik(mlm, ids, free, order):
    return loglik(mlm, torch.tensor(ids), torch.tensor(free, dtype=torch.bool), order=order).per_order[:, 0]


@pytest.mark.parametrize("order,other", [("l2r", "r2l"), ("r2l", "l2r")])
def test_files_and_log_prob_is_loglik_along_the_order(peaked_bert_dir, tmp_path, capsys, order, other):
    out = tmp_path / "run"
    assert main(_argv(peaked_bert_dir, out, "--order", order)) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for name in ("run.jsonl", "samples.fasta", "summary.json", "trace.png"):
        assert (out / name).exists(), name
    assert json.loads((out / "summary.json").read_text()) == summary
    assert (summary["method"], summary["order"], summary["tokens_per_step"]) == ("ancestral", order, 1)
    # no burn-in by default (independent draws) and no acceptance
    assert summary["burn_in"] == 0 and summary["epochs"] == 3 and summary["accept_rate"] is None
    assert "accept step" in summary["accept_rate_note"]
    head, recs = _run(out / "run.jsonl")
    assert len(recs) == 3 and head["config"]["order"] == order and head["config"]["tokens_per_step"] == 1
    mlm = load_mlm(str(peaked_bert_dir), device="cpu", dtype="float32")
    free = head["free"]
    assert [sum(f) for f in free] == [CDR.stop - CDR.start] * 2
    gaps = []
    for r in recs:
        got = torch.tensor(r["log_prob"], dtype=torch.float64)
        assert torch.allclose(got, _loglik(mlm, r["ids"], free, order), atol=1e-4), (r["epoch"], got)
        gaps.append(float((got - _loglik(mlm, r["ids"], free, other)).abs().max()))
    assert max(gaps) > 1e-2  # the other order gives other numbers: the check above can fail
    # every draw differs from the input only inside CDR-H3; 11 rows per chain and epoch
    assert recs[-1]["forward_rows"] == 3 * 2 * 11
    lines = (out / "samples.fasta").read_text().splitlines()
    assert len(lines) == 3 * 2 * 2
    for i, (h, s) in enumerate(zip(lines[::2], lines[1::2])):
        epoch, b = divmod(i, 2)
        assert f"epoch={epoch} " in h and f"log_prob={recs[epoch]['log_prob'][b]:.4f}" in h
        res = s.replace(" ", "")
        assert res[: CDR.start] == TRASTUZUMAB_VH[: CDR.start] and res[CDR.stop :] == TRASTUZUMAB_VH[CDR.stop :]
    assert summary["log_prob_mean"] == pytest.approx(sum(sum(r["log_prob"]) for r in recs) / 6)
    assert summary["final_log_prob_mean"] == pytest.approx(sum(recs[-1]["log_prob"]) / 2)


def test_random_order_and_tokens_per_step(peaked_bert_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_argv(peaked_bert_dir, out, "--tokens-per-step", "4", "--burn-in", "1")) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["order"], summary["tokens_per_step"], summary["burn_in"]) == ("random", 4, 1)
    head, recs = _run(out / "run.jsonl")
    # 11 positions, 4 per step: 3 rows per chain and epoch, 4 epochs
    assert recs[-1]["forward_rows"] == 4 * 2 * 3
    assert [r["kept"] for r in recs] == [False, True, True, True]
    assert all(lp < 0 and math.isfinite(lp) for r in recs for lp in r["log_prob"])
    assert len({tuple(map(tuple, r["ids"])) for r in recs}) == 4  # a fresh draw every epoch


def test_resume_after_a_kill_gives_the_same_draws(peaked_bert_dir, tmp_path, capsys):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert main(_argv(peaked_bert_dir, whole, "--order", "l2r")) == 0
    assert main(_argv(peaked_bert_dir, cut, "--order", "l2r")) == 0
    lines = (cut / "run.jsonl").read_text().splitlines()
    (cut / "run.jsonl").write_text("\n".join(lines[:-2]) + "\n" + lines[-1][:40])  # a kill in epoch 2's write
    n_before = len(lines)
    assert main(_argv(peaked_bert_dir, cut, "--order", "l2r")) == 0
    a, b = _run(whole / "run.jsonl")[1], _run(cut / "run.jsonl")[1]
    assert len(b) == n_before - 1
    assert [(r["ids"], r["log_prob"], r["generator_state"]) for r in a] == [
        (r["ids"], r["log_prob"], r["generator_state"]) for r in b
    ]
    capsys.readouterr()
    assert main(_argv(peaked_bert_dir, cut, "--order", "l2r", "--tokens-per-step", "2")) == 2  # another run's file
    assert "tokens_per_step" in capsys.readouterr().err


def test_streamed_rows_have_log_prob(peaked_bert_dir, tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    argv = _argv(peaked_bert_dir, out, "--order", "l2r")
    assert main(argv) == 0
    rows = list(read_results(out))
    assert [r["id"] for r in rows] == ["seq1/chain0", "seq1/chain1"]
    mlm = load_mlm(str(peaked_bert_dir), device="cpu", dtype="float32")
    enc = mlm.encode([r["sequence"] for r in rows])
    free = torch.zeros_like(enc.input_ids, dtype=torch.bool)
    free[:, 1 + CDR.start : 1 + CDR.stop] = True  # [CLS] then one token per residue
    want = _loglik(mlm, enc.input_ids.tolist(), free.tolist(), "l2r")
    assert torch.allclose(torch.tensor([r["log_prob"] for r in rows], dtype=torch.float64), want, atol=1e-4)
    assert all(r["accept_rate"] is None and r["method"] == "ancestral" and r["tokens_per_step"] == 1 for r in rows)
    assert main(argv + ["--resume"]) == 0 and list(read_results(out)) == rows  # resumed: nothing new
    capsys.readouterr()
    assert main(argv + ["--resume", "--tokens-per-step", "2"]) == 2  # other settings: refused
    assert "tokens_per_step" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--block-size", "2"], "--block-size does not apply to --method ancestral"),
        (["--target-temperature", "0.5"], "--target-temperature does not apply to --method ancestral"),
        (["--anneal", "0.1"], "--anneal does not apply to --method ancestral"),
        (["--init", "greedy"], "--init does not apply to --method ancestral"),
        (["--method", "mh", "--tokens-per-step", "2"], "--tokens-per-step is for --method ancestral"),
        (["--method", "gibbs", "--order", "r2l"], "--order r2l is for --method ancestral"),
    ],
)
def test_options_that_do_not_apply(peaked_bert_dir, tmp_path, capsys, extra, message):
    out = tmp_path / "run"
    assert main(_argv(peaked_bert_dir, out, *extra)) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()  # refused before the model loads or anything is written


def test_bad_values_are_refused_by_the_parser(peaked_bert_dir, tmp_path, capsys):
    for extra in (["--tokens-per-step", "0"], ["--order", "best"]):
        with pytest.raises(SystemExit) as e:
            main(_argv(peaked_bert_dir, tmp_path / "run", *extra))
        assert e.value.code == 2

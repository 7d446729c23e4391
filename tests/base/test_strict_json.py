"""Every JSON / JSONL text mlmprob writes is strict JSON: no NaN or Infinity, ever."""

import json
import math

import pytest
import torch
from conftest import strict_json, strict_jsonl

from mlmprob.cli import main
from mlmprob.jsonl import dumps, json_safe

SEQS = ["A C D E F G H I K L", "C D E A G G H", "G G H A C D K L M N"]  # one residue per word (tiny_bert_dir)


def test_every_writer_turns_nan_into_null(tmp_path):
    """The result writers and the resumable log write NaN and infinities as null, which the strict parser
    takes; the standard library's default encoder would have written NaN, which it refuses."""
    from mlmprob.runtime.writers import open_writer

    row = {"id": "a", "x": math.nan, "y": [math.inf, 1.0], "t": torch.tensor(-math.inf)}
    with pytest.raises(ValueError, match="non-standard"):
        strict_json(json.dumps({"x": math.nan}))
    out = tmp_path / "r.jsonl"
    with open_writer(str(out), resume=False, config={"test": 1}, fields=None) as w:
        w.write([row])
        w.close(complete=True)
    assert strict_jsonl(out) == [{"id": "a", "x": None, "y": [None, 1.0], "t": None}]


def test_dumps_is_strict_and_converts_scalars():
    import numpy as np

    obj = {
        "nan": math.nan,
        "inf": [math.inf, -math.inf],
        "t": torch.tensor(1.5),
        "n": np.float32(0.25),
        "i": np.int64(3),
        "arr": np.array([1.0, np.nan]),
        "nested": ({"x": torch.tensor([math.nan])},),
    }
    text = dumps(obj)
    assert strict_json(text) == {
        "nan": None,
        "inf": [None, None],
        "t": 1.5,
        "n": 0.25,
        "i": 3,
        "arr": [1.0, None],
        "nested": [{"x": [None]}],
    }
    assert json_safe({"b": True, "s": "x", "none": None}) == {"b": True, "s": "x", "none": None}


def test_sample_with_too_few_epochs_writes_null_ess_with_a_note(tiny_bert_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "sample",
                "--model",
                str(tiny_bert_dir),
                "--seq",
                SEQS[0],
                "--chains",
                "2",
                "--epochs",
                "2",
                "--burn-in",
                "0",
                "--out",
                str(out),
                "--no-progress",
                "--no-plot",
            ]
        )
        == 0
    )
    printed = strict_json(capsys.readouterr().out.strip().splitlines()[-1])
    summary = strict_json((out / "summary.json").read_text())
    assert printed == summary
    assert summary["ess"] is None and summary["ess_note"] == "needs >= 4 kept epochs, got 2"
    assert summary["rhat"] is None and "rhat_note" in summary
    assert math.isfinite(summary["accept_rate"]) and "accept_rate_note" not in summary
    strict_jsonl(out / "run.jsonl")


def test_joints_infill_score_outputs_are_strict(tiny_bert_dir, tmp_path, capsys):
    data = tmp_path / "seqs.txt"
    data.write_text("\n".join(SEQS) + "\n")
    out = tmp_path / "joints"
    # --top-k 2 leaves gold pairs outside the candidates: -inf log-probabilities and undefined G-KL
    argv = ["joints", "--model", str(tiny_bert_dir), "--data", str(data), "--out", str(out), "--top-k", "2", "--quiet"]
    assert main(argv + ["--n-pairs", "1"]) == 0
    report = capsys.readouterr().out
    assert len(strict_jsonl(out / "pairs.jsonl")) == 2  # one pair per scheme (the config: pairs.jsonl.meta.json)
    strict_json((out / "pairs.jsonl.meta.json").read_text())
    assert main(argv + ["--n-pairs", "2"]) == 0  # resumes from the file with its nulls
    assert "| inf |" in report and "| inf |" in capsys.readouterr().out
    pairs = strict_jsonl(out / "pairs.jsonl")
    assert len(pairs) == 4 and any(p.get("metrics", {}).get("mlm", {}).get("pair_logp", 0) is None for p in pairs)
    summary = strict_json((out / "summary.json").read_text())
    assert "gold pair lies outside" in summary["null_means"]

    assert main(["infill", "A C _ _ F G", "--model", str(tiny_bert_dir), "--json", "-k", "3"]) == 0
    res = strict_json(capsys.readouterr().out)
    assert len(res["candidates"]) == 3 and all(math.isfinite(c["score"]) for c in res["candidates"])

    assert main(["score", str(data), "--model", str(tiny_bert_dir), "--no-progress", "--per-token"]) == 0
    rows = [strict_json(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == ["line1", "line2", "line3"]
    assert (
        main(["score", str(data), "--model", str(tiny_bert_dir), "--no-progress", "--out", str(tmp_path / "s.jsonl")])
        == 0
    )
    assert len(strict_jsonl(tmp_path / "s.jsonl")) == 3


def test_train_outputs_are_strict(tmp_path, capsys):
    out = tmp_path / "train"
    assert (
        main(
            [
                "train",
                "--out",
                str(out),
                "--synthetic",
                "hmm",
                "--vocab-size",
                "5",
                "--length",
                "6",
                "--n-train",
                "32",
                "--n-heldout",
                "8",
                "--hidden",
                "16",
                "--layers",
                "1",
                "--intermediate",
                "32",
                "--steps",
                "2",
                "--batch-size",
                "8",
                "--eval-every",
                "2",
                "--kl-sequences",
                "4",
                "--no-progress",
            ]
        )
        == 0
    )
    summary = strict_json(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["done"] and summary["step"] == 2
    for f in out.rglob("*.json"):
        strict_json(f.read_text())

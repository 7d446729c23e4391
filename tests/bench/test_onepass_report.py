"""bench/onepass_report.py on a tiny BERT: with the zero correction the one-pass rows equal the unmasked
pass's, and ``--compare`` scores one-pass once more with another correction file on the same chains."""

import shutil

import pytest
import torch

from tests.conftest import load_bench

pytestmark = pytest.mark.usefixtures("one_thread")


def _errors(row: str) -> list[str]:
    return [c.strip() for c in row.split("|")[4:10]]  # Spearman x2, |error| mean / max, per residue mean / max


def test_compare_scores_another_correction(tiny_bert_dir, tmp_path, monkeypatch):
    import mlmprob
    from mlmprob.onepass.correction import Correction

    rep = load_bench("onepass_report")
    model_dir = tmp_path / "tiny"
    shutil.copytree(tiny_bert_dir, model_dir)
    Correction.identity(16).save(model_dir / "one_pass.safetensors")  # the model's own: the unmasked pass
    Correction.identity(16).save(tmp_path / "zero.safetensors")
    g = torch.Generator().manual_seed(0)
    other = Correction(torch.zeros(16, 16), torch.zeros(16, 16), torch.randn(16, generator=g), {})
    other.save(tmp_path / "other.safetensors")
    real = mlmprob.load_mlm
    monkeypatch.setattr(mlmprob, "load_mlm", lambda name, **kw: real(str(model_dir), **kw))
    sets = {"S": ["A C D E F G H", "C C D Y F", "G H A A C D E Y"]}
    rows = rep.evaluate(
        "tiny", sets, {"zero": str(tmp_path / "zero.safetensors"), "other": str(tmp_path / "other.safetensors")}
    )
    methods = [r.split("|")[3].strip() for r in rows]
    assert methods == ["one_pass", "one_pass (zero)", "one_pass (other)", "unmasked", "exact (reference)"]
    by = dict(zip(methods, rows))
    assert _errors(by["one_pass"]) == _errors(by["unmasked"]) == _errors(by["one_pass (zero)"])
    assert _errors(by["one_pass (other)"]) != _errors(by["unmasked"])

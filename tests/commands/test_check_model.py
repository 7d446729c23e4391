"""``mlmprob check-model``: the load-time probe and a brute-force comparison, exit 0 when all agree, else 2
with one error line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))
from conformance_models import build  # noqa: E402

from mlmprob.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("check_model")
    for t in ("bert", "bart"):
        assert build(t, root / t) is None
    return root


def test_agrees(folders, capsys, one_thread):
    assert main(["check-model", str(folders / "bert")]) == 0
    out = capsys.readouterr().out
    assert "BertForMaskedLM" in out and "all checks agree" in out
    assert out.count(": ok (max difference") == 2


def test_head_fallback_is_reported(folders, capsys, one_thread):
    """BART's head module is not its whole head (final_logits_bias): the probe falls back and says so."""
    assert main(["check-model", str(folders / "bart"), "--seq", "the cat sat", "--seq", "a dog"]) == 0
    out = capsys.readouterr().out
    assert "fallback: BartForConditionalGeneration: its LM head module is not the whole head" in out
    assert "all checks agree" in out


def test_differs_exits_2(folders, capsys, monkeypatch, one_thread):
    """A model mlmprob cannot read as the model itself does is refused: one error line, status 2."""
    from mlmprob.models import probe

    real = probe.plain_logits

    def shifted(mlm, ids):  # stands in for a model whose own forward differs from mlmprob's reading
        out = real(mlm, ids).clone()
        out[:, 5] += 1.0
        return out

    monkeypatch.setattr(probe, "plain_logits", shifted)
    assert main(["check-model", str(folders / "bert")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: BertForMaskedLM: mlmprob's reading of this model differs")


def test_bad_path_exits_2(tmp_path, capsys):
    assert main(["check-model", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.startswith("error: ")

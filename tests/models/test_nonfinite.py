"""NaN or infinite logits stop a run with a clear error naming the sequence or record; never a NaN
in the results."""

import pytest
import torch
from conftest import tiny_hf

from mlmprob import token_scores
from mlmprob.data import Record
from mlmprob.errors import MLMProbError, NonFiniteError
from mlmprob.models.reader import reader_of
from mlmprob.scoring import score_records


class Poisoned:
    """A tiny HF model whose logits are ``value`` in every row whose input holds the token ``bad_id``."""

    def __init__(self, mlm, bad_id, value=float("nan")):
        self._mlm, self.bad_id, self.value = mlm, bad_id, value

    def __getattr__(self, name):
        return getattr(self._mlm, name)

    def logits_at(self, input_ids, rows, cols):
        out = self._mlm.logits_at(input_ids, rows, cols).clone()
        hit = (torch.as_tensor(input_ids) == self.bad_id).any(-1)[torch.as_tensor(rows)]
        out[hit, 0] = self.value
        return out


@pytest.fixture(scope="module")
def tiny():
    return tiny_hf("bert")


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_token_scores_name_the_sequence(tiny, value):
    bad = tiny.tokenizer.token_to_id["K"]
    m = Poisoned(tiny, bad, value)
    ids = tiny.encode(["ACDE", "ACKE", "DDDD"]).input_ids
    with pytest.raises(NonFiniteError, match=r"NaN or infinite logits for sequence\(s\) \[1\].*float16") as e:
        token_scores(reader_of(m, 8), ids)  # small sub-batches: the row is mapped back to the input
    assert e.value.rows == (1,) and isinstance(e.value, MLMProbError)
    assert torch.isfinite(token_scores(m, ids[[0, 2]]).log_prob).all()


def test_neg_inf_alone_is_a_zero_probability(tiny):
    m = Poisoned(tiny, tiny.tokenizer.token_to_id["K"], float("-inf"))
    s = token_scores(m, tiny.encode(["ACKE"]).input_ids)
    assert torch.isfinite(s.log_prob).all()  # the target is never token 0 (a special token)


def test_score_records_name_the_record(tiny):
    m = Poisoned(tiny, tiny.tokenizer.token_to_id["K"])
    recs = [Record("good1", "ACDE"), Record("bad-one", "AKKE"), Record("good2", "DDE")]
    with pytest.raises(NonFiniteError, match=r"record\(s\) 'bad-one': the model returned NaN") as e:
        list(score_records(m, recs))
    assert "good" not in str(e.value)
    out = list(score_records(m, [recs[0], recs[2]]))
    assert [s.id for s in out] == ["good1", "good2"]


def test_infinite_score_is_refused(tiny):
    class ZeroTarget(Poisoned):
        def logits_at(self, input_ids, rows, cols):  # -inf at every token id 9 (a residue): p = 0
            out = self._mlm.logits_at(input_ids, rows, cols).clone()
            out[:, 9] = float("-inf")
            return out

    m = ZeroTarget(tiny, None)
    tok9 = tiny.decode([9])
    with pytest.raises(NonFiniteError, match=r"record 'r2': its score is not finite"):
        list(score_records(m, [Record("r1", "AC"), Record("r2", "A" + tok9)]))


def test_cli_score_stops_with_the_record_id(tiny, tmp_path, monkeypatch, capsys):
    import mlmprob.models as models
    from mlmprob import cli

    m = Poisoned(tiny, tiny.tokenizer.token_to_id["K"])
    monkeypatch.setattr(models, "load_mlm", lambda *a, **k: m)
    (tmp_path / "in.fa").write_text(">ok\nACDE\n>broken\nAKE\n")
    assert cli.main(["score", str(tmp_path / "in.fa"), "--no-progress"]) == 2
    cap = capsys.readouterr()
    assert "error: record(s) 'broken'" in cap.err and "nan" not in cap.out.lower()

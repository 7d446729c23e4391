"""Saturation mutagenesis: the table equals score_variants on every single mutant, costs L + 1
forward rows, and writes a CSV and a heatmap."""

import csv

import pytest
import torch

from mlmprob import LookupMLM, score_variants
from mlmprob.alphabet import AMINO_ACIDS
from mlmprob.errors import MLMProbError
from mlmprob.variants import saturate, write_csv, write_heatmap

pytestmark = pytest.mark.usefixtures("one_thread")


class Counting:
    """Counts the rows forwarded through ``logits``/``logits_at``."""

    def __init__(self, mlm):
        self.mlm, self.rows = mlm, 0

    def __getattr__(self, name):
        return getattr(self.mlm, name)

    def logits(self, ids):
        self.rows += ids.shape[0]
        return self.mlm.logits(ids)

    def logits_at(self, ids, rows, cols):
        self.rows += ids.shape[0]
        return self.mlm.logits_at(ids, rows, cols)


def test_saturation_equals_score_variants_in_L_plus_1_rows():
    V, T = 5, 6
    m = LookupMLM(vocab_size=V, length=T, seed=4)
    w = torch.tensor([0, 3, 1, 4, 2, 2])
    s = saturate(m, w)
    assert m.calls == T + 1 and s.n_forward == T + 1
    singles = [[(p, v)] for p in range(T) for v in range(V) if v != int(w[p])]
    assert len(singles) == (V - 1) * T
    m.calls = 0
    ref = score_variants(m, w, singles, methods=["wt_marginals", "masked_marginals"])
    assert m.calls == T + 1  # score_variants shares the same rows
    for n, [(p, v)] in enumerate(singles):
        assert s.wt_marginals[p, v] == ref["wt_marginals"][n]
        assert s.masked_marginals[p, v] == ref["masked_marginals"][n]
    assert (s.wt_marginals[torch.arange(T), w] == 0).all() and (s.masked_marginals[torch.arange(T), w] == 0).all()
    # a cell by hand: position 2 masked, token 3 against the wild-type 1
    x = w.clone()
    x[2] = m.mask_id
    lp = m.logits(x[None])[0, 2].double().log_softmax(-1)
    assert float(s.masked_marginals[2, 3]) == pytest.approx(float(lp[3] - lp[1]), abs=1e-12)
    part = saturate(m, w, positions=[4, 1], candidates=[2, 0])
    assert torch.equal(part.masked_marginals, s.masked_marginals[[4, 1]][:, [2, 0]])
    assert part.numbers.tolist() == [5, 2]


def test_protein_saturation_tables_csv_and_heatmap(esm, tmp_path):
    esm = Counting(esm)
    seq = "MKTAYIAKQRQIS"
    ids = esm.encode([seq]).input_ids[0]
    s = saturate(esm, ids, offset=24)
    assert esm.rows == len(seq) + 1 and s.masked_marginals.shape == (len(seq), 20)
    assert "".join(s.letters) == AMINO_ACIDS and "".join(s.wt_letters) == seq
    assert s.positions.tolist() == list(range(1, 14)) and s.numbers.tolist() == list(range(24, 37))
    rows = list(csv.DictReader(write_csv(s, tmp_path / "sat.csv").open()))
    assert len(rows) == 19 * len(seq)
    first = rows[0]
    assert first["mutant"] == "M24A" and first["wt"] == "M" and first["mt"] == "A" and first["position"] == "1"
    assert float(first["masked_marginals"]) == float(s.masked_marginals[0, 0])
    png = write_heatmap(s, tmp_path / "sat.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(MLMProbError, match="unknown saturation score"):
        write_heatmap(s, tmp_path / "x.png", score="hcb")
    with pytest.raises(MLMProbError, match="position 0 holds a special token"):
        saturate(esm, ids, positions=[0, 3])
    with pytest.raises(MLMProbError, match="position 99 is outside"):
        saturate(esm, ids, positions=[99])
    with pytest.raises(MLMProbError, match="repeat"):
        saturate(esm, ids, positions=[3, 3])

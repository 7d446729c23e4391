"""bench/onepass_variants.py on tiny inputs: the one-pass site tables of a tiny BERT (with the zero
correction both tables are the unmasked pass, equal to ``score_variants``'s wt_marginals), the per-variant
sums, the paired-bootstrap evaluation and the report."""

import pytest
import torch

from tests.conftest import load_bench

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def ov():
    return load_bench("onepass_variants")


def test_zero_correction_tables_give_wt_marginals(ov, tiny_bert_dir):
    import mlmprob
    from mlmprob.onepass.correction import Correction

    mlm = mlmprob.load_mlm(str(tiny_bert_dir), device="cpu", dtype="float32")
    wt = mlm.encode(["A C D E F G H"]).input_ids[0]
    positions = [2, 3, 5]
    tabs = ov.site_tables(mlm, wt, positions, correction=Correction.identity(16))
    assert torch.allclose(tabs["one_pass"], tabs["unmasked"])
    assert tabs["unmasked"].shape == (3, mlm.vocab_size)
    c, f, y = (mlm.encode([x]).input_ids[0, 1].item() for x in "CFY")
    variants = [[(2, f)], [(3, y), (5, c)], [(5, y)]]
    got = ov.variant_scores(tabs["unmasked"], wt, positions, variants)
    want = mlmprob.score_variants(mlm, wt, variants, methods=["wt_marginals"])["wt_marginals"]
    assert torch.allclose(got, want, atol=1e-5)


def test_evaluate_and_report(ov):
    labels = torch.tensor([1.0, 0.0] * 10)
    exact = labels + 0.1 * torch.arange(20.0)
    scores = {"exact": exact, "one_pass": exact.clone(), "unmasked": -exact}
    res = ov.evaluate(scores, labels, n_boot=50, seed=0)
    assert res["one_pass"]["diff"].value == 0 and res["one_pass"]["spearman"] == pytest.approx(1.0)
    assert res["unmasked"]["auroc"].value == pytest.approx(1 - res["exact"]["auroc"].value)
    rows = ov.table_rows("m", 20, res, {"exact": 1.0, "one_pass": 0.1, "unmasked": 0.1})
    text = ov.report(rows, ["m: check"], "python bench/onepass_variants.py", 50)
    assert text.count("| m | 20 |") == 3 and "Check: m: check." in text and "50 resamples" in text

"""The web app's pure computations (mlmprob.app.compute / infilling / dynamics / render) against the public API
they wrap, on a tiny protein-like model; bad input raises MLMProbError with the CLI's message.
No gradio needed here."""

import math

import pytest
import torch

from mlmprob import MLMProbError, infill, load_mlm, pairwise_joint, sample, score_variants
from mlmprob.app import LIMITS, Limits, render
from mlmprob.app.compute import mutant_scores, parse_numbers, parse_sequences, saturation_map, score_text
from mlmprob.app.dynamics import JOINT_NAMES, pair_view, sample_steps
from mlmprob.app.infilling import infill_compare
from mlmprob.joints import evaluate_pair
from mlmprob.runtime.inputs import Record
from mlmprob.scoring import score_records
from mlmprob.variants import encode_variants, saturate

WT = "ACDEFGHIKLMNPQ"


@pytest.fixture(scope="module")
def mlm(tiny_bert_dir, one_thread):
    return load_mlm(str(tiny_bert_dir), device="cpu", dtype="float32")


def test_score_matches_score_records(mlm):
    res = score_text(mlm, ">a\nACDEF\nGH\n>b\nKLMNPQ")
    ref = list(score_records(mlm, [Record("a", "ACDEFGH"), Record("b", "KLMNPQ")], per_token=True))
    assert [r.id for r in res.rows] == ["a", "b"]
    for got, want in zip(res.rows, ref):
        assert got.pll == pytest.approx(want.pll, abs=1e-9)
        assert got.e_raw == pytest.approx(want.e_raw, abs=1e-9)
        assert got.pll_per_token == pytest.approx(want.pll / want.n_tokens)
        assert sum(got.token_log_prob) == pytest.approx(got.pll, abs=1e-6)
    table = res.table()
    assert table[0][:2] == ["a", 7] and table[0][2] == round(ref[0].pll, 4)
    lines = res.csv().splitlines()
    assert lines[0].startswith("id,n_tokens,pll,pll_per_token,e_raw") and len(lines) == 3
    assert float(lines[1].split(",")[2]) == ref[0].pll  # full precision in the CSV
    html = render.tokens_html(res)
    assert html.count("<span title=") == 13 and f"log q = {res.rows[0].token_log_prob[0]:.4f}" in html


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "no sequence given"),
        (">a\nAC\nDE\nKL\n>b", "FASTA record 'b' has no sequence"),
        ("AC\n>b\nDE", "mixes FASTA headers"),
        ("\n".join(["ACD"] * (LIMITS.max_sequences + 1)), f"at most {LIMITS.max_sequences}"),
    ],
)
def test_score_bad_input(mlm, text, message):
    with pytest.raises(MLMProbError, match=message):
        score_text(mlm, text)


def test_score_bad_token_and_length(mlm):
    with pytest.raises(MLMProbError, match=r"record 'seq2': has symbol 'Z' at residue 3"):
        score_text(mlm, "ACD\nACZ")
    with pytest.raises(MLMProbError, match="has 12 tokens; the app takes at most 8"):
        score_text(mlm, "ACDEFGHIKL", limits=Limits(max_tokens=8))


def test_saturation_and_cell_scores_match_the_variants_api(mlm):
    smap = saturation_map(mlm, "acd efg\nHIK")
    assert smap.wild_type == "ACDEFGHIK" and smap.row_labels()[:2] == ["A1", "C2"]
    ev = encode_variants(mlm, smap.wild_type, ["A1C"])
    ref = saturate(mlm, ev.wild_type, positions=ev.residue_positions.tolist())
    assert torch.allclose(smap.values(), ref.masked_marginals)
    assert smap.values().shape == (9, 20)
    # a cell of the map and the mutant scored on its own agree
    p, k = 3, smap.sat.letters.index("W")
    ms = mutant_scores(mlm, smap.wild_type, smap.mutant(p, k))
    assert ms.mutant == "E4W" and ms.n_sites == 1
    assert ms.scores["masked_marginals"] == pytest.approx(float(smap.values()[p, k]), abs=1e-9)
    assert ms.scores["epistasis"] == 0.0 and math.isnan(ms.scores["ag"])
    assert render.saturation_figure(smap) is not None


def test_multi_site_mutant_matches_score_variants(mlm):
    ms = mutant_scores(mlm, WT, " C2W:K9A ")
    ev = encode_variants(mlm, WT, ["C2W:K9A"])
    ref = score_variants(mlm, ev.wild_type, ev.variants, methods=None)  # every method
    assert ms.mutant == "C2W:K9A" and ms.n_sites == 2
    for m, v in ref.items():
        assert ms.scores[m] == pytest.approx(float(v[0]), abs=1e-9), m
    assert ms.scores["epistasis"] == pytest.approx(ms.scores["hcb"] - ms.scores["masked_marginals"], abs=1e-12)
    rows = render.mutant_rows(ms)
    assert [r[0] for r in rows][:2] == ["wt_marginals", "masked_marginals"]


@pytest.mark.parametrize(
    "wt, mutant, message",
    [
        (WT, "D2C", "'D2C' states wild-type 'D' at residue 2, but the sequence has 'C' there"),
        (WT, "A99C", "residue 99 of 'A99C' is outside the sequence"),
        (WT, "A1J", "mutant residue 'J'"),
        (WT, "", "empty mutant string"),
        ("AC1D", "A1C", "the wild type holds '1'"),
    ],
)
def test_mutant_bad_input(mlm, wt, mutant, message):
    with pytest.raises(MLMProbError, match=message):
        mutant_scores(mlm, wt, mutant)


def test_infill_runs_are_the_api_beams(mlm):
    res = infill_compare(mlm, "ACD__GHIK", beam_size=3)
    assert res.native is None and res.token_indices == (4, 5) and res.numbers == (4, 5)
    assert "Gap: 2 token(s) at residues/words 4-5." in render.infill_summary(res)
    assert [(r.method, r.order) for r in res.runs] == [
        ("standard", "l2r"),
        ("standard", "best"),
        ("hcb", "l2r"),
        ("hcb", "best"),
    ]
    ids = mlm.encode(["ACD__GHIK"]).input_ids[0]
    for run in res.runs:
        ref = infill(mlm, ids, [4, 5], method=run.method, order=run.order, beam_size=3)
        assert [f.tokens for f in run.fills] == [c.tokens for c in ref]
        assert [f.score for f in run.fills] == pytest.approx([c.score for c in ref])
        assert all(f.sequence.startswith("ACD") and len(f.sequence) == 9 for f in run.fills)
    headers = render.infill_headers()
    assert len(set(headers)) == len(headers) == 5
    rows = render.infill_rows(res, "hcb")
    assert len(rows) == 3 and rows[0][1:] == [
        res.runs[2].fills[0].fill,
        round(res.runs[2].fills[0].score, 4),
        res.runs[3].fills[0].fill,
        round(res.runs[3].fills[0].score, 4),
    ]


def test_infill_native_rank(mlm):
    # a one-token gap with a beam over every residue: the native fill is always ranked
    res = infill_compare(mlm, "ACDEFGHIK", "4", beam_size=20)
    assert res.native == "E"
    for run in res.runs:
        assert run.native_rank is not None and run.fills[run.native_rank - 1].fill == "E"
    assert "Native fill `E`" in render.infill_summary(res)


@pytest.mark.parametrize(
    "text, positions, beam, message",
    [
        ("ACDEFGHIK", "", 3, "the sequence has no gap"),
        ("AC__FGHIK", "3", 3, "either as ____ in the text or as positions"),
        ("A" + "_" * 13, "", 3, "the gap has 13 tokens; the app fills at most 12"),
        ("AC__FGHIK", "", 0, r"beam size must be an integer in 1\.\.20"),
        ("ACDEFGHIK", "10", 3, "position 10 is outside the sequence's 9 residues"),
        ("ACDEFGHIK", "3-x", 3, "numbers or ranges"),
    ],
)
def test_infill_bad_input(mlm, text, positions, beam, message):
    with pytest.raises(MLMProbError, match=message):
        infill_compare(mlm, text, positions, beam_size=beam)


def test_sample_steps_equal_the_sample_api(mlm):
    snaps = list(sample_steps(mlm, "ACDEFGHIKL", positions="2-4,8", energy="raw", epochs=3, chains=2, seed=7))
    assert [s.epoch for s in snaps] == [0, 1, 2, 3] and snaps[-1].done and not snaps[0].done
    last = snaps[-1]
    enc = mlm.encode(["ACDEFGHIKL"])
    free = torch.isin(enc.word_ids, torch.tensor([1, 2, 3, 7])).repeat(2, 1)
    ref = sample(
        mlm,
        enc.input_ids.repeat(2, 1),
        method="mh",
        energy="raw",
        epochs=3,
        burn_in=0,
        positions=free,
        generator=torch.Generator().manual_seed(7),
    )
    assert last.sequences == tuple(mlm.decode(r) for r in ref.final_ids)
    assert torch.allclose(torch.tensor(last.energy[1:], dtype=torch.float64), ref.energy_raw)
    assert last.free == tuple(free[0].nonzero()[:, 0].tolist()) == (2, 3, 4, 8)
    assert sum(last.proposed) == 3 * 2 * 4
    assert last.accept_rate == pytest.approx(ref.accept_rate)
    # only the free positions change
    for s in last.sequences:
        assert s[0] == "A" and s[4:7] == "FGH" and s[8:] == "KL"
    assert "Epoch 3/3" in render.sample_summary(last) and len(render.sample_rows(last)) == 2
    assert render.trace_figure(last) is not None


@pytest.mark.parametrize(
    "method, extra",
    [
        ("gibbs", {}),
        ("ancestral", {}),
        ("speculative", {}),
        ("unmask", dict(score="margin", steps=2)),
        ("adaptive", dict(score="entropy")),
    ],
)
def test_sample_steps_run_every_method_of_the_sample_api(mlm, method, extra):
    snaps = list(sample_steps(mlm, "ACDEFGHIKL", positions="2-4,8", epochs=2, chains=2, seed=3, method=method, **extra))
    enc = mlm.encode(["ACDEFGHIKL"])
    free = torch.isin(enc.word_ids, torch.tensor([1, 2, 3, 7])).repeat(2, 1)
    from mlmprob.sampling.spec import method_of

    scored = {"energies": True} if "energies" in method_of(method).spec.__dataclass_fields__ else {}
    ref = sample(
        mlm,
        enc.input_ids.repeat(2, 1),
        method=method,
        epochs=2,
        burn_in=0,
        positions=free,
        generator=torch.Generator().manual_seed(3),
        **extra,
        **scored,
    )
    assert snaps[-1].method == method
    assert snaps[-1].sequences == tuple(mlm.decode(r) for r in ref.final_ids)
    assert torch.allclose(torch.tensor(snaps[-1].energy[1:], dtype=torch.float64), ref.energy_local)


def test_sample_masked_start_is_free(mlm):
    *_, last = sample_steps(mlm, "AC_EF", epochs=1, chains=1, init="greedy", seed=0)
    assert "_" not in last.sequences[0] and len(last.sequences[0]) == 5


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(epochs=LIMITS.max_epochs + 1), r"epochs must be an integer in 1\.\.200"),
        (dict(chains=0), "chains must be"),
        (dict(energy="free"), "energy must be 'local' or 'raw'"),
        (dict(positions="11"), "position 11 is outside the sequence.s 10 residues"),
        (dict(init="warm"), "init must be one of"),
        (dict(method="hmc"), "method must be one of"),
    ],
)
def test_sample_bad_input(mlm, kwargs, message):
    with pytest.raises(MLMProbError, match=message):
        next(sample_steps(mlm, "ACDEFGHIKL", **kwargs))


def test_pair_view_matches_pairwise_joint(mlm):
    pv = pair_view(mlm, "ACDEFGHIK", 2, 5, top=6)
    ids = mlm.encode(["ACDEFGHIK"]).input_ids[0]
    ev = evaluate_pair(mlm, ids, 2, 5)
    order_a = ev.conditionals.marg_a.argsort(descending=True)[:6]
    order_b = ev.conditionals.marg_b.argsort(descending=True)[:6]
    assert pv.labels_a == tuple(mlm.decode([int(ev.conditionals.candidates[i])]) for i in order_a)
    assert pv.gold == ("C", "F") and pv.n_candidates == 20
    assert pv.outside_mass == pytest.approx(ev.conditionals.outside_mass["marginal"])  # the specials' share
    for m in JOINT_NAMES:
        full = pairwise_joint(mlm, ids, 2, 5, method=m).exp()
        assert torch.allclose(pv.joints[m], full[order_a][:, order_b], atol=1e-8), m
        assert pv.akl[m] == pytest.approx(ev.metrics[m].akl, abs=1e-12)
        assert pv.gkl[m] == pytest.approx(ev.metrics[m].gkl, abs=1e-12)
    assert [r[0] for r in render.pair_rows(pv)] == ["MLM", "MRF", "MRF-logit", "HCB", "AG"]
    assert render.pair_figure(pv) is not None


@pytest.mark.parametrize(
    "a, b, message",
    [
        (3, 3, "two different positions"),
        (2, 10, "position b: position 10 is outside the sequence's 9 residues"),
        (0, 2, r"position a must be an integer in 1\.\."),
    ],
)
def test_pair_bad_input(mlm, a, b, message):
    with pytest.raises(MLMProbError, match=message):
        pair_view(mlm, "ACDEFGHIK", a, b)


def test_parse_numbers():
    assert parse_numbers("1-3, 7") == [1, 2, 3, 7]
    for bad, msg in (("", "is empty"), ("3-1", "runs backwards"), ("2,2", "given twice"), ("-1", "count from 1")):
        with pytest.raises(MLMProbError, match=msg):
            parse_numbers(bad)
    assert [r.id for r in parse_sequences("A\nC")] == ["seq1", "seq2"]


def test_cli_app_without_gradio(monkeypatch, capsys):
    import sys

    from mlmprob.cli import main

    monkeypatch.setitem(sys.modules, "gradio", None)  # import gradio -> ImportError
    assert main(["app", "--model", "no-such-model-is-loaded"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ['error: the web app needs gradio, which is not installed: pip install -e ".[app]"']


def test_cli_app_options(capsys):
    from mlmprob.cli import build_parser

    args = build_parser().parse_args(["app"])
    assert (args.model, args.host, args.port, args.share) == ("antiberty", "127.0.0.1", 7860, False)
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["app", "--port", "70000"])
    assert e.value.code == 2
    assert capsys.readouterr().err.startswith("error: argument --port: must be a port number in 1..65535, got '70000'")

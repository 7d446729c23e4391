"""Infilling (Calef et al.): beam search against exhaustive and exact references on tiny models."""

from __future__ import annotations

import json
import math

import pytest
import torch
from mdtable import row, tables_after

from mlmprob import ExactMLM, LookupMLM
from mlmprob.errors import MLMProbError
from mlmprob.infilling import (
    ContextScramble,
    RandomTokenSwap,
    bleu,
    exact_infill,
    exhaustive_infill,
    gap_metrics,
    identity,
    infill,
    sample_infill,
    topk_hit,
)
from mlmprob.infilling.baselines import SamplingConfig, proposal_logp
from mlmprob.infilling.beam import beam_search
from mlmprob.infilling.corrections import Pivot
from mlmprob.models.exact import all_sequences

# -- test models ---------------------------------------------------------------------------------


class MaskAsToken:
    """An ExactMLM over V+1 symbols whose last symbol plays the mask: the model conditions on it as
    on any token (the mask carries information, as in a real MLM) and the mask is an output, so
    HCB's default pivot works. Conditionals are compatible (those of the joint over V+1 symbols)."""

    def __init__(self, base: ExactMLM):
        self.base = base
        self.vocab_size = base.vocab_size
        self.mask_id = base.vocab_size - 1
        self.proposal_ids = torch.arange(self.mask_id)

    @property
    def calls(self) -> int:
        return self.base.calls

    def logits(self, ids):
        return self.base.logits(ids)


class WithMaskOutput:
    """An ExactMLM with one more output, the mask, at a constant logit ``c``: q(mask | .) is constant."""

    def __init__(self, base: ExactMLM, c: float = -1.0):
        self.base, self.c = base, c
        self.vocab_size = base.vocab_size + 1
        self.mask_id = base.mask_id  # == base.vocab_size: now inside the output vocabulary
        self.proposal_ids = torch.arange(base.vocab_size)

    def logits(self, ids):
        lg = self.base.logits(ids)
        return torch.cat([lg, torch.full((*lg.shape[:2], 1), self.c)], -1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def exact_gap_logp(mlm: ExactMLM, ids, positions, values=None):
    """Brute force over every sequence: log p(gap = fill | context) for every fill (dict)."""
    V, T = mlm.vocab_size, mlm.length
    seqs = all_sequences(V, T)
    ctx = [t for t in range(T) if t not in positions]
    keep = (seqs[:, ctx] == torch.as_tensor(ids)[ctx]).all(-1)
    if values is not None:
        keep &= torch.isin(seqs[:, positions], values).all(-1)
    lp = mlm.log_prob(seqs[keep])
    lp = lp - torch.logsumexp(lp, 0)
    return {tuple(s[positions].tolist()): float(v) for s, v in zip(seqs[keep], lp)}


def as_dict(cands):
    return {c.tokens: c.score for c in cands}


# -- exact and exhaustive references ----------------------------------------------------------------


def test_exact_infill_is_the_true_posterior_and_mode():
    m = ExactMLM.random(3, 4, gen(1))
    ids, pos = [2, 3, 3, 0], [1, 2]
    ref = exact_gap_logp(m, ids, pos)
    out = exact_infill(m, ids, pos)
    assert len(out) == 9
    assert out[0].tokens == max(ref, key=ref.get)  # the true mode
    for c in out:
        assert c.score == pytest.approx(ref[c.tokens], abs=1e-10)  # its exact log probability
    assert [c.score for c in out] == sorted((c.score for c in out), reverse=True)


def test_standard_exhaustive_equals_exact_on_exact_mlm():
    # ExactMLM marginalises masked positions: the chain rule with masks is exact
    m = ExactMLM.random(3, 4, gen(2))
    ids, pos = [1, 3, 3, 3], [1, 2, 3]
    exact, ex = as_dict(exact_infill(m, ids, pos)), exhaustive_infill(m, ids, pos)
    assert ex[0].tokens == exact_infill(m, ids, pos)[0].tokens
    for c in ex:
        assert c.score == pytest.approx(exact[c.tokens], abs=1e-5)


@pytest.mark.parametrize("order", ["l2r", "best"])
def test_full_beam_returns_exact_mode_and_logprob(order):
    m = ExactMLM.random(3, 4, gen(3))
    ids, pos = [0, 3, 3, 3], [1, 2, 3]
    exact = exact_infill(m, ids, pos)
    beam = infill(m, ids, pos, method="standard", order=order, beam_size=27)
    assert [c.tokens for c in beam] == [c.tokens for c in exact]
    for b, e in zip(beam, exact):
        assert b.score == pytest.approx(e.score, abs=1e-5)


@pytest.mark.parametrize("method,pivot", [("standard", None), ("hcb", None), ("hcb", 1)])
def test_l2r_full_beam_matches_exhaustive_on_incompatible_model(method, pivot):
    # LookupMLM: arbitrary conditionals; the l2r beam with n**k hypotheses is exhaustive search
    m = LookupMLM(3, 4, seed=4)
    if method == "hcb" and pivot is None:
        m = MaskAsToken(ExactMLM.random(4, 4, gen(4)))  # needs the mask among the outputs
    ids, pos = [0, 1, 3, 3][:4], [2, 3]
    ex = exhaustive_infill(m, ids, pos, method=method, pivot=pivot)
    beam = infill(m, ids, pos, method=method, pivot=pivot, beam_size=len(ex))
    assert [c.tokens for c in beam] == [c.tokens for c in ex]
    assert [c.score for c in beam] == pytest.approx([c.score for c in ex], abs=1e-6)
    top3 = exhaustive_infill(m, ids, pos, method=method, pivot=pivot, top=3)
    assert [c.tokens for c in top3] == [c.tokens for c in ex[:3]]


def test_small_beam_is_a_heuristic_on_lookup_model():
    # standard and HCB differ on incompatible conditionals, and a beam of 1 can miss the mode
    m = LookupMLM(3, 4, seed=0)
    ids, pos = [0, 3, 3, 3], [1, 2, 3]
    std = exhaustive_infill(m, ids, pos)
    hcb = exhaustive_infill(m, ids, pos, method="hcb", pivot=0)
    assert [c.tokens for c in std] != [c.tokens for c in hcb]
    misses = 0
    for seed in range(10):
        mm = LookupMLM(3, 4, seed=seed)
        misses += (
            infill(mm, ids, pos, method="standard", beam_size=1)[0].tokens != exhaustive_infill(mm, ids, pos)[0].tokens
        )
    assert misses > 0


# -- HCB theory -----------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["l2r", "best"])
def test_hcb_with_token_pivot_is_exact_up_to_a_constant(order):
    # compatible conditionals: HCB gives log p(w | ctx) - log p(pivot | ctx) for every w, any order
    m = ExactMLM.random(3, 4, gen(5))
    ids, pos, v = [2, 3, 3, 3], [1, 2, 3], 1
    ref = exact_gap_logp(m, [2, 0, 0, 0], pos)
    beam = infill(m, ids, pos, method="hcb", pivot=v, order=order, beam_size=27)
    assert len(beam) == 27
    const = ref[(v, v, v)]
    for c in beam:
        assert c.score == pytest.approx(ref[c.tokens] - const, abs=1e-5)
    assert beam[0].tokens == max(ref, key=ref.get)


def test_hcb_mask_pivot_exact_when_mask_is_informative_and_standard_is_not():
    # the mask is a real symbol of a compatible joint: conditional independence fails, so the
    # chain rule with masks is biased while HCB (pivot = mask) stays exact up to a constant
    m = MaskAsToken(ExactMLM.random(4, 4, gen(6)))
    ids, pos = [1, 3, 3, 3], [1, 2, 3]
    ref = exact_gap_logp(m.base, [1, 0, 0, 0], pos, values=torch.arange(3))  # fills over real tokens
    const = exact_gap_logp(m.base, [1, 0, 0, 0], pos)[(3, 3, 3)] - math.log(
        sum(math.exp(v) for f, v in exact_gap_logp(m.base, [1, 0, 0, 0], pos).items() if 3 not in f)
    )
    hcb = infill(m, ids, pos, method="hcb", beam_size=27)
    std = infill(m, ids, pos, method="standard", beam_size=27)
    for c in hcb:
        assert c.score == pytest.approx(ref[c.tokens] - const, abs=1e-5)
    dev = [c.score - ref[c.tokens] for c in std]
    assert max(dev) - min(dev) > 1e-2  # standard is not exact here


def test_hcb_and_standard_agree_when_gap_is_conditionally_independent():
    # joint = f(context) + sum_j g_j(context, w_j): gap positions independent given the context, so
    # the mask carries no information about the other gap positions and both methods are exact
    V, T, g = 4, 4, gen(7)
    lj = torch.zeros([V] * T, dtype=torch.float64)
    a = torch.randn(V, V, dtype=torch.float64, generator=g) * 2
    for j in (1, 2, 3):
        pair = torch.randn(V, V, dtype=torch.float64, generator=g) * 2
        shape = [1] * T
        shape[0], shape[j] = V, V
        lj = lj + pair.reshape(shape)
    lj = lj + a.sum(-1).reshape(V, 1, 1, 1)
    m = MaskAsToken(ExactMLM(lj))
    ids, pos = [2, 3, 3, 3], [1, 2, 3]
    ref = exact_gap_logp(m.base, [2, 0, 0, 0], pos, values=torch.arange(3))
    hcb, std = infill(m, ids, pos, method="hcb", beam_size=27), infill(m, ids, pos, method="standard", beam_size=27)
    assert [c.tokens for c in hcb] == [c.tokens for c in std]
    shift = {c.tokens: c.score - ref[c.tokens] for c in hcb}
    assert max(shift.values()) - min(shift.values()) < 1e-5
    # standard: exact up to the renormalisation over the real tokens (a constant here too)
    shift = [c.score - ref[c.tokens] for c in std]
    assert max(shift) - min(shift) < 1e-5
    # independence makes greedy exact: a beam of 1 finds the mode with either method
    mode = max(ref, key=ref.get)
    for method in ("standard", "hcb"):
        for order in ("l2r", "best"):
            assert infill(m, ids, pos, method=method, order=order, beam_size=1)[0].tokens == mode


def test_hcb_equals_standard_plus_constant_with_constant_mask_probability():
    m = WithMaskOutput(ExactMLM.random(3, 4, gen(8)), c=-0.7)
    ids, pos = [3, 3, 3, 1], [0, 1, 2]
    std, hcb = infill(m, ids, pos, method="standard", beam_size=4), infill(m, ids, pos, method="hcb", beam_size=4)
    log_q_mask = -0.7 - math.log(1 + math.exp(-0.7))  # base logits are normalised log-probs
    assert [c.tokens for c in std] == [c.tokens for c in hcb]
    for s, h in zip(std, hcb):
        assert h.score == pytest.approx(s.score - 3 * log_q_mask, abs=1e-5)


def test_hcb_default_pivot_needs_mask_output():
    m = ExactMLM.random(3, 3, gen(0))
    with pytest.raises(MLMProbError, match="pivot"):
        infill(m, [0, 3, 3], [1, 2], method="hcb")
    with pytest.raises(MLMProbError, match="pivot"):
        infill(m, [0, 3, 3], [1, 2], method="hcb", pivot=3)
    with pytest.raises(MLMProbError, match="only by method='hcb'"):
        infill(m, [0, 3, 3], [1, 2], method="standard", pivot=1)


# -- cost -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["l2r", "best"])
def test_hcb_and_standard_use_the_same_forward_passes(order):
    m = MaskAsToken(ExactMLM.random(4, 4, gen(9)))
    ids, pos = [0, 3, 3, 3], [1, 2, 3]
    counts = {}
    for method in ("standard", "hcb"):
        before = m.calls
        infill(m, ids, pos, method=method, order=order, beam_size=2)
        counts[method] = m.calls - before
    assert counts["standard"] == counts["hcb"] == 1 + 2 + 2  # one row per hypothesis per step
    before = m.calls
    sample_infill(m, ids, pos, num_samples=2, generator=gen(0))
    assert m.calls - before == counts["standard"]  # baselines: the same budget


def test_token_pivot_costs_more_in_best_order():
    m = ExactMLM.random(3, 4, gen(10))
    ids, pos = [0, 3, 3, 3], [1, 2, 3]
    c0 = m.calls
    infill(m, ids, pos, method="hcb", pivot=0, order="l2r", beam_size=2)
    c1 = m.calls
    infill(m, ids, pos, method="hcb", pivot=0, order="best", beam_size=2)
    assert c1 - c0 == 5 and m.calls - c1 == 3 + 2 * 2 + 2 * 1


# -- ablations and baselines ---------------------------------------------------------------------------


def test_ablation_corrections():
    logp = torch.log_softmax(torch.randn(4, 5, generator=gen(0), dtype=torch.float64), -1)
    sc = ContextScramble(mask_id=4, generator=gen(1), capacity=3)
    first = sc(logp)
    assert set(first.tolist()) <= set(logp[:, 4].tolist())
    second = sc(logp + 10.0)
    assert set(second.tolist()) <= set(logp[1:, 4].tolist())  # only the last 3 earlier terms
    sw = RandomTokenSwap(mask_id=4, vocab_size=5, generator=gen(2))
    terms = torch.stack([sw(logp) for _ in range(50)])  # [50, 4]
    for q in range(4):
        assert set(terms[:, q].tolist()) == set(logp[q, :4].tolist())  # every non-mask token, never the mask


def test_ablations_change_hcb_results():
    m = MaskAsToken(ExactMLM.random(4, 4, gen(11)))
    ids, pos = [1, 3, 3, 3], [1, 2, 3]
    hcb = infill(m, ids, pos, method="hcb", beam_size=27)
    sc = ContextScramble(m.mask_id, gen(0))
    sc.memory.extend([-5.0, -0.1, -2.0])
    scr = beam_search(m, ids, pos, correction=sc, beam_size=27)
    swp = beam_search(m, ids, pos, correction=RandomTokenSwap(m.mask_id, m.vocab_size, gen(0)), beam_size=27)
    same = beam_search(m, ids, pos, correction=Pivot(m.mask_id, m.mask_id), beam_size=27)
    assert [c.score for c in same] == [c.score for c in hcb]
    assert [c.score for c in scr] != pytest.approx([c.score for c in hcb])
    assert [c.score for c in swp] != pytest.approx([c.score for c in hcb])


def test_proposal_logp_temperature_and_nucleus():
    p = torch.tensor([[0.5, 0.3, 0.15, 0.05]], dtype=torch.float64)
    q = proposal_logp(p.log(), SamplingConfig(temperature=0.5)).exp()
    assert torch.allclose(q, p**2 / (p**2).sum())
    q = proposal_logp(p.log(), SamplingConfig(top_p=0.9)).exp()
    assert torch.allclose(q, torch.tensor([[0.5, 0.3, 0.15, 0.0]], dtype=torch.float64) / 0.95)
    with pytest.raises(MLMProbError):
        SamplingConfig(temperature=0.0)


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_sampling_baseline_draws_from_tempered_conditional(temperature):
    # one-position gap, one sample: the draw follows q~ (q at the temperature) over the candidates
    m = ExactMLM.random(4, 3, gen(12), scale=0.5)
    ids, pos = [1, 4, 2], [1]
    p = torch.tensor([math.exp(exact_gap_logp(m, [1, 0, 2], pos)[(v,)]) for v in range(4)])
    target = p ** (1 / temperature) / (p ** (1 / temperature)).sum()
    other = 1.0 if temperature == 0.5 else 0.5
    wrong = p ** (1 / other) / (p ** (1 / other)).sum()  # the other temperature
    g, N = gen(13), 3000
    counts = torch.zeros(4)
    for _ in range(N):
        counts[sample_infill(m, ids, pos, num_samples=1, temperature=temperature, generator=g)[0].tokens[0]] += 1
    tol = 2 * math.sqrt(4 / N)  # about 6x the expected TV of N draws over 4 outcomes
    assert 0.5 * (wrong - target).abs().sum() > 3 * tol  # the test can tell them apart
    assert 0.5 * (counts / N - target).abs().sum() < tol
    assert 0.5 * (counts / N - wrong).abs().sum() > 2 * tol


def test_sampling_baseline_nucleus_and_ranking():
    m = ExactMLM.random(4, 3, gen(14), scale=2.0)
    ids, pos = [1, 4, 4], [1, 2]
    out = sample_infill(m, ids, pos, num_samples=16, top_p=0.5, generator=gen(0))
    assert len({c.tokens for c in out}) == len(out)
    assert [c.score for c in out] == sorted((c.score for c in out), reverse=True)
    exact = as_dict(exact_infill(m, [1, 0, 0], pos))
    for c in out:  # scores: standard chain rule
        assert c.score == pytest.approx(exact[c.tokens], abs=1e-5)
    full = sample_infill(m, ids, pos, num_samples=16, generator=gen(0))
    assert len(out) < len(full) == 16  # the nucleus removed fills
    with pytest.raises(MLMProbError, match="Generator"):
        sample_infill(m, ids, pos)


# -- input validation -------------------------------------------------------------------------------------


def test_bad_input_raises_clear_errors():
    m = ExactMLM.random(3, 4, gen(0))
    for kwargs, msg in [
        (dict(positions=[4]), "outside"),
        (dict(positions=[1, 1]), "repeat"),
        (dict(positions=[]), "empty"),
        (dict(positions=[1], beam_size=0), "beam_size"),
        (dict(positions=[1], method="greedy"), "unknown infilling method"),
        (dict(positions=[1], order="r2l"), "unknown order"),
    ]:
        positions = kwargs.pop("positions")
        with pytest.raises(MLMProbError, match=msg):
            infill(m, [0, 1, 2, 0], positions, **{"method": "standard", **kwargs})
    with pytest.raises(MLMProbError, match="one sequence"):
        infill(m, [[0, 1, 2, 0], [0, 1, 2, 0]], [1], method="standard")
    assert infill(
        m, torch.tensor([[0, 1, 2, 0]]), torch.tensor([False, True, False, False]), method="standard"
    ) == infill(m, [0, 1, 2, 0], [1], method="standard")


# -- metrics ---------------------------------------------------------------------------------------------


def test_bleu_hand_computed():
    # BLEU-4 of ABCDE vs ABCDF: precisions 4/5, 3/4, 2/3, 1/2; no brevity penalty
    assert bleu("ABCDE", "ABCDF", 4) == pytest.approx((4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25)
    assert bleu("ABC", "ABCD", 2) == pytest.approx(math.exp(1 - 4 / 3))  # brevity penalty
    assert bleu("AAAA", "ABCD", 1) == pytest.approx(1 / 4)  # clipped counts
    assert bleu("ABCE", "ABCD") == 0.0 and bleu("ABCD", "ABCD") == 1.0  # BLEU-k for k tokens
    assert bleu("ABCDEX", "ABCDEF") == pytest.approx((5 / 6 * 4 / 5 * 3 / 4 * 2 / 3) ** 0.25)
    assert identity("ABCE", "ABCD") == 0.75
    assert topk_hit(["AB", "CD"], "CD", 2) and not topk_hit(["AB", "CD"], "CD", 1)
    m = gap_metrics(["AB", "CD"], "CD")
    assert m["top1"] == 0.0 and m["top5"] == 1.0 and m["identity"] == 0.0


def test_bleu_equals_sacrebleu_sentence_bleu():
    """Our BLEU-n (n = min(k, 4)) is sacrebleu's sentence BLEU with that order, no smoothing, tokens as given."""
    import logging
    import random

    from sacrebleu.metrics import BLEU

    logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # its 'enable effective_order' advice
    scorers = {
        n: BLEU(max_ngram_order=n, smooth_method="none", tokenize="none", effective_order=False) for n in range(1, 5)
    }
    rng = random.Random(0)
    n_nonzero = 0
    for _ in range(500):
        k = rng.randint(1, 9)
        alphabet = "ACDEFG"[: rng.randint(2, 6)]
        ref = [rng.choice(alphabet) for _ in range(k)]
        hyp = [c if rng.random() < 0.6 else rng.choice(alphabet) for c in ref]
        ours = bleu(hyp, ref)
        theirs = scorers[min(k, 4)].sentence_score(" ".join(hyp), [" ".join(ref)]).score / 100
        assert ours == pytest.approx(theirs, abs=1e-12)
        n_nonzero += 0 < ours < 1
    assert n_nonzero > 50  # partial matches, not only 0 / 1


# -- a tiny Hugging Face model (logits_at path) ---------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_hf(tiny_bert):
    return tiny_bert  # conftest: random BERT, 14 ids (4 specials incl. the mask at 3), residues 4..13


def test_tiny_hf_beam_matches_exhaustive(tiny_hf):
    ids = tiny_hf.encode(["ACD__E"]).input_ids
    pos = [4, 5]
    n = len(tiny_hf.proposal_ids)
    for method in ("standard", "hcb"):
        ex = exhaustive_infill(tiny_hf, ids, pos, method=method)
        beam = infill(tiny_hf, ids, pos, method=method, beam_size=n * n)
        assert [c.tokens for c in beam] == [c.tokens for c in ex]
        assert [c.score for c in beam] == pytest.approx([c.score for c in ex], abs=1e-4)
        assert all(set(c.tokens) <= set(range(4, 14)) for c in beam)  # proposal ids only
    best = infill(tiny_hf, ids, [1, 4, 5], method="hcb", order="best", beam_size=3)
    assert len(best) == 3 and len({c.tokens for c in best}) == 3
    with pytest.raises(MLMProbError, match="special token"):
        infill(tiny_hf, ids, [0, 1])


def test_cli_infill(tiny_hf, monkeypatch, capsys):
    from mlmprob.cli import main
    from mlmprob.infilling.stream import expand_gaps

    assert expand_gaps("AC[mask]x2D_") == "AC__D_"
    monkeypatch.setattr("mlmprob.models.load_mlm", lambda *a, **k: tiny_hf)
    assert main(["infill", "AC[MASK]x2E", "--model", "tiny", "--json", "-k", "3", "--order", "best"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["candidates"]) == 3 and out["positions"] == [3, 4] == out["token_indices"]
    assert all(len(c["fill"]) == 2 and c["sequence"].startswith("AC") for c in out["candidates"])
    assert main(["infill", "AC__E", "--model", "tiny", "--method", "standard", "--pivot", "A"]) == 2
    assert "only by method='hcb'" in capsys.readouterr().err
    assert main(["infill", "ACE", "--model", "tiny"]) == 2
    assert main(["infill", "AC__E", "--model", "tiny", "--pivot", "A", "-k", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 5  # the header, what the score is, the column names, two fills
    assert out.splitlines()[1] == (
        "# score: log-ratio in nats, not a probability (sum of log q(fill token) - log q(A) per position; > 0: beats A)"
    )
    assert main(["infill", "AC__E", "--model", "tiny", "--method", "standard", "-k", "2"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        "# score: log-probability of the fill in nats (chain rule: sum of log q(fill token | context), <= 0)"
    )


# -- experiment runner -------------------------------------------------------------------------------------


def test_runner_smoke_resume_and_tables(tiny_hf, tmp_path):
    from experiments.infill_runner import ExperimentConfig, run_experiment, tables_markdown
    from mlmprob.runtime.log import read_log

    def read_records(path):
        return list(read_log(path))

    data = tmp_path / "antibody"
    data.mkdir()
    rows = ["antibody_id,vh_protein_sequence,heavy_aligned_aho"]
    for i, seq in enumerate(["ACDEACDEAC", "CADECADECA"]):
        aligned = seq[:4] + "-" * 102 + seq[4:] + "-" * 40  # residues 4.. sit from column 107 on
        rows.append(f"ab{i},{seq},{aligned}")
    (data / "GDPa1_v1.2.csv").write_text("\n".join(rows) + "\n")
    cfg = ExperimentConfig(
        models=("tiny",),
        lengths=(2, 3),
        n_gaps=1,
        beam_size=3,
        methods=("hcb-l2r", "standard-best", "pure-sampling", "ablation-scramble", "ablation-swap"),
    )
    out = tmp_path / "res.jsonl"
    n = run_experiment(cfg, out, data_dir=tmp_path, load=lambda name: tiny_hf, progress=False)
    assert n == 2 * 2 * 1 * 5  # regions x lengths x gaps x methods
    recs = read_records(out)
    assert {r["region"] for r in recs} == {"random", "cdrh3"}
    for r in recs:
        assert len(r["fills"]) == 3 and len(r["gold"]) == r["k"] and r["rows"] > 0
        if r["region"] == "cdrh3":
            assert r["start"] >= 4
    by = {(r["region"], r["k"], r["gap_id"], r["method"]): r["rows"] for r in recs}
    assert all(by[(re, k, g, "hcb-l2r")] == by[(re, k, g, "pure-sampling")] for re, k, g, _ in by)
    with out.open("a") as f:
        f.write('{"model": "tiny", "trunc')  # a line cut by a kill
    assert run_experiment(cfg, out, data_dir=tmp_path, load=lambda name: tiny_hf, progress=False) == 0
    assert len(read_records(out)) == n
    md = tables_markdown(recs)
    assert "HCB Left-to-Right" in md and "Ablation 2 (Random Token Swap)" in md and "top1 k=3" in md
    assert "## Table 4" not in md  # no standard-l2r / hcb-best pair in this run
    cfg2 = ExperimentConfig(models=("tiny",), lengths=(2,), n_gaps=1, beam_size=3, methods=("standard-l2r",))
    assert run_experiment(cfg2, out, data_dir=tmp_path, load=lambda name: tiny_hf, progress=False) == 2
    md = tables_markdown(read_records(out))
    assert "## Table 4 - HCB vs standard on the same gaps, cdrh3 gaps" in md
    assert "| tiny | random | l2r | 1 |" in md  # only k=2 has both methods


def test_tables_markdown_cells_match_the_records():
    """Hand-made records with distinct values: Table 1 cells are 100 x the mean of the records of
    (model, region, method, k), Table 2 the mean over gap lengths of those means, Table 4 the counts
    over gaps where HCB and standard disagree."""
    from experiments.infill_runner import METRICS, tables_markdown

    g = torch.Generator().manual_seed(0)
    recs = []
    for model in ("m1", "m2"):
        for method in ("hcb-l2r", "standard-l2r", "pure-sampling"):
            for k in (2, 3):
                for gap in range(3):
                    vals = torch.rand(len(METRICS), generator=g).tolist()
                    rec = {
                        "model": model,
                        "dataset": "gdpa1",
                        "region": "random",
                        "method": method,
                        "k": k,
                        "gap_id": gap,
                        "fills": [f"F{gap}{k}"],
                        **dict(zip(METRICS, vals)),
                    }
                    rec["top1"] = float(vals[0] > 0.5)
                    recs.append(rec)
    md = tables_markdown(recs)

    def mean(model, method, k, metric):
        vals = [r[metric] for r in recs if (r["model"], r["method"], r["k"]) == (model, method, k)]
        return sum(vals) / len(vals)

    (t1,) = tables_after(md, "Table 1 - m2, random gaps")
    for method, label in (("hcb-l2r", "HCB Left-to-Right"), ("pure-sampling", "Pure sampling")):
        for metric in ("top5", "bleu", "identity"):
            for k in (2, 3):
                assert row(t1, Method=label)[f"{metric} k={k}"] == f"{100 * mean('m2', method, k, metric):.2f}"
    (t2,) = tables_after(md, "Table 2 - top-1 accuracy, random gaps")
    for model in ("m1", "m2"):
        want = 100 * (mean(model, "standard-l2r", 2, "top1") + mean(model, "standard-l2r", 3, "top1")) / 2
        assert row(t2, Method="Standard Left-to-Right")[model] == f"{want:.2f}"
    (t4,) = tables_after(md, "Table 4 - HCB vs standard on the same gaps, random gaps")
    for model in ("m1", "m2"):
        by = {(r["method"], r["k"], r["gap_id"]): r["top1"] for r in recs if r["model"] == model}
        hcb_only = sum(by[("hcb-l2r", k, i)] > by[("standard-l2r", k, i)] for k in (2, 3) for i in range(3))
        std_only = sum(by[("hcb-l2r", k, i)] < by[("standard-l2r", k, i)] for k in (2, 3) for i in range(3))
        line = row(t4, model=model, order="l2r")
        assert (line["gaps"], line["only HCB right"], line["only standard right"]) == (
            "6",
            str(hcb_only),
            str(std_only),
        )
        assert line["same top fill"] == "6"


def _paired_rec(method, gap_id, fill, gold, k=2, region="random", model="m"):
    return {
        "model": model,
        "dataset": "gdpa1",
        "region": region,
        "k": k,
        "gap_id": gap_id,
        "method": method,
        "fills": [fill],
        "top1": float(fill == gold),
    }


def test_paired_comparison_counts_and_sign_test():
    from experiments.infill_paired import paired_comparisons, paired_markdown
    from mlmprob.metrics import exact_sign_test

    # exact binomial tails, by hand: P(X <= 1 | n=9, 1/2) = 10/512
    assert exact_sign_test(1, 8) == pytest.approx(2 * 10 / 512)
    assert exact_sign_test(8, 1) == exact_sign_test(1, 8)
    assert exact_sign_test(0, 0) == 1.0 and exact_sign_test(3, 3) == 1.0
    with pytest.raises(ValueError):
        exact_sign_test(-1, 2)
    recs = []
    outcomes = [("AA", "AA"), ("AA", "CC"), ("CC", "AA"), ("CC", "AA"), ("CC", "DD")]  # (hcb, standard)
    for g, (h, s) in enumerate(outcomes):
        recs += [_paired_rec("hcb-l2r", g, h, "AA"), _paired_rec("standard-l2r", g, s, "AA")]
    recs.append(_paired_rec("hcb-l2r", 99, "AA", "AA"))  # unpaired: ignored
    recs.append(_paired_rec("hcb-best", 0, "AA", "AA"))  # no standard-best partner: no row
    recs.append(_paired_rec("standard-l2r", 0, "AA", "AA", k=3))  # another k, no HCB partner
    (c,) = paired_comparisons(recs)
    assert (c.model, c.region, c.order, c.n_gaps) == ("m", "random", "l2r", 5)
    assert (c.same_top_fill, c.only_a, c.only_b) == (1, 1, 2)
    assert c.top1_a == pytest.approx(2 / 5) and c.top1_b == pytest.approx(3 / 5)
    assert c.p_value == pytest.approx(exact_sign_test(1, 2)) and c.p_value == 1.0
    md = paired_markdown([c])
    assert "| m | random | l2r | 5 | 1 | 1 | 2 | 40.00 | 60.00 | 1 |" in md


def test_pivot_sweep_matches_runner_and_resumes(tiny_hf, tmp_path):
    from experiments.infill_pivots import (
        PivotSweepConfig,
        plot_sweep,
        run_sweep,
        summarize_sweep,
        sweep_markdown,
    )
    from experiments.infill_pivots import (
        main as pivots_main,
    )
    from experiments.infill_runner import ExperimentConfig, run_experiment
    from mlmprob.runtime.log import read_log

    def read_records(path):
        return list(read_log(path))

    data = tmp_path / "antibody"
    data.mkdir()
    rows = ["antibody_id,vh_protein_sequence,heavy_aligned_aho"]
    for i, seq in enumerate(["ACDEACDEAC", "CADECADECA", "DDEEAACCDE"]):
        rows.append(f"ab{i},{seq},{seq[:4] + '-' * 102 + seq[4:] + '-' * 40}")
    (data / "GDPa1_v1.2.csv").write_text("\n".join(rows) + "\n")
    load = lambda name: tiny_hf  # noqa: E731
    cfg = PivotSweepConfig(model="tiny", region="random", k=2, n_gaps=3, beam_size=3, pivots=(tiny_hf.mask_id, 5))
    out = tmp_path / "piv.jsonl"
    assert run_sweep(cfg, out, data_dir=tmp_path, load=load, progress=False) == 3 * 3  # gaps x (standard + 2)
    assert run_sweep(cfg, out, data_dir=tmp_path, load=load, progress=False) == 0  # resumed: nothing left
    recs = read_records(out)
    # the mask pivot is the runner's HCB and no pivot its standard beam, on the same gaps
    ref = tmp_path / "ref.jsonl"
    run_experiment(
        ExperimentConfig(
            models=("tiny",),
            regions=("random",),
            lengths=(2,),
            n_gaps=3,
            beam_size=3,
            methods=("hcb-l2r", "standard-l2r"),
        ),
        ref,
        data_dir=tmp_path,
        load=load,
        progress=False,
    )
    runner = {(r["gap_id"], r["method"]): r["fills"] for r in read_records(ref)}
    for r in recs:
        if r["pivot"] is None:
            assert r["fills"] == runner[(r["gap_id"], "standard-l2r")]
        elif r["pivot"] == tiny_hf.mask_id:
            assert r["mask_pivot"] and r["fills"] == runner[(r["gap_id"], "hcb-l2r")]
    table = summarize_sweep(recs)
    assert {t.pivot for t in table} == {None, tiny_hf.mask_id, 5} and all(t.n_gaps == 3 for t in table)
    std = next(t for t in table if t.pivot is None)
    assert std.only_pivot_right == std.only_standard_right == 0 and std.p_value == 1.0
    assert [t.top1 for t in table] == sorted((t.top1 for t in table), reverse=True)
    md = sweep_markdown(table)
    assert "**standard beam (no pivot)**" in md and "(mask, default)" in md
    assert plot_sweep(table, tmp_path / "p.png").stat().st_size > 0
    with pytest.raises(MLMProbError, match="pivot must be a token id"):
        run_sweep(
            PivotSweepConfig(model="tiny", region="random", k=2, n_gaps=1, pivots=(10_000,)),
            out,
            data_dir=tmp_path,
            load=load,
            progress=False,
        )
    assert pivots_main(["--out", str(tmp_path / "empty.jsonl"), "--report-only"]) == 2

"""The ground-truth experiment's measurements of one trained model: pair joints (``eval_pairs``), beam
infilling (``eval_infill``) and the samplers (``eval_samplers``) against the exact distribution of
its synthetic language. The experiment and its runner are ``ground_truth``.
"""

from __future__ import annotations

import math
import time

import torch

from mlmprob.synthetic import SyntheticLanguage, make_language
from mlmprob.training.data import SYMBOL_OFFSET, wrap_symbols
from mlmprob.training.masking import generator_for

from .ground_truth_common import (
    BEAMS,
    JOINT_METHODS,
    GroundTruthConfig,
    adjacent_equal,
    all_states,
    empirical,
    kl,
    state_index,
    true_pair_joint,
    tv,
)

# -- models ---------------------------------------------------------------------------------------


def language(cfg: GroundTruthConfig, coupling: float) -> SyntheticLanguage:
    return make_language(
        "potts", cfg.vocab_size, cfg.length, cfg.language_seed, coupling=coupling, field_scale=cfg.field_scale
    )


def symbol_mlm(path, V: int):
    """A trained symbol model as a ``MaskedLM`` whose proposals are the ``V`` symbols only."""
    from mlmprob.models import load_mlm

    mlm = load_mlm(str(path))
    mlm.proposal_ids = torch.arange(SYMBOL_OFFSET, SYMBOL_OFFSET + V)
    return mlm


# -- evaluations ----------------------------------------------------------------------------------


def eval_pairs(mlm, lang: SyntheticLanguage, held: torch.Tensor, n: int, seed: int) -> dict:
    """Pair-joint constructions vs the exact pair joint on ``n`` held-out (sequence, pair) draws."""
    from mlmprob.joints import evaluate_pair

    V, T = lang.vocab_size, lang.length
    g = generator_for(seed, "gt-pairs")
    cands = torch.arange(SYMBOL_OFFSET, SYMBOL_OFFSET + V)
    kls = {m: [] for m in JOINT_METHODS}
    nll = {m: [] for m in JOINT_METHODS + ("true",)}
    ent = []
    for i in range(n):
        x = held[i % len(held)]
        a, b = sorted(torch.randperm(T, generator=g)[:2].tolist())
        truth = true_pair_joint(lang, x, a, b)
        ev = evaluate_pair(mlm, wrap_symbols(x[None])[0], a + 1, b + 1, candidates=cands)
        ga, gb = int(x[a]), int(x[b])
        nll["true"].append(-float(truth[ga, gb]))
        ent.append(-float((truth.exp() * truth).sum()))
        for m in JOINT_METHODS:
            j = ev.joints[m].double()
            kls[m].append(kl(truth.reshape(-1), j.reshape(-1)))
            nll[m].append(-float(j[ga, gb]))
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    return {
        "n": n,
        "kl": {m: mean(v) for m, v in kls.items()},
        "p_ppl": {m: math.exp(mean(v)) for m, v in nll.items()},
        "true_entropy_ppl": math.exp(mean(ent)),
    }


def eval_infill(mlm, lang: SyntheticLanguage, held: torch.Tensor, n: int, k: int, beam: int, seed: int) -> dict:
    """Beam search (trained MLM, and the exact conditionals as reference) vs the true mode of the gap."""
    from mlmprob.infilling import exact_infill, infill

    T = lang.length
    g = generator_for(seed, "gt-infill", k)
    truth_mlm = lang.as_mlm()
    stats: dict[str, dict[str, float]] = {}
    for i in range(n):
        x = held[i % len(held)]
        s = int(torch.randint(0, T - k + 1, (1,), generator=g))
        pos = list(range(s, s + k))
        exact = exact_infill(truth_mlm, x, pos)
        logp = {c.tokens: c.score for c in exact}
        mode = exact[0].tokens
        gold = tuple(int(v) for v in x[pos])
        for who, model, ids, shift, piv in (
            ("mlm", mlm, wrap_symbols(x[None])[0], 1, None),
            ("exact", truth_mlm, x, 0, 0),
        ):
            for method, order in BEAMS:
                top = infill(
                    model,
                    ids,
                    [p + shift for p in pos],
                    method=method,
                    order=order,
                    beam_size=beam,
                    pivot=piv if method == "hcb" else None,
                )[0].tokens
                top = tuple(t - (SYMBOL_OFFSET if who == "mlm" else 0) for t in top)
                r = stats.setdefault(f"{who}/{method}-{order}", {"mode": 0.0, "gold": 0.0, "regret": 0.0})
                r["mode"] += (top == mode) / n
                r["gold"] += (top == gold) / n
                r["regret"] += (logp[mode] - logp[top]) / n
    return {"n": n, "k": k, "methods": stats}


def eval_samplers(mlm, lang: SyntheticLanguage, cfg: GroundTruthConfig, seed: int) -> dict:
    """MH and degenerate Gibbs on the trained MLM vs the truth and vs ``exp(-E_local)/Z``."""
    from mlmprob.energies import energy
    from mlmprob.sampling import sample

    V, T = lang.vocab_size, lang.length
    n_states = V**T
    states = all_states(V, T)
    free = list(range(1, T + 1))
    e_local = torch.cat([energy(mlm, wrap_symbols(c), free, kind="local") for c in states.split(4096)])
    log_target = torch.log_softmax(-e_local, 0)
    log_truth = torch.log_softmax(lang.log_prob(states), 0)
    stat = adjacent_equal(states)
    stat_truth = torch.zeros(T, dtype=torch.float64).index_add_(0, stat, log_truth.exp())
    stat_target = torch.zeros(T, dtype=torch.float64).index_add_(0, stat, log_target.exp())
    g0 = generator_for(seed, "gt-init")
    init = wrap_symbols(torch.randint(0, V, (cfg.chains, T), generator=g0))
    out = {
        "tv_target_truth": tv(log_target.exp(), log_truth.exp()),
        "kl_truth_target": kl(log_truth, log_target),
        "stat_truth": stat_truth.tolist(),
        "stat_target": stat_target.tolist(),
        "chains": cfg.chains,
        "epochs": cfg.sample_epochs,
    }
    pooled_from = cfg.sample_epochs // 2
    for method in ("mh", "gibbs"):
        t0 = time.perf_counter()
        r = sample(
            mlm,
            init,
            method=method,
            energy="local",
            epochs=cfg.sample_epochs,
            burn_in=0,
            positions=free,
            generator=generator_for(seed, "gt-sample", method),
        )
        x = r.samples[:, :, 1:-1] - SYMBOL_OFFSET  # [S, B, T]
        hists = [torch.bincount(adjacent_equal(x[s]), minlength=T).double() / x.shape[1] for s in range(x.shape[0])]
        own = torch.stack(hists[pooled_from:]).mean(0)  # the sampler's own late distribution of the statistic
        per_epoch_stat = [
            {
                "truth": tv(h, stat_truth),
                "target": tv(h, stat_target),
                "own_late": tv(h, own),
                "hist": [round(float(v), 6) for v in h],
            }
            for h in hists
        ]
        late = x[pooled_from:].reshape(-1, T)
        emp = empirical(state_index(late, V), n_states)
        out[method] = {
            "tv_truth": tv(emp, log_truth.exp()),
            "tv_target": tv(emp, log_target.exp()),
            "n_samples": len(late),
            "accept_rate": r.accept_rate,
            "stat_tv": per_epoch_stat,
            "seconds": time.perf_counter() - t0,
        }
    # noise floor: the TV that as many exact i.i.d. draws would show (chains are correlated, so more)
    n = cfg.chains * (cfg.sample_epochs - pooled_from)
    gf = generator_for(seed, "gt-floor")
    for name, logd in (("truth", log_truth), ("target", log_target)):
        draws = torch.multinomial(logd.exp(), n, replacement=True, generator=gf)
        out[f"floor_{name}"] = tv(empirical(draws, n_states), logd.exp())
    return out

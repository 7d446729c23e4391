"""Every method of the package against the exact answer, on MLMs trained on synthetic languages.

For Potts chains of several coupling strengths (strong coupling = strong dependencies), train a
BERT MLM with ``mlmprob.train`` on exact samples, then measure, against the language's exact
distribution:

- **unary**: mean KL(true || MLM) of the single-site conditionals (the trainer's exact KL);
- **pairs**: every pair-joint construction (MLM, MRF, MRF-logit, HCB, AG) vs the true
  ``p(x_a, x_b | rest)``: KL(true || construction) and P-PPL on the held-out gold pairs, with the
  true joint's own P-PPL as the floor;
- **samplers**: MH (``E_local``) and degenerate Gibbs from random starts: total variation of the
  pooled samples to the truth and to ``exp(-E_local)/Z`` (enumerated), with the TV of as many exact
  i.i.d. draws as the noise floor; per epoch, TV of the chains' distribution of the Potts
  sufficient statistic (number of equal adjacent pairs) to its exact target value (mixing);
- **infill**: standard / HCB beam search (l2r, best-to-worst) vs the true mode of
  ``p(gap | context)``: how often the beam's top fill is the mode, and the regret in exact log
  probability; the same beams on the exact conditionals as reference;
- **training**: the same measurements at several training steps (one coupling), and single-site
  KL curves for several masking rates with static and dynamic masking (Li et al. 2024, Thm. 2).

Records go to ``results.jsonl`` as each unit finishes (a rerun skips finished units and resumes
unfinished trainings); ``python -m mlmprob.experiments.ground_truth_report`` writes the report.

    python -m mlmprob.experiments.ground_truth --out docs/results/ground_truth --runs runs/ground_truth
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from ..errors import MLMProbError
from ..jsonl import dumps, trim_partial_line
from ..synthetic import SyntheticLanguage, make_language
from ..training.data import SYMBOL_OFFSET, wrap_symbols
from ..training.masking import generator_for, n_selected

RESULTS = "results.jsonl"
JOINT_METHODS = ("mlm", "mrf_logit", "mrf", "hcb", "ag")
BEAMS = (("standard", "l2r"), ("hcb", "l2r"), ("standard", "best"), ("hcb", "best"))


@dataclass(frozen=True)
class GroundTruthConfig:
    """Sizes of every stage. The defaults take about an hour on one CPU core."""

    vocab_size: int = 5
    length: int = 6
    couplings: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0)
    field_scale: float = 0.5
    language_seed: int = 0
    # training (one model per coupling)
    n_train: int = 20000
    n_heldout: int = 1000
    hidden: int = 64
    layers: int = 2
    heads: int = 2
    intermediate: int = 128
    steps: int = 3000
    batch_size: int = 64
    lr: float = 2e-3
    mask_rate: float = 0.34
    eval_every: int = 250
    # evaluation
    n_pairs: int = 200
    n_gaps: int = 200
    gap_lengths: tuple[int, ...] = (2, 3)
    beam_size: int = 5
    chains: int = 1000
    sample_epochs: int = 30
    # training-step curve (coupling ``curve_coupling``) and masking-rate curves
    curve_coupling: float = 2.0
    curve_steps: tuple[int, ...] = (250, 500, 1000, 2000, 3000)
    masking_rates: tuple[float, ...] = (0.17, 0.34, 0.5, 0.67)
    masking_n_train: int = 2000
    masking_steps: int = 3000
    seed: int = 0

    def __post_init__(self):
        if self.vocab_size ** self.length > 200_000:
            raise MLMProbError(f"V**T = {self.vocab_size ** self.length} is too many sequences to enumerate here "
                               f"(limit 200000)")
        if not self.gap_lengths or min(self.gap_lengths) < 1 or max(self.gap_lengths) >= self.length:
            raise MLMProbError(f"gap lengths {self.gap_lengths} must lie in 1..{self.length - 1}")
        for name in ("n_pairs", "n_gaps", "chains", "steps", "masking_steps", "eval_every", "beam_size"):
            if int(getattr(self, name)) < 1:
                raise MLMProbError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.sample_epochs < 2:
            raise MLMProbError(f"sample_epochs must be at least 2 (the second half is pooled), got {self.sample_epochs}")
        cs = list(self.curve_steps)
        if not cs or cs != sorted(set(cs)) or cs[0] < 1 or any(c % self.eval_every for c in cs):
            raise MLMProbError(f"curve_steps must be increasing positive multiples of eval_every ({self.eval_every}), "
                               f"got {self.curve_steps}")

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


# -- exact quantities -----------------------------------------------------------------------------

def all_states(V: int, T: int) -> torch.Tensor:
    """All ``V**T`` sequences ``[V**T, T]`` in base-``V`` order (row ``i`` is ``i`` in base ``V``)."""
    from ..models.exact import all_sequences

    return all_sequences(V, T)


def state_index(x: torch.Tensor, V: int) -> torch.Tensor:
    """Base-``V`` index of each row of ``x`` ``[..., T]`` (inverse of ``all_states``).

    >>> state_index(all_states(3, 2), 3).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7, 8]
    """
    T = x.shape[-1]
    w = V ** torch.arange(T - 1, -1, -1)
    return (x.long() * w).sum(-1)


def empirical(idx: torch.Tensor, n_states: int) -> torch.Tensor:
    """Empirical distribution (float64) of state indices."""
    return torch.bincount(idx.reshape(-1), minlength=n_states).double() / idx.numel()


def tv(p: torch.Tensor, q: torch.Tensor) -> float:
    """Total variation distance of two distributions on the same states.

    >>> tv(torch.tensor([0.5, 0.5]), torch.tensor([1.0, 0.0]))
    0.5
    """
    return 0.5 * float((p - q).abs().sum())


def kl(logp: torch.Tensor, logq: torch.Tensor) -> float:
    """KL(p || q) from log-probabilities (0 log 0 = 0)."""
    p = logp.exp()
    return float(torch.where(p > 0, p * (logp - logq), torch.zeros_like(p)).sum())


def adjacent_equal(x: torch.Tensor) -> torch.Tensor:
    """The Potts sufficient statistic for the coupling: equal adjacent pairs per row ``[..., T] -> [...]``."""
    return (x[..., 1:] == x[..., :-1]).sum(-1)


def true_pair_joint(lang: SyntheticLanguage, x: torch.Tensor, a: int, b: int) -> torch.Tensor:
    """Exact ``log p(x_a, x_b | rest)`` ``[V, V]`` for one sequence ``x`` ``[T]`` (symbols)."""
    V = lang.vocab_size
    rows = x.repeat(V * V, 1)
    rows[:, a] = torch.arange(V).repeat_interleave(V)
    rows[:, b] = torch.arange(V).repeat(V)
    both = x.clone()[None]
    both[0, a] = both[0, b] = lang.mask_id
    return (lang.log_marginal(rows) - lang.log_marginal(both)).reshape(V, V)


# -- models ---------------------------------------------------------------------------------------

def _train_config(cfg: GroundTruthConfig, *, steps: int, mask_rate: float, masking: str = "dynamic"):
    from ..training import TrainConfig

    return TrainConfig(hidden_size=cfg.hidden, num_layers=cfg.layers, num_heads=cfg.heads,
                       intermediate_size=cfg.intermediate, max_steps=steps, batch_size=cfg.batch_size, lr=cfg.lr,
                       warmup_steps=min(100, steps // 10), mask_rate=mask_rate, masking=masking, seed=cfg.seed,
                       eval_every=cfg.eval_every, checkpoint_every=min(500, steps), keep_checkpoints=1,
                       kl_sequences=256)


def language(cfg: GroundTruthConfig, coupling: float) -> SyntheticLanguage:
    return make_language("potts", cfg.vocab_size, cfg.length, cfg.language_seed, coupling=coupling,
                         field_scale=cfg.field_scale)


def symbol_mlm(path, V: int):
    """A trained symbol model as a ``MaskedLM`` whose proposals are the ``V`` symbols only."""
    from ..models import load_mlm

    mlm = load_mlm(str(path))
    mlm.proposal_ids = torch.arange(SYMBOL_OFFSET, SYMBOL_OFFSET + V)
    return mlm


# -- evaluations ----------------------------------------------------------------------------------

def eval_pairs(mlm, lang: SyntheticLanguage, held: torch.Tensor, n: int, seed: int) -> dict:
    """Pair-joint constructions vs the exact pair joint on ``n`` held-out (sequence, pair) draws."""
    from ..joints import AGOptions, evaluate_pair

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
        ev = evaluate_pair(mlm, wrap_symbols(x[None])[0], a + 1, b + 1, candidates=cands, ag=AGOptions())
        ga, gb = int(x[a]), int(x[b])
        nll["true"].append(-float(truth[ga, gb]))
        ent.append(-float((truth.exp() * truth).sum()))
        for m in JOINT_METHODS:
            j = ev.joints[m].double()
            kls[m].append(kl(truth.reshape(-1), j.reshape(-1)))
            nll[m].append(-float(j[ga, gb]))
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    return {"n": n, "kl": {m: mean(v) for m, v in kls.items()},
            "p_ppl": {m: math.exp(mean(v)) for m, v in nll.items()}, "true_entropy_ppl": math.exp(mean(ent))}


def eval_infill(mlm, lang: SyntheticLanguage, held: torch.Tensor, n: int, k: int, beam: int, seed: int) -> dict:
    """Beam search (trained MLM, and the exact conditionals as reference) vs the true mode of the gap."""
    from ..infill import exact_infill, infill

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
        for who, model, ids, shift, piv in (("mlm", mlm, wrap_symbols(x[None])[0], 1, None),
                                            ("exact", truth_mlm, x, 0, 0)):
            for method, order in BEAMS:
                top = infill(model, ids, [p + shift for p in pos], method=method, order=order, beam_size=beam,
                             pivot=piv if method == "hcb" else None)[0].tokens
                top = tuple(t - (SYMBOL_OFFSET if who == "mlm" else 0) for t in top)
                r = stats.setdefault(f"{who}/{method}-{order}", {"mode": 0.0, "gold": 0.0, "regret": 0.0})
                r["mode"] += (top == mode) / n
                r["gold"] += (top == gold) / n
                r["regret"] += (logp[mode] - logp[top]) / n
    return {"n": n, "k": k, "methods": stats}


def eval_samplers(mlm, lang: SyntheticLanguage, cfg: GroundTruthConfig, seed: int) -> dict:
    """MH and degenerate Gibbs on the trained MLM vs the truth and vs ``exp(-E_local)/Z``."""
    from ..energy import energy
    from ..sampling import sample

    V, T = lang.vocab_size, lang.length
    n_states = V ** T
    states = all_states(V, T)
    free = list(range(1, T + 1))
    e_local = torch.cat([energy(mlm, wrap_symbols(c), "local", positions=free) for c in states.split(4096)])
    log_target = torch.log_softmax(-e_local, 0)
    log_truth = torch.log_softmax(lang.log_prob(states), 0)
    stat = adjacent_equal(states)
    stat_truth = torch.zeros(T, dtype=torch.float64).index_add_(0, stat, log_truth.exp())
    stat_target = torch.zeros(T, dtype=torch.float64).index_add_(0, stat, log_target.exp())
    g0 = generator_for(seed, "gt-init")
    init = wrap_symbols(torch.randint(0, V, (cfg.chains, T), generator=g0))
    out = {"tv_target_truth": tv(log_target.exp(), log_truth.exp()), "kl_truth_target": kl(log_truth, log_target),
           "stat_truth": stat_truth.tolist(), "stat_target": stat_target.tolist(),
           "chains": cfg.chains, "epochs": cfg.sample_epochs}
    pooled_from = cfg.sample_epochs // 2
    for method in ("mh", "gibbs"):
        t0 = time.perf_counter()
        r = sample(mlm, init, method=method, energy="local", epochs=cfg.sample_epochs, positions=free,
                   generator=generator_for(seed, "gt-sample", method))
        x = r.samples[:, :, 1:-1] - SYMBOL_OFFSET            # [S, B, T]
        hists = [torch.bincount(adjacent_equal(x[s]), minlength=T).double() / x.shape[1] for s in range(x.shape[0])]
        own = torch.stack(hists[pooled_from:]).mean(0)  # the sampler's own late distribution of the statistic
        per_epoch_stat = [{"truth": tv(h, stat_truth), "target": tv(h, stat_target), "own_late": tv(h, own),
                           "hist": [round(float(v), 6) for v in h]} for h in hists]
        late = x[pooled_from:].reshape(-1, T)
        emp = empirical(state_index(late, V), n_states)
        out[method] = {"tv_truth": tv(emp, log_truth.exp()), "tv_target": tv(emp, log_target.exp()),
                       "n_samples": len(late), "accept_rate": r.accept_rate, "stat_tv": per_epoch_stat,
                       "seconds": time.perf_counter() - t0}
    # noise floor: the TV that as many exact i.i.d. draws would show (chains are correlated, so more)
    n = cfg.chains * (cfg.sample_epochs - pooled_from)
    gf = generator_for(seed, "gt-floor")
    for name, logd in (("truth", log_truth), ("target", log_target)):
        draws = torch.multinomial(logd.exp(), n, replacement=True, generator=gf)
        out[f"floor_{name}"] = tv(empirical(draws, n_states), logd.exp())
    return out


# -- runner ---------------------------------------------------------------------------------------

class Results:
    """Append-only JSONL of finished units, keyed by ``unit``."""

    def __init__(self, path: Path):
        self.path = path
        self.done: dict[str, dict] = {}
        if path.is_file():
            text = trim_partial_line(path)   # a line cut by a kill: dropped, its unit is redone
            for line in text.splitlines():
                if line.strip():
                    rec = json.loads(line)
                    if "unit" in rec:
                        self.done[rec["unit"]] = rec

    def add(self, rec: dict) -> None:
        self.done[rec["unit"]] = rec
        with self.path.open("a") as f:
            f.write(dumps(rec) + "\n")


def _train(cfg: GroundTruthConfig, lang, out_dir: Path, *, steps: int, mask_rate: float, masking: str = "dynamic",
           n_train: int | None = None, stop_after: int | None = None, progress: bool = False):
    from ..training import SyntheticSource, train

    tc = _train_config(cfg, steps=steps, mask_rate=mask_rate, masking=masking)
    src = SyntheticSource(lang, n_train or cfg.n_train, cfg.n_heldout)
    return train(tc, src, out_dir, progress=progress, stop_after=stop_after)


def run(cfg: GroundTruthConfig, out: Path, runs: Path, *, stages=("coupling", "curve", "masking"),
        progress: bool = True, log=print) -> Results:
    from ..training import read_result
    from ..training.checkpoint import latest_checkpoint

    out.mkdir(parents=True, exist_ok=True)
    runs.mkdir(parents=True, exist_ok=True)
    cfg_path = out / "config.json"
    if cfg_path.is_file() and json.loads(cfg_path.read_text()) != cfg.to_dict():
        raise MLMProbError(f"{out} holds results of a different configuration; use the same settings or another "
                           f"--out")
    cfg_path.write_text(dumps(cfg.to_dict(), indent=1) + "\n")
    res = Results(out / RESULTS)
    V, T = cfg.vocab_size, cfg.length

    def held_out(lang):
        return lang.sample(max(cfg.n_pairs, cfg.n_gaps), generator_for(cfg.seed, "gt-heldout"))

    def evaluated(unit: str, with_samplers: bool) -> bool:
        wanted = [f"{unit}/pairs"] + [f"{unit}/infill-k{k}" for k in cfg.gap_lengths]
        wanted += [f"{unit}/samplers"] if with_samplers else []
        return all(u in res.done for u in wanted)

    def evaluate_model(unit: str, model_dir, lang, extra: dict, with_samplers: bool) -> None:
        if evaluated(unit, with_samplers):
            return  # nothing to do: the model (in the ignored runs folder) is not needed
        mlm = symbol_mlm(model_dir, V)
        held = held_out(lang)
        if f"{unit}/pairs" not in res.done:
            t0 = time.perf_counter()
            rec = eval_pairs(mlm, lang, held, cfg.n_pairs, cfg.seed)
            res.add({"unit": f"{unit}/pairs", "stage": "pairs", **extra, **rec, "seconds": time.perf_counter() - t0})
            log(f"{unit}/pairs done")
        for k in cfg.gap_lengths:
            if f"{unit}/infill-k{k}" not in res.done:
                t0 = time.perf_counter()
                rec = eval_infill(mlm, lang, held, cfg.n_gaps, k, cfg.beam_size, cfg.seed)
                res.add({"unit": f"{unit}/infill-k{k}", "stage": "infill", **extra, **rec,
                         "seconds": time.perf_counter() - t0})
                log(f"{unit}/infill-k{k} done")
        if with_samplers and f"{unit}/samplers" not in res.done:
            rec = eval_samplers(mlm, lang, cfg, cfg.seed)
            res.add({"unit": f"{unit}/samplers", "stage": "samplers", **extra, **rec})
            log(f"{unit}/samplers done")

    if "coupling" in stages:
        for J in cfg.couplings:
            lang = language(cfg, J)
            d = runs / f"potts-J{J:g}"
            unit = f"coupling/J{J:g}"
            if f"{unit}/train" not in res.done:
                r = _train(cfg, lang, d, steps=cfg.steps, mask_rate=cfg.mask_rate, progress=progress)
                res.add({"unit": f"{unit}/train", "stage": "train", "coupling": J, "final": r.final,
                         "history": list(r.history)})
                log(f"{unit} trained: {r.final}")
            evaluate_model(unit, d, lang, {"coupling": J}, with_samplers=True)

    if "curve" in stages:
        J = cfg.curve_coupling
        lang = language(cfg, J)
        d = runs / f"curve-J{J:g}"
        for s in cfg.curve_steps:
            unit = f"curve/step{s}"
            if evaluated(unit, with_samplers=True):
                continue
            _train(cfg, lang, d, steps=max(cfg.curve_steps), mask_rate=cfg.mask_rate, stop_after=s, progress=progress)
            ck = latest_checkpoint(d)
            state = read_result(d)
            if state.step != s:
                raise MLMProbError(f"{d} is at step {state.step}, not {s}: remove it to redo the step curve")
            if not state.history or state.history[-1]["step"] != s:
                raise MLMProbError(f"{d} has no evaluation at step {s}")
            kl_now = state.history[-1]["kl"]
            evaluate_model(unit, ck, lang, {"coupling": J, "step": s, "unary_kl": kl_now},
                           with_samplers=True)

    if "masking" in stages:
        J = cfg.curve_coupling
        lang = language(cfg, J)
        for rate in cfg.masking_rates:
            for masking in ("dynamic", "static"):
                unit = f"masking/r{rate:g}-{masking}"
                d = runs / f"mask-J{J:g}-r{rate:g}-{masking}"
                k_rate = int(n_selected(torch.tensor([T]), rate)[0])
                if f"{unit}/train" not in res.done:
                    r = _train(cfg, lang, d, steps=cfg.masking_steps, mask_rate=rate, masking=masking,
                               n_train=cfg.masking_n_train, progress=progress)
                    res.add({"unit": f"{unit}/train", "stage": "masking", "coupling": J, "mask_rate": rate,
                             "k": k_rate, "masking": masking, "n_train": cfg.masking_n_train,
                             "final": r.final, "history": list(r.history)})
                    log(f"{unit} trained: {r.final}")
                # every family of methods on the model of this masking rate
                evaluate_model(unit, d, lang, {"coupling": J, "mask_rate": rate, "k": k_rate,
                                                              "masking": masking}, with_samplers=True)
    return res


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(s) for s in text.split(","))


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(s) for s in text.split(","))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--out", required=True, help="result folder (results.jsonl, config.json, report)")
    p.add_argument("--runs", required=True, help="folder for the trained models (not for the repository)")
    p.add_argument("--stages", default="coupling,curve,masking")
    p.add_argument("--couplings", type=_floats)
    p.add_argument("--steps", type=int)
    p.add_argument("--n-pairs", type=int)
    p.add_argument("--n-gaps", type=int)
    p.add_argument("--chains", type=int)
    p.add_argument("--sample-epochs", type=int)
    p.add_argument("--curve-steps", type=_ints)
    p.add_argument("--masking-rates", type=_floats)
    p.add_argument("--masking-steps", type=int)
    p.add_argument("--threads", type=int, help="torch CPU threads")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-report", action="store_true")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    over = {k: v for k, v in {"couplings": args.couplings, "steps": args.steps, "n_pairs": args.n_pairs,
                              "n_gaps": args.n_gaps, "chains": args.chains, "sample_epochs": args.sample_epochs,
                              "curve_steps": args.curve_steps, "masking_rates": args.masking_rates,
                              "masking_steps": args.masking_steps}.items() if v is not None}
    try:
        cfg = GroundTruthConfig(**over)
        out = Path(args.out)
        t0 = time.time()
        run(cfg, out, Path(args.runs), stages=tuple(args.stages.split(",")), progress=not args.no_progress)
        trim_partial_line(out / "runs.jsonl")
        with (out / "runs.jsonl").open("a") as f:
            f.write(dumps({"command": "python -m mlmprob.experiments.ground_truth "
                                + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])),
                                "wall_s": round(time.time() - t0, 1), "threads": torch.get_num_threads()}) + "\n")
        if not args.no_report:
            from .ground_truth_report import write_report
            write_report(out)
    except MLMProbError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

"""Enumerable toy: TV of each tool's samples to the target it states, same parent, same expert (the tiny BERT of
toy_bert.py, loaded by both tools from one Hugging Face folder), same number of model rows (sequences through the
model).

- EvoProtGrad states ``π(x) ∝ exp(T · mutant_marginal(x))`` (one expert, temperature ``T``) over the free positions;
- mlmprob states ``p(x) ∝ exp(-E_local(x) / τ) · 1[x ∈ C]`` (``C``: only the free positions change).

Both are enumerated exactly (20^3 states); each tool runs ``--chains`` chains and keeps the second half of its
steps. The row budget is EvoProtGrad's (two forwards per chain and step); mlmprob steps until it has read as
many rows. ``tv_iid`` is the TV of as many exact iid draws (the sample-size floor). One JSON row per
(case, tool, steps, seed), appended; rows already in ``--out`` are skipped (resumable).

    PYTHONPATH=src:bench/design/.evo-pkgs python bench/design/toy_tv.py --out docs/results/design/toy.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from toy_bert import RESIDUES, make_toy_bert  # noqa: E402

CASES = {  # parent, 0-based free positions
    "all3": ("CDE", (0, 1, 2)),
    "free3of6": ("ACDEFG", (1, 2, 3)),
}


def preserved(parent: str, free) -> list[tuple[int, int]] | None:
    """EvoProtGrad's preserved regions (inclusive 0-based ranges) of the positions outside ``free``."""
    fixed = [i for i in range(len(parent)) if i not in free]
    if not fixed:
        return None
    runs, start = [], fixed[0]
    for a, b in itertools.pairwise(fixed + [None]):
        if b != a + 1:
            runs.append((start, a))
            start = b
    return runs


def all_states(parent: str, free) -> list[str]:
    out = []
    for letters in itertools.product(RESIDUES, repeat=len(free)):
        s = list(parent)
        for i, c in zip(free, letters, strict=True):
            s[i] = c
        out.append("".join(s))
    return out


def tv(samples: list[str], states: list[str], logp: torch.Tensor) -> float:
    """TV of the samples' empirical law to ``exp(logp)`` over ``states``; samples outside ``states`` (a fixed
    position changed) are mass where the target has none."""
    index = {s: i for i, s in enumerate(states)}
    counts = torch.zeros(len(states) + 1, dtype=torch.float64)
    for s, n in Counter(samples).items():
        counts[index.get(s, len(states))] += n
    p = torch.cat([logp.exp(), torch.zeros(1, dtype=torch.float64)])
    return 0.5 * float((counts / counts.sum() - p).abs().sum())


def outside(samples: list[str], states: list[str]) -> float:
    """The fraction of samples in which a position outside the free ones changed."""
    index = set(states)
    return sum(s not in index for s in samples) / len(samples)


def tv_iid(n: int, logp: torch.Tensor, reps: int = 20, seed: int = 0) -> float:
    g = torch.Generator().manual_seed(seed)
    p = logp.exp()
    out = []
    for _ in range(reps):
        draws = torch.multinomial(p, n, replacement=True, generator=g)
        counts = torch.bincount(draws, minlength=len(p)).double()
        out.append(0.5 * float((counts / n - p).abs().sum()))
    return sum(out) / reps


def entropy(logp: torch.Tensor) -> float:
    return float(-(logp.exp() * logp).sum())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="runs/design/toy_bert")
    ap.add_argument("--out", default="docs/results/design/toy.jsonl")
    ap.add_argument("--cases", nargs="+", default=list(CASES))
    ap.add_argument("--chains", type=int, default=64)
    ap.add_argument("--evo-steps", type=int, nargs="+", default=[100, 400])
    ap.add_argument("--temperature", type=float, default=1.0, help="EvoProtGrad's expert temperature T; mlmprob τ=1/T")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)

    from evo_lib import ResidueBertExpert, evo_poe, run_evo
    from transformers import BertForMaskedLM

    import mlmprob

    if not (Path(args.model) / "config.json").exists():
        make_toy_bert(args.model)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["case"], r["tool"], r["evo_steps"], r["seed"]))
    tokens = (Path(args.model) / "vocab.txt").read_text().split()
    mlm = mlmprob.load_mlm(args.model)
    for case in args.cases:
        parent, free = CASES[case]
        states = all_states(parent, free)
        expert = ResidueBertExpert(BertForMaskedLM.from_pretrained(args.model).eval(), tokens, args.temperature)
        expert.init_wildtype(" ".join(parent))
        poe = evo_poe([expert], states)
        logp_evo = poe - torch.logsumexp(poe, 0)
        from mlmprob_side import design_target

        positions = tuple(i + 1 for i in free)
        target, _ = design_target([mlm], parent, positions=positions, temperature=1.0 / args.temperature)
        E, _ = target.energies(target.encode(states))
        U = -target.total(E) * args.temperature
        logp_mlm = U - torch.logsumexp(U, 0)
        for steps in args.evo_steps:
            if (case, "evoprotgrad", steps, args.seed) in done:
                continue
            expert.counter.rows = 0
            t0 = time.perf_counter()
            hist, poe_hist = run_evo([expert], parent, args.chains, steps, preserved(parent, free), -1, args.seed)
            wall = time.perf_counter() - t0
            rows = expert.counter.rows
            # EvoProtGrad's recorded PoE of each chain's last state against that state's PoE, recomputed
            final = evo_poe([expert], hist[-1])
            mismatch = float(((final - torch.as_tensor(poe_hist[-1]).double()).abs() > 1e-3).double().mean())
            moves = sum(a != b for t in range(1, steps) for a, b in zip(hist[t - 1], hist[t], strict=True))
            kept = [s for step in hist[steps // 2 :] for s in step]
            rows_out = [
                {
                    "tool": "evoprotgrad",
                    "steps": steps,
                    "model_rows": rows,
                    "backward_passes": 2 * steps,
                    "wall_s": wall,
                    "samples": len(kept),
                    "tv": tv(kept, states, logp_evo),
                    "tv_iid": tv_iid(len(kept), logp_evo),
                    "outside_free_positions": outside(kept, states),
                    "tv_to_other_target": tv(kept, states, logp_mlm),
                    "target_entropy": entropy(logp_evo),
                    "state_changed_rate": moves / ((steps - 1) * args.chains),
                    "recorded_poe_mismatch": mismatch,
                }
            ]
            from mlmprob_side import run_mlmprob

            mh, info = run_mlmprob(
                [mlm], parent, args.chains, rows, args.seed, positions=positions, temperature=1.0 / args.temperature
            )
            kept = [s for step in mh[len(mh) // 2 :] for s in step]
            rows_out.append(
                {
                    "tool": "mlmprob",
                    "steps": info["steps"],
                    "model_rows": info["model_rows"],
                    "backward_passes": 0,
                    "wall_s": info["wall_s"],
                    "acceptance": info["acceptance"],
                    "state_changed_rate": info["acceptance_all"],
                    "samples": len(kept),
                    "tv": tv(kept, states, logp_mlm),
                    "tv_iid": tv_iid(len(kept), logp_mlm),
                    "outside_free_positions": outside(kept, states),
                    "tv_to_other_target": tv(kept, states, logp_evo),
                    "target_entropy": entropy(logp_mlm),
                }
            )
            with out.open("a") as f:
                for r in rows_out:
                    r.update(
                        case=case, evo_steps=steps, seed=args.seed, chains=args.chains, temperature=args.temperature
                    )
                    r.update(states=len(states), target_perplexity=math.exp(r["target_entropy"]))
                    f.write(json.dumps(r) + "\n")
                    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()

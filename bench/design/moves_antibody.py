"""Trastuzumab VH, CDR-H3 free, AntiBERTy + the HER2 oracle: accepted moves per 1,000 model rows of each exact move
of ``mlmprob.design`` at EvoProtGrad's row budget, three seeds, beside EvoProtGrad's stored runs
(``antibody_vh.jsonl``, written by ``antibody.py`` with the same parent, oracle, judge, constraints and budget).

Each run: ``--chains`` chains from the parent until the experts have read ``--budget`` model rows in all (a row: one
sequence through the model; EvoProtGrad's 300 steps of 2 chains read 1,202). Reported per run: steps, accepted moves
(accepted proposals that changed the chain) and residues moved per 1,000 rows per chain, the effective sample size
of the total energy per 1,000 rows (Geyer's initial positive sequence over each chain's per-step totals, summed over
chains), and on 5 snapshots of each chain's second half (as ``antibody.py``): judge P(bind), AntiBERTy PLL per
residue, diversity, mutations. One JSON row per (config, seed), appended; rows already in ``--out`` are skipped.

    OMP_NUM_THREADS=1 PYTHONPATH=src:bench/design python bench/design/moves_antibody.py \\
        --out docs/results/design/moves_antibody.jsonl
    PYTHONPATH=src:bench/design python bench/design/moves_antibody.py --report docs/results/design/moves_antibody.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

import antibody as ab  # noqa: E402

#: name -> (expert kind, DesignSpec move settings)
CONFIGS = {
    "mh": ("local", {}),
    "informed": ("local", {"informed": True}),
    "informed_delayed": ("local", {"informed": True, "delayed": True}),
    "informed3_delayed": ("local", {"informed": True, "sites": 3, "delayed": True}),
    "mm": ("mutant_marginal", {}),
    "mm_informed": ("mutant_marginal", {"informed": True}),
}


def ess(trace: list[float]) -> float:
    """Effective sample size of one chain's trace (Geyer's initial positive sequence estimator; 1 for a constant or
    a one-step trace)."""
    x = torch.tensor(trace, dtype=torch.float64)
    n = len(x)
    if n < 3 or float(x.var()) == 0.0:
        return 1.0
    x = x - x.mean()
    f = torch.fft.rfft(x, n=2 * n)
    acov = torch.fft.irfft(f * f.conj(), n=2 * n)[:n] / n
    rho = (acov / acov[0]).tolist()
    tau, t = 1.0, 1
    while t + 1 < n:
        pair = rho[t] + rho[t + 1]
        if pair <= 0:
            break
        tau += 2 * pair
        t += 2
    return n / tau


def run_one(name: str, seed: int, args, mlm, oracle_fn, judge, oracle, pll_of) -> dict:
    from mlmprob_side import design_target

    from mlmprob.designing import Expert, Oracle

    kind, moves = CONFIGS[name]
    terms = [Expert(mlm, kind=kind, name="antiberty"), Oracle(oracle_fn, weight=args.oracle_weight, name="her2")]
    cons = dict(positions=tuple(c + 1 for c in ab.COLS), forbid=ab.forbid_in_h3(), start_invalid=True)
    target, spec = design_target(terms, ab.PARENT, chains=args.chains, **cons, **moves)
    kernel = spec.kernel(target)
    g = torch.Generator().manual_seed(seed)
    t0 = time.perf_counter()
    state = kernel.init(target.parent_ids.expand(args.chains, -1).clone(), torch.tensor(1.0, dtype=torch.float64))
    history, totals = [], [[] for _ in range(args.chains)]
    accepted = moved = screened = proposed = 0
    while target.model_rows < args.budget and len(history) < args.max_steps:
        state, info = kernel.step(state, g)
        accepted += int(info.accepted.sum())
        moved += int(info.moved.sum()) if info.moved is not None else 0
        screened += int(info.screened.sum()) if info.screened is not None else 0
        proposed += int(info.changed.sum())
        history.append(target.decode(state.X))
        for c in range(args.chains):
            totals[c].append(float(state.U[c]))
    wall = time.perf_counter() - t0
    rows = target.model_rows
    half = [t[len(t) // 2 :] for t in totals]
    row = {
        "run": f"{name}@s{seed}",
        "config": name,
        "expert_kind": kind,
        "moves": moves,
        "seed": seed,
        "chains": args.chains,
        "steps": len(history),
        "model_rows": rows,
        "oracle_calls": target.oracle_calls,
        "wall_s": wall,
        "proposals_changed": proposed,
        "accepted": accepted,
        "residues_moved": moved,
        "screened": screened,
        "accepted_per_1000_rows_per_chain": 1000 * accepted / rows,
        "residues_moved_per_1000_rows_per_chain": 1000 * moved / rows,
        "ess_total_per_1000_rows": 1000 * sum(ess(t) for t in half) / rows,
        "context": args.context,
        "length": len(ab.PARENT),
        "budget": args.budget,
    }
    row.update(ab.judge_rows(ab.snapshots(history), judge, oracle, pll_of))
    return row


def report(path: Path, evo: Path | None = None) -> str:
    """The markdown table of the runs in ``path`` (means over seeds), and EvoProtGrad's stored runs of ``evo``
    (``antibody.py``'s whole-VH rows ``evo@vh-sN``: the same parent, oracle, judge and budget) beside them."""
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["config"], []).append(r)
    base = by.get("mh")
    keys = (
        "steps",
        "model_rows",
        "accepted_per_1000_rows_per_chain",
        "residues_moved_per_1000_rows_per_chain",
        "ess_total_per_1000_rows",
        "judge_p_bind",
        "oracle_p_bind",
        "pll_per_residue",
        "diversity_hamming",
        "mutations",
        "wall_s",
    )

    def mean(rs, k):
        return sum(r[k] for r in rs) / len(rs)

    head = "| config | expert energy | seeds | " + " | ".join(keys) + " | accepted / mh |"
    out = [head, "|" + "---|" * (len(keys) + 4)]
    for name, rs in by.items():
        ratio = mean(rs, keys[2]) / mean(base, keys[2]) if base and mean(base, keys[2]) else float("nan")
        cells = [f"{mean(rs, k):.3g}" if k not in ("steps", "model_rows") else f"{mean(rs, k):,.0f}" for k in keys]
        out.append(f"| {name} | {rs[0]['expert_kind']} | {len(rs)} | " + " | ".join(cells) + f" | {ratio:.1f}x |")
    if evo is not None and evo.exists():
        theirs = [json.loads(x) for x in evo.read_text().splitlines()]
        theirs = [r for r in theirs if r["run"].startswith("evo@vh-s")]
        if theirs:
            cells = []
            for k in keys:
                if k in ("accepted_per_1000_rows_per_chain", "residues_moved_per_1000_rows_per_chain"):
                    cells.append("–")
                elif k == "ess_total_per_1000_rows":
                    cells.append("–")
                else:
                    v = mean(theirs, k)
                    cells.append(f"{v:,.0f}" if k in ("steps", "model_rows") else f"{v:.3g}")
            out.append(f"| EvoProtGrad 0.2 | mutant_marginal | {len(theirs)} | " + " | ".join(cells) + " | – |")
    return "\n".join(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="docs/results/design/moves_antibody.jsonl")
    ap.add_argument("--report", help="print the markdown table of this JSONL file and stop")
    ap.add_argument("--data", default=str(ab.DATA))
    ap.add_argument("--context", choices=sorted(ab.CONTEXTS), default="vh")
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--budget", type=int, default=1202, help="model rows per run, all chains (EvoProtGrad's: 1,202)")
    ap.add_argument("--max-steps", type=int, default=2000)
    ap.add_argument("--oracle-weight", type=float, default=2.0)
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args(argv)
    if args.report:
        print(report(Path(args.report), Path(args.report).with_name("antibody_vh.jsonl")))
        return
    torch.set_num_threads(1)
    ab.set_context(args.context)
    import mlmprob

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {json.loads(x)["run"] for x in out.read_text().splitlines()} if out.exists() else set()
    half_a, half_b = ab.load_halves(Path(args.data), 0)
    oracle, judge = ab.train_oracle(half_a, 0), ab.train_oracle(half_b, 1)
    mlm = mlmprob.load_mlm("antiberty")

    def oracle_fn(seqs):
        with torch.no_grad():
            return oracle(ab.one_hot([s[ab.START : ab.START + len(ab.H3)] for s in seqs])).double()

    from mlmprob_side import design_target

    plain, _ = design_target([mlm], ab.PARENT, positions=tuple(c + 1 for c in ab.COLS))
    known: dict[str, float] = {}

    def pll_of(seqs):
        new = [s for s in seqs if s not in known]
        if new:
            E, _ = plain.energies(plain.encode(new))
            known.update(zip(new, (-E[:, 0] / len(ab.PARENT)).tolist(), strict=True))
        return torch.tensor([known[s] for s in seqs], dtype=torch.float64)

    for seed in args.seeds:
        for name in args.configs:
            if f"{name}@s{seed}" in done:
                continue
            row = run_one(name, seed, args, mlm, oracle_fn, judge, oracle, pll_of)
            with out.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps({k: row[k] for k in list(row)[:18]}), flush=True)


if __name__ == "__main__":
    main()

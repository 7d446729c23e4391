"""Trastuzumab VH with CDR-H3 free: AntiBERTy + a HER2-binding oracle, EvoProtGrad against mlmprob.design.

- Oracle: one-hot logistic regression over the 10 CDR-H3 residues of the mHER library (Mason et al. 2021), trained
  on one half of the binder / non-binder labels (sequences labelled both ways dropped); the judge is the same model
  trained on the other half. Energy term: the oracle's logit, weight ``--oracle-weight`` in both tools.
- Experts: AntiBERTy (``mlmprob.load_mlm("antiberty")``; EvoProtGrad reads a second copy through the bench's
  adapter expert, mutant-marginal score), weight 1.
- Constraints: only CDR-H3 changes (EvoProtGrad: preserved regions); mlmprob also forbids the liabilities
  N[^P][ST], NG, DG created in CDR-H3 or its junctions (trastuzumab's own CDR-H3 holds a DG, so mlmprob starts
  outside C, ``start_invalid``); EvoProtGrad has no motif constraint: its violations are counted.
- Judged on each chain's states at 5 evenly spaced steps of the second half (the last included): the judge's
  binding probability, AntiBERTy PLL per residue, mean pairwise Hamming distance of the CDR-H3s, liability
  motifs, mutations from the parent; wall time, model rows (sequences through the model), backward passes,
  oracle calls. One JSON row per run name, appended; names already in ``--out`` are skipped (resumable).

    PYTHONPATH=src:bench/design/.evo-pkgs python bench/design/antibody.py --out docs/results/design/antibody.jsonl
    # the whole VH, one chain seed (run names evo@vh-s1, mlmprob@vh-s1, ...; --keep-parent-motifs: mlmprob_kpm@...)
    PYTHONPATH=src:bench/design/.evo-pkgs python bench/design/antibody.py --out docs/results/design/antibody_vh.jsonl \
        --context vh --chains 2 --evo-steps 300 --runs evo mlmprob mlmprob_anneal mlmprob_replica --seed 1 --tag vh-s1
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import re
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from toy_bert import RESIDUES  # noqa: E402

VH_PREFIX = "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
H3 = "WGGDGFYAMD"
SUFFIX = "YWGQGTLVTVSS"
#: The context the experts read: the whole VH (``--context vh``) or, by default, the end of framework 3, CDR-H3 and
#: framework 4 (34 residues: on a shared 2-core CPU an exact MH step of E_local costs one masked forward per residue)
CONTEXTS = {"vh": VH_PREFIX, "fr3": VH_PREFIX[-12:]}
PREFIX = CONTEXTS["fr3"]
PARENT = PREFIX + H3 + SUFFIX
START = len(PREFIX)
COLS = list(range(START, START + len(H3)))


def set_context(name: str) -> None:
    global PREFIX, PARENT, START, COLS
    PREFIX = CONTEXTS[name]
    PARENT = PREFIX + H3 + SUFFIX
    START = len(PREFIX)
    COLS = list(range(START, START + len(H3)))


LIABILITIES = {"glycosylation": "N[^P][ST]", "deamidation": "NG", "isomerization": "DG"}
DATA = Path("../shared/data/antibody")


def window(seq: str) -> str:
    """CDR-H3 with two framework residues each side: where a mutation can create a motif."""
    return seq[START - 2 : START + len(H3) + 2]


def liabilities(seq: str) -> list[str]:
    return [n for n, rx in LIABILITIES.items() if re.search(rx, window(seq))]


def forbid_in_h3() -> tuple[str, ...]:
    """The liabilities as regular expressions on the whole VH that match only from CDR-H3's junction on (the
    framework after CDR-H3 holds none; CDR-H2's NG before it is the parent's and fixed)."""
    return tuple(f"^.{{{START - 2}}}.*{rx}" for rx in LIABILITIES.values())


def load_halves(data: Path, seed: int = 0):
    seqs = {}
    for name, label in (("mHER_H3_AgPos.csv", 1), ("mHER_H3_AgNeg.csv", 0)):
        with open(data / name) as f:
            for row in csv.DictReader(f):
                s = row["AASeq"]
                if len(s) == len(H3) and set(s) <= set(RESIDUES):
                    seqs.setdefault(s, set()).add(label)
    items = sorted((s, next(iter(ls))) for s, ls in seqs.items() if len(ls) == 1)
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(items), generator=g).tolist()
    half = len(items) // 2
    return [items[i] for i in perm[:half]], [items[i] for i in perm[half:]]


def one_hot(seqs: list[str]) -> torch.Tensor:
    idx = torch.tensor([[RESIDUES.index(c) for c in s] for s in seqs])
    return torch.nn.functional.one_hot(idx, len(RESIDUES)).float()


class LogReg(torch.nn.Module):
    """Logistic regression on the one-hot CDR-H3 ``[B, 10, 20]``; returns the logit ``[B]``."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(len(H3) * len(RESIDUES), 1)

    def forward(self, oh):
        return self.lin(oh.reshape(oh.shape[0], -1)).squeeze(-1)


def train_oracle(items, seed: int, epochs: int = 300) -> LogReg:
    torch.manual_seed(seed)
    x, y = one_hot([s for s, _ in items]), torch.tensor([float(v) for _, v in items])
    m = LogReg()
    opt = torch.optim.Adam(m.parameters(), lr=0.05, weight_decay=1e-4)
    for _ in range(epochs):
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(m(x), y)
        loss.backward()
        opt.step()
    return m.eval()


def auc(model: LogReg, items) -> float:
    with torch.no_grad():
        s = model(one_hot([a for a, _ in items]))
    y = torch.tensor([v for _, v in items])
    pos, neg = s[y == 1], s[y == 0]
    r = torch.cat([pos, neg]).argsort().argsort().double() + 1
    return float((r[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def snapshots(history: list[list[str]], k: int = 5) -> list[str]:
    n = len(history)
    if n == 0:
        return [PARENT]
    steps = sorted({n // 2 + round(j * (n - 1 - n // 2) / (k - 1)) for j in range(k)}) if n > 1 else [0]
    return [s for t in steps for s in history[t]]


def judge_rows(seqs, judge, oracle, pll_of) -> dict:
    h3 = [s[START : START + len(H3)] for s in seqs]
    distinct = sorted(set(seqs))
    pll = dict(zip(distinct, pll_of(distinct).tolist(), strict=True))
    with torch.no_grad():
        pj = torch.sigmoid(judge(one_hot(h3)))
        po = torch.sigmoid(oracle(one_hot(h3)))
    pairs = list(itertools.combinations(h3, 2))
    ham = [sum(a != b for a, b in zip(x, y, strict=True)) for x, y in pairs]
    lia = [liabilities(s) for s in seqs]
    return {
        "n": len(seqs),
        "distinct": len(set(h3)),
        "judge_p_bind": float(pj.mean()),
        "judge_frac_bind": float((pj > 0.5).double().mean()),
        "oracle_p_bind": float(po.mean()),
        "pll_per_residue": sum(pll[s] for s in seqs) / len(seqs),
        "diversity_hamming": sum(ham) / len(ham) if ham else 0.0,
        "mutations": sum(sum(a != b for a, b in zip(x, H3, strict=True)) for x in h3) / len(h3),
        "frac_with_liability": sum(bool(v) for v in lia) / len(lia),
        "liabilities": {n: sum(n in v for v in lia) for n in LIABILITIES},
        "examples": h3[-4:],
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="docs/results/design/antibody.jsonl")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--context", choices=sorted(CONTEXTS), default="fr3")
    ap.add_argument("--evo-steps", type=int, default=100, help="EvoProtGrad's steps; mlmprob matches its model rows")
    ap.add_argument("--long-evo-steps", type=int, default=400)
    ap.add_argument("--oracle-weight", type=float, default=2.0)
    ap.add_argument("--runs", nargs="+", default=["evo", "mlmprob", "evo_long", "mlmprob_long"])
    ap.add_argument("--seed", type=int, default=0, help="the chains' seed (EvoProtGrad's random_seed, mlmprob's)")
    ap.add_argument("--split-seed", type=int, default=0, help="the oracle / judge halves and their training")
    ap.add_argument("--tag", default="", help="run names get '@TAG' (one name per seed and context: resumable)")
    ap.add_argument(
        "--keep-parent-motifs",
        action="store_true",
        help="mlmprob forbids only new liabilities (the parent's DG tolerated where it is; runs named *_kpm)",
    )
    ap.add_argument("--anneal", type=float, nargs=2, default=(3.0, 0.5), help="mlmprob_anneal's start and end")
    ap.add_argument("--ladder", type=float, nargs="+", default=(1.0, 2.0), help="mlmprob_replica's temperatures")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    set_context(args.context)

    from evo_lib import ResidueBertExpert, oracle_expert, run_evo
    from mlmprob_side import design_target, run_mlmprob

    import mlmprob
    from mlmprob.designing import Expert, Oracle

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {json.loads(x)["run"] for x in out.read_text().splitlines()} if out.exists() else set()
    half_a, half_b = load_halves(Path(args.data), args.split_seed)
    oracle, judge = train_oracle(half_a, args.split_seed), train_oracle(half_b, args.split_seed + 1)
    meta = {"oracle_auc_on_judge_half": auc(oracle, half_b), "judge_auc_on_oracle_half": auc(judge, half_a)}
    meta.update(half_sizes=[len(half_a), len(half_b)])
    print(json.dumps(meta), flush=True)
    mlm = mlmprob.load_mlm("antiberty")
    for p in oracle.parameters():
        p.requires_grad_(False)

    def oracle_fn(seqs):
        with torch.no_grad():
            return oracle(one_hot([s[START : START + len(H3)] for s in seqs])).double()

    plain, _ = design_target([mlm], PARENT, positions=tuple(c + 1 for c in COLS))

    known: dict[str, float] = {}

    def pll_of(seqs):
        new = [s for s in seqs if s not in known]
        if new:
            E, _ = plain.energies(plain.encode(new))
            known.update(zip(new, (-E[:, 0] / len(PARENT)).tolist(), strict=True))
        return torch.tensor([known[s] for s in seqs], dtype=torch.float64)

    w = args.oracle_weight
    terms = [Expert(mlm, name="antiberty"), Oracle(oracle_fn, weight=w, name="her2")]
    cons = dict(positions=tuple(c + 1 for c in COLS), forbid=forbid_in_h3(), start_invalid=True)
    if args.keep_parent_motifs:  # plain motifs: an anchored one would start at residue 1 in every sequence
        cons = dict(positions=cons["positions"], forbid=tuple(LIABILITIES.values()), keep_parent_motifs=True)
    rows_of = {}
    if out.exists():
        rows_of = {json.loads(x)["run"]: json.loads(x) for x in out.read_text().splitlines()}
    fixed = [(0, START - 1), (START + len(H3), len(PARENT) - 1)]

    def named(run: str, kpm: bool = False) -> str:
        run = f"{run}_kpm" if kpm and not run.startswith("evo") else run
        return f"{run}@{args.tag}" if args.tag else run

    for run in args.runs:
        if named(run, args.keep_parent_motifs) in done:
            continue
        if run.startswith("evo"):
            from transformers import BertForMaskedLM

            copy = mlmprob.load_mlm("antiberty").wrapped  # a second copy: EvoProtGrad swaps its embedding layer
            hf = getattr(copy, "inner", copy)
            bert: BertForMaskedLM = hf.model
            tokens = hf.tokenizer.tokens
            lm = ResidueBertExpert(bert, tokens, 1.0)
            orc = oracle_expert(oracle, COLS, w)
            steps = args.evo_steps if run == "evo" else args.long_evo_steps
            t0 = time.perf_counter()
            hist, _ = run_evo([lm, orc], PARENT, args.chains, steps, fixed, -1, args.seed)
            wall = time.perf_counter() - t0
            cost = {"steps": steps, "model_rows": lm.counter.rows, "backward_passes": 2 * steps + 2}
            cost.update(oracle_calls=orc.model.rows, wall_s=wall)
        elif run in ("mlmprob_anneal", "mlmprob_replica"):
            hist, cost = run_method(run, rows_of[named("mlmprob")]["steps"], args, terms, cons)
        else:
            budget = rows_of[named("evo" if run == "mlmprob" else "evo_long")]["model_rows"]
            hist, info = run_mlmprob(terms, PARENT, args.chains, budget, args.seed, **cons)
            cost = {k: info[k] for k in ("steps", "model_rows", "oracle_calls", "wall_s", "acceptance")}
            cost["backward_passes"] = 0
        row = {
            "run": named(run, args.keep_parent_motifs),
            "tool": "evoprotgrad" if run.startswith("evo") else "mlmprob",
            "chains": args.chains,
        }
        row.update(cost)
        row.update(judge_rows(snapshots(hist), judge, oracle, pll_of))
        row.update(
            meta, oracle_weight=w, seed=args.seed, split_seed=args.split_seed, context=args.context, length=len(PARENT)
        )
        row.update(keep_parent_motifs=args.keep_parent_motifs, forbid=list(cons["forbid"]))
        rows_of[named(run, args.keep_parent_motifs)] = row
        with out.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
    if named("parent") not in done:
        row = {"run": named("parent"), "tool": "parent", **judge_rows([PARENT, PARENT], judge, oracle, pll_of), **meta}
        row.update(context=args.context, length=len(PARENT))
        with out.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)


def run_method(run: str, mh_steps: int, args, terms, cons):
    """mlmprob's annealing or replica exchange at the MH run's steps (replica: split over its rungs, so the model
    rows stay about the same), judged on the target temperature's chains."""
    from mlmprob_side import run_mlmprob_method

    if run == "mlmprob_anneal":
        method = dict(method="anneal", anneal_start=args.anneal[0], anneal_end=args.anneal[1])
        steps = mh_steps
    else:
        method = dict(method="replica", temperatures=tuple(args.ladder))
        steps = max(2, round(mh_steps / len(args.ladder)))
    hist, info = run_mlmprob_method(terms, PARENT, args.chains, steps, args.seed, **method, **cons)
    cost = {k: info[k] for k in ("steps", "model_rows", "oracle_calls", "wall_s", "acceptance", "rungs")}
    return hist, {**cost, "backward_passes": 0, "method": method}


if __name__ == "__main__":
    main()

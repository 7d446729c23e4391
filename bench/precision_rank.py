"""Does a precision change the ranking? AntiBERTy in float32, int8, bfloat16 and float16 (issue 21 §1).

    PYTHONPATH=src:bench OMP_NUM_THREADS=1 python bench/precision_rank.py --chains 48 --bf16-every 2 --fp16-every 4 \
        --variants 1000 --raw docs/results/precision/raw_rank --out docs/results/precision/ranking.md

Two rankings, each precision against float32:

- ``pll``: the exact PLL (one masked copy per residue) of Thera-SAbDab heavy chains (the first
  ``--chains`` of ``onepass_data.antibody_sets``: 80-140 aa, deduplicated, not in GDPa1 / Jain-137).
  float32 and int8 score every chain; bfloat16 every ``--bf16-every``-th chain and float16 (the slowest
  on an AVX2-only CPU) every ``--fp16-every``-th (chains 0, k, 2k, ...), compared with float32 on those.
  The precisions of a chain run back to back, so the per-chain times are interleaved.
- ``mm``: ``masked_marginals`` of the first ``--variants`` CDR-H3 variants of the trastuzumab library
  (``variants_data_common.load_library``, seed 0: binders and non-binders alternate, so the prefix is
  balanced), against the trastuzumab VH; the rows (one per CDR-H3 position) are shared by the variants.

Raw results are appended to ``--raw`` (``pll.jsonl``, ``mm.jsonl``) unit by unit; a rerun skips the
units already there (resumable), and ``--report-only`` rebuilds the report from them.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

import torch

# the experiments live at the repository's top level (beside bench/), outside the installed package
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DTYPES = ("float32", "int8", "bfloat16", "float16")


def plan(n_chains: int, every: dict[str, int]) -> list[tuple[int, str]]:
    """The ``(chain, dtype)`` units in run order: every chain's precisions back to back; a precision
    in ``every`` runs on the chains ``0, k, 2k, ...`` only (``k = 0``: on none).

    >>> plan(3, {"bfloat16": 1, "float16": 2})
    [(0, 'float32'), (0, 'int8'), (0, 'bfloat16'), (0, 'float16'), (1, 'float32'), (1, 'int8'), (1, 'bfloat16'), (2, 'float32'), (2, 'int8'), (2, 'bfloat16'), (2, 'float16')]
    >>> plan(2, {"bfloat16": 0, "float16": 0})
    [(0, 'float32'), (0, 'int8'), (1, 'float32'), (1, 'int8')]
    """
    return [(i, dt) for i in range(n_chains) for dt in DTYPES if every.get(dt, 1) and i % every.get(dt, 1) == 0]


def read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a kill: the unit runs again
            pass
    return out


def append_jsonl(path: Path, rec: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(rec) + "\n")


def _spearman(a, b) -> float:
    from mlmprob.metrics.ranking import spearman

    return float(spearman(torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)))


def flipped(a, b) -> tuple[int, int]:
    """Pairs ``i < j`` ordered differently by ``a`` than by the reference ``b`` (a tie on one side only
    counts), and the pairs ``b`` does not tie.

    >>> flipped([1, 2, 3, 3], [1, 3, 2, 4])
    (2, 6)
    """
    a, b = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    sa, sb = torch.sign(a[:, None] - a[None]), torch.sign(b[:, None] - b[None])
    upper = torch.ones_like(sa, dtype=torch.bool).triu(1)
    return int(((sa != sb) & upper).sum()), int(((sb != 0) & upper).sum())


def pll_rows(recs: list[dict]) -> list[str]:
    """Markdown rows: each precision against float32 on the chains both scored."""
    by = {(r["chain"], r["dtype"]): r for r in recs}
    rows = []
    for dt in DTYPES:
        chains = sorted(i for (i, d) in by if d == dt and (i, "float32") in by)
        if not chains:
            continue
        ref = [by[(i, "float32")] for i in chains]
        cur = [by[(i, dt)] for i in chains]
        dp = [abs(c["pll"] - r["pll"]) for c, r in zip(cur, ref)]
        dt_tok = [abs(a - b) for c, r in zip(cur, ref) for a, b in zip(c["token_lp"], r["token_lp"])]
        per_res = [d / len(r["token_lp"]) for d, r in zip(dp, ref)]
        t, t32 = statistics.median(c["seconds"] for c in cur), statistics.median(r["seconds"] for r in ref)
        a, b = [c["pll"] for c in cur], [r["pll"] for r in ref]
        rho = _spearman(a, b) if len(chains) > 2 else float("nan")
        nf, npairs = flipped(a, b)
        rows.append(
            f"| {dt} | {len(chains)} | {rho:.4f} | {nf} / {npairs} | {statistics.mean(dp):.3f} | {max(dp):.3f} | "
            f"{statistics.mean(per_res):.4f} | {statistics.mean(dt_tok):.4f} | {max(dt_tok):.3f} | "
            f"{t:.1f} | {t32 / t:.2f} |"
        )
    return rows


def mm_rows(recs: list[dict], labels: list[int]) -> list[str]:
    """Markdown rows: each precision's masked marginals against float32's, and its binder AUROC."""
    from mlmprob.metrics.ranking import auroc

    by = {r["dtype"]: r for r in recs}
    if "float32" not in by:
        return []
    ref = by["float32"]["scores"]
    rows = []
    for dt in DTYPES:
        if dt not in by:
            continue
        s = by[dt]["scores"]
        n = min(len(s), len(ref))
        d = [abs(a - b) for a, b in zip(s[:n], ref[:n])]
        au = float(auroc(torch.tensor(s[:n], dtype=torch.float64), torch.tensor(labels[:n], dtype=torch.float64)))
        nf, npairs = flipped(s[:n], ref[:n])
        rows.append(
            f"| {dt} | {n} | {_spearman(s[:n], ref[:n]):.4f} | {nf} / {npairs} | {statistics.mean(d):.4f} | {max(d):.4f} | "
            f"{au:.4f} | {by[dt]['seconds']:.1f} |"
        )
    return rows


def report(pll_recs: list[dict], mm_recs: list[dict], labels: list[int], *, command: str, machine: str) -> str:
    lines = [
        "# Precisions against float32: do the rankings change? (AntiBERTy, real weights)",
        "",
        f"Command: `{command}`",
        "",
        machine,
        "",
        "## Exact PLL of Thera-SAbDab heavy chains",
        "",
        "Each precision against float32 on the chains both scored (bfloat16 / float16: every k-th chain, "
        "see the command). Pairs ordered differently: chain pairs whose PLL order differs from float32's (of the "
        "pairs float32 does not tie). |d| in nats; per residue = |d PLL| / scored residues. Time: median seconds per "
        "chain (exact PLL, ~120 masked copies), the precisions of a chain run back to back.",
        "",
        "| precision | chains | Spearman PLL vs float32 | pairs ordered differently | mean abs d PLL | max abs d PLL | mean abs d PLL / residue | "
        "mean abs d per token | max abs d per token | s / chain | speed vs float32 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += pll_rows(pll_recs)
    lines += [
        "",
        "## masked_marginals of trastuzumab CDR-H3 variants",
        "",
        "Variant score = sum over mutated sites of log q(mt) - log q(wt) with the site masked (ProteinGym's "
        "masked marginals; the rows are the 10 CDR-H3 positions, shared by all variants). AUROC: binders (1) "
        "against non-binders (0) of the library, for reference. Time: the whole call, seconds.",
        "",
        "| precision | variants | Spearman vs float32 | pairs ordered differently | mean abs d score | max abs d score | AUROC binder | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += mm_rows(mm_recs, labels)
    return "\n".join(lines) + "\n"


def _run_mm(mlms, raw: Path, n: int) -> list[int]:
    import mlmprob
    from experiments.variants_data_common import load_library
    from experiments.variants_data_runner import Encoder
    from mlmprob.data import shared_data_dir

    lib = load_library(shared_data_dir(), 0)
    cdrs, labels = lib.cdrs[:n], lib.labels[:n]
    done = {r["dtype"] for r in read_jsonl(raw / "mm.jsonl") if len(r["scores"]) == len(cdrs)}
    for dt, mlm in mlms.items():
        if dt in done:
            continue
        enc = Encoder(mlm)
        t0 = time.perf_counter()
        s = mlmprob.score_variants(mlm, enc.wt, [enc.variant(c) for c in cdrs], methods=["masked_marginals"])
        append_jsonl(
            raw / "mm.jsonl",
            {"dtype": dt, "scores": s["masked_marginals"].tolist(), "seconds": round(time.perf_counter() - t0, 2)},
        )
        print(f"mm {dt}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return labels


def _run_pll(mlms, raw: Path, n_chains: int, every: dict[str, int]) -> None:
    from onepass_data import antibody_sets

    import mlmprob

    seqs = antibody_sets("H")["calibration"][:n_chains]
    done = {(r["chain"], r["dtype"]) for r in read_jsonl(raw / "pll.jsonl")}
    for i, dt in plan(len(seqs), every):
        if (i, dt) in done:
            continue
        mlm = mlms[dt]
        ids = mlm.encode([seqs[i]]).input_ids
        t0 = time.perf_counter()
        ts = mlmprob.token_scores(mlm, ids)
        sec = time.perf_counter() - t0
        lp = ts.log_prob[0][ts.positions[0]].tolist()
        append_jsonl(
            raw / "pll.jsonl",
            {
                "chain": i,
                "dtype": dt,
                "seq": seqs[i],
                "pll": float(ts.pll[0]),
                "token_lp": lp,
                "seconds": round(sec, 2),
            },
        )
        print(f"chain {i} {dt}: {sec:.1f} s", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="antiberty")
    ap.add_argument("--chains", type=int, default=48)
    ap.add_argument("--bf16-every", type=int, default=2, help="bfloat16 on every k-th chain only")
    ap.add_argument("--fp16-every", type=int, default=4, help="float16 on every k-th chain only (0: never)")
    ap.add_argument(
        "--forward",
        choices=("fused", "transformers"),
        default="fused",
        help="mlmprob's fused forward (the default) or transformers' own (load_mlm(fused=False))",
    )
    ap.add_argument("--variants", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--raw", required=True, help="folder of pll.jsonl / mm.jsonl (appended, resumable)")
    ap.add_argument("--out", help="the report (markdown)")
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args(argv)
    raw = Path(a.raw)
    torch.set_num_threads(a.threads)
    load0 = os.getloadavg()
    from experiments.variants_data_common import load_library
    from mlmprob.data import shared_data_dir

    labels = load_library(shared_data_dir(), 0).labels[: a.variants]
    if not a.report_only:
        import mlmprob

        mlms = {dt: mlmprob.load_mlm(a.model, device="cpu", dtype=dt, fused=a.forward == "fused") for dt in DTYPES}
        raw.mkdir(parents=True, exist_ok=True)
        (raw / "command.txt").write_text(
            shlex.join(["python", "bench/precision_rank.py"] + (argv if argv is not None else sys.argv[1:])) + "\n"
        )
        _run_mm(mlms, raw, a.variants)
        _run_pll(mlms, raw, a.chains, {"bfloat16": a.bf16_every, "float16": a.fp16_every})
    cmd = shlex.join(["python", "bench/precision_rank.py"] + (argv if argv is not None else sys.argv[1:]))
    if a.report_only and (raw / "command.txt").is_file():  # the command that made the raw results
        cmd = (raw / "command.txt").read_text().strip()
    from cpu_info import describe

    machine = (
        f"Machine: {describe()}; {a.threads} thread(s), load average {load0[0]:.1f} when this report was "
        "built; a shared machine, so times are medians and ratios, not peak speeds."
    )
    text = report(read_jsonl(raw / "pll.jsonl"), read_jsonl(raw / "mm.jsonl"), labels, command=cmd, machine=machine)
    from cpu_info import emit

    return emit(text, a.out)


if __name__ == "__main__":
    raise SystemExit(main())

"""Exact PLL as a share of each precision's matmul peak (issue 21): AntiBERTy and ESM-2 35M, one antibody chain.

    PYTHONPATH=src:bench python bench/peak_share.py --threads 2,1 --rounds 3 --out docs/results/precision/peak_share.md

AntiBERTy (real weights) and a random-weight ESM-2 35M (12 layers x 480, ``bench_cpu.save_random_esm``) score
the exact PLL (one masked copy per residue, ``mlmprob.token_scores``) of one GDPa1 heavy chain in float32,
bfloat16 and int8 (``load_mlm(..., dtype=)``). Per thread count, ``--rounds`` rounds run every (model,
precision) once, in alternating order, and then time each precision's matmul peak: the best of
``--peak-reps`` square ``n x n`` products (float32 / bfloat16: ``torch.mm``; int8: the ``Int8Linear`` kernel
mlmprob's int8 runs, activations quantized per call). Reported figures are medians over the rounds.

Model FLOPs of the chain: ``scale_lib.copy_flops`` per masked copy (encoder linears, attention's two matmuls,
LM head at the masked position) times the copies. Share = those FLOPs per second / the peak; the share per
CPU-second divides the process's CPU seconds instead (steadier when other jobs share the cores). The
"FFN-shaped GEMM" column times the model's own largest product ([2048, H] x [H, 4H],
``precision_all.matmul_peak``): how close a GEMM of the model's shape comes to the square one.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_lib as lib  # noqa: E402
from cpu_info import describe  # noqa: E402
from precision_all import matmul_peak as ffn_peak  # noqa: E402
from profile_pll import group_shares, op_times  # noqa: E402

import mlmprob  # noqa: E402
from mlmprob.models.precision import Int8Linear  # noqa: E402

GOAL = 0.7
DTYPES = ("float32", "bfloat16", "int8")


def gemm_peak(dtype: str, n: int, reps: int) -> tuple[float, float]:
    """Best FLOP/s of an ``n x n`` by ``n x n`` product in ``dtype`` (wall, per CPU-second); int8 through
    :class:`Int8Linear`, the path of ``load_mlm(..., dtype="int8")``."""
    if dtype != "int8":
        return lib.matmul_peak("cpu", getattr(torch, dtype), n, reps)
    q = Int8Linear.from_linear(torch.nn.Linear(n, n, bias=False))
    x = torch.randn(n, n)
    with torch.inference_mode():
        return lib.best_rate(lambda: q(x), 2.0 * n**3, reps)


def _timed(fn) -> tuple[float, float, object]:
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t, time.process_time() - c, out


def flops_run(counts: dict, length: int, forward: str, *, attention: bool = True) -> int:
    """FLOPs one masked copy really runs: the model FLOPs, less, on the fused forward, the last layer's
    query, output and feed-forward products at the ``length - 1`` unread positions and their attention.
    ``attention=False``: the linear layers' FLOPs only.

    >>> c = {"p_enc": 2 * 12 * 8 * 8, "p_head": 144, "hidden": 8, "layers": 2}
    >>> flops_run(c, 5, "transformers") - flops_run(c, 5, "fused")
    5760
    >>> flops_run(c, 5, "transformers", attention=False) - flops_run(c, 5, "fused", attention=False)
    5120
    """
    h, layers = counts["hidden"], counts["layers"]
    full = lib.copy_flops(counts["p_enc"], counts["p_head"], h if attention else 0, layers if attention else 0, length)
    if forward != "fused":
        return full
    per_layer = counts["p_enc"] // layers
    return full - 2 * (per_layer - 2 * h * h) * (length - 1) - (4 * h * length * (length - 1) if attention else 0)


def run_section(
    models: dict[str, str],
    seq: str,
    dtypes,
    rounds: int,
    threads: int,
    peak_n: int,
    peak_reps: int,
    forwards=("fused",),
) -> list[dict]:
    """One row per (model, precision, forward): median seconds (wall, CPU) of the exact PLL of ``seq``, FLOPs,
    and the medians of the peaks timed in the same rounds. ``models``: label -> ``load_mlm`` name or folder;
    ``forwards``: ``fused`` (mlmprob's, the default) and/or ``transformers`` (``fused=False``)."""
    torch.set_num_threads(threads)
    mlms = {
        (m, dt, fw): mlmprob.load_mlm(src, device="cpu", dtype=dt, fused=fw == "fused")
        for m, src in models.items()
        for dt in dtypes
        for fw in forwards
    }
    first = (dtypes[0], forwards[0])
    ids = {m: mlms[(m, *first)].encode([seq]).input_ids for m in models}
    hidden = {m: int(mlms[(m, *first)].model.config.hidden_size) for m in models}
    for u, mlm in mlms.items():  # warm-up: kernels, packed weights
        mlmprob.token_scores(mlm, ids[u[0]], [1, 2])
    units, times, scores = list(mlms), {u: [] for u in mlms}, {}
    peaks = {dt: [] for dt in dtypes}
    ffn = {u: [] for u in mlms}
    for r in range(rounds):
        for u in units if r % 2 == 0 else units[::-1]:
            wall, cpu, scores[u] = _timed(lambda: mlmprob.token_scores(mlms[u], ids[u[0]]))
            times[u].append((wall, cpu))
            print(f"{threads} thr round {r} {' '.join(u)}: {wall:.1f} s", file=sys.stderr, flush=True)
        for dt in dtypes if r % 2 == 0 else dtypes[::-1]:
            peaks[dt].append(gemm_peak(dt, peak_n, peak_reps))
        for u in units:
            ffn[u].append(ffn_peak(u[1], hidden[u[0]]) * 1e9)
    rows = []
    for (m, dt, fw), ts in times.items():
        counts = lib.model_flop_counts(mlms[(m, *first)].model)
        copies, length = int(scores[m, dt, fw].positions.sum()), int(ids[m].shape[1])
        ref = scores[(m, *first)].pll
        rows.append(
            {
                "model": m,
                "dtype": dt,
                "forward": fw,
                "threads": threads,
                "copies": copies,
                "length": length,
                "flops": copies
                * lib.copy_flops(counts["p_enc"], counts["p_head"], counts["hidden"], counts["layers"], length),
                "flops_run": copies * flops_run(counts, length, fw),
                "linear_flops": copies * flops_run(counts, length, fw, attention=False),
                "walls": [w for w, _ in ts],
                "wall": statistics.median(w for w, _ in ts),
                "cpu": statistics.median(c for _, c in ts),
                "peak": statistics.median(p for p, _ in peaks[dt]),
                "peak_cpu": statistics.median(p for _, p in peaks[dt]),
                "ffn": statistics.median(ffn[m, dt, fw]),
                "d_pll": float((scores[m, dt, fw].pll - ref).abs().max()),
            }
        )
    return rows


def share(row: dict) -> tuple[float, float]:
    """(share of the peak per wall second, per CPU-second) of one row."""
    return row["flops"] / row["wall"] / row["peak"], row["flops"] / row["cpu"] / row["peak_cpu"]


def profile_row(models: dict[str, str], seq: str, row: dict) -> dict[str, float]:
    """Operator self-CPU times (us) of one exact PLL of ``seq`` by ``row``'s model and precision."""
    torch.set_num_threads(row["threads"])
    mlm = mlmprob.load_mlm(models[row["model"]], device="cpu", dtype=row["dtype"], fused=row["forward"] == "fused")
    ids = mlm.encode([seq]).input_ids
    mlmprob.token_scores(mlm, ids, [1, 2])
    return op_times(lambda: mlmprob.token_scores(mlm, ids))


def _row_line(r: dict) -> str:
    s, sc = share(r)
    g = r["flops"] / r["wall"]
    return (
        f"| {r['model']} | {r['dtype']} | {r['forward']} | {r['threads']} | {r['copies']} x {r['length']} | "
        f"{r['flops_run'] / r['flops']:.0%} | {r['wall']:.2f} "
        f"({', '.join(f'{w:.1f}' for w in r['walls'])}) | {r['copies'] / r['wall']:.1f} | {g / 1e9:.1f} | "
        f"{r['peak'] / 1e9:.1f} | **{s:.0%}** | {sc:.0%} | {r['ffn'] / 1e9:.1f} ({r['ffn'] / r['peak']:.0%}) | "
        f"{r['d_pll']:.3f} | {'met' if s >= GOAL else 'missed'} |"
    )


def _profile_section(prof: list[tuple[dict, dict]]) -> list[str]:
    """Operator-group shares of each profiled row, the linear layers' own rate, and the top operators of the
    first (the row furthest from the goal)."""
    groups = list(group_shares({}))
    L = [
        "",
        "## Where the time goes",
        "",
        "One exact PLL of the chain per row under `torch.profiler` (after a warm-up; profiled rows: "
        "`--profile`); shares of the operators' self time (groups of `bench/profile_pll.py`). Linear layers' "
        "own rate: the FLOPs the encoder linears and the LM head run (the fused forward skips part of the last "
        "layer) over the self time of the linear-layer "
        "operators, and its share of the row's peak: how fast the matrix products run when they run.",
        "",
        "| model | precision | forward | threads | " + " | ".join(groups) + " | linear layers' own GFLOP/s (of peak) |",
        "|---|---|---|---:|" + "---:|" * (len(groups) + 1),
    ]
    for r, times in prof:
        sh = group_shares(times)
        lin_s = sh[groups[0]] * sum(times.values()) / 1e6
        rate = r["linear_flops"] / lin_s if lin_s else float("nan")
        L.append(
            f"| {r['model']} | {r['dtype']} | {r['forward']} | {r['threads']} | "
            + " | ".join(f"{sh[g]:.0%}" for g in groups)
            + f" | {rate / 1e9:.0f} ({rate / r['peak']:.0%}) |"
        )
    r, times = prof[0]
    total = sum(times.values()) or 1.0
    L += [
        "",
        f"Largest operators of {r['model']} {r['dtype']} {r['forward']}, {r['threads']} thread(s) (furthest from the goal, "
        f"{share(r)[0]:.0%} of its peak):",
        "",
        "| operator | self CPU ms | share |",
        "|---|---:|---:|",
    ]
    L += [f"| `{k}` | {t / 1e3:.0f} | {t / total:.0%} |" for k, t in sorted(times.items(), key=lambda kv: -kv[1])[:10]]
    return L


def render(meta: dict, rows: list[dict], prof: list[tuple[dict, dict]] | None) -> str:
    """The markdown report: ``meta`` (command, machine, dates, loads, chain), the rows of :func:`run_section`,
    and optionally ``[(row, operator times), ...]`` of the profiled rows, the one furthest from the goal first."""
    L = [
        "# Exact PLL as a share of each precision's matmul peak (issue 21)",
        "",
        f"Command: `{meta['command']}`",
        "",
        f"- machine: {meta['machine']}",
        f"- {meta['date']}; load: `{meta['uptime_start']}` at the start, `{meta.get('uptime_end', '?')}` at the end "
        "(a shared 2-core machine: other agents' jobs ran alongside, so figures are medians of interleaved rounds)",
        f"- chain: {meta['chain']}",
        "",
        "Share = model FLOPs / median seconds / median peak of the same precision, both timed in the same "
        "rounds; goal: at least 70%. Model FLOPs per masked copy: `" + lib.FLOP_FORMULA + "` (int8: the "
        "attention matmuls and the LM head stay float32 but count against the int8 peak). Peak: best square "
        f"{meta['peak_n']} x {meta['peak_n']} GEMM of that precision (int8: `Int8Linear`). FFN-shaped GEMM: "
        "[2048, H] x [H, 4H] in that precision, and its share of the square peak. |d PLL|: against float32 "
        "of the same model, nats. Forward: `fused` (mlmprob's, `mlmprob.models.fused`, the default) or "
        "`transformers` (`load_mlm(..., fused=False)`). FLOPs run: the share of the model FLOPs the forward "
        "really computes (the fused forward runs the last layer's query, output and feed-forward products only "
        "at the masked position); the share of peak counts the model FLOPs of exact PLL either way.",
        "",
        "| model | precision | forward | threads | copies x tokens | FLOPs run | s (median; rounds) | copies/s | "
        "GFLOP/s | peak GFLOP/s | share of peak | share per CPU-second | FFN-shaped GEMM GFLOP/s | abs d PLL | goal 70% |",
        "|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    L += [_row_line(r) for r in rows]
    met = [f"{r['model']} {r['dtype']} {r['forward']} at {r['threads']} thread(s)" for r in rows if share(r)[0] >= GOAL]
    L += [
        "",
        f"**Goal (>= 70% of the precision's matmul peak): met by {len(met)} of {len(rows)} rows**"
        + (f" ({', '.join(met)})." if met else "."),
    ]
    if prof:
        L += _profile_section(prof)
    return "\n".join(L) + "\n"


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average " + lib.loadavg()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="2,1", help="comma-separated thread counts, one section each")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chain", type=int, default=0, help="index of the GDPa1 heavy chain")
    ap.add_argument("--forwards", default="fused", help="comma-separated: fused (mlmprob's), transformers")
    ap.add_argument("--peak-n", type=int, default=2048)
    ap.add_argument("--peak-reps", type=int, default=3)
    ap.add_argument("--weights", default="/tmp/mlmprob_bench_cpu", help="where the random ESM-2 35M is saved")
    ap.add_argument(
        "--profile",
        choices=("worst", "all", "none"),
        default="worst",
        help="rows of the first thread count to profile: the one furthest from the goal, all, none",
    )
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    from bench_cpu import save_random_esm
    from onepass_data import antibody_sets

    seq = antibody_sets("H")["gdpa1"][a.chain]
    models = {"antiberty": "antiberty", "esm2-35M (random weights)": str(save_random_esm("esm2-35M", Path(a.weights)))}
    meta = {
        "command": shlex.join(["python", "bench/peak_share.py"] + list(sys.argv[1:] if argv is None else argv)),
        "machine": describe(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "uptime_start": _uptime(),
        "chain": f"GDPa1 VH #{a.chain}, {len(seq)} residues",
        "peak_n": a.peak_n,
    }
    rows, prof = [], None
    for i, t in enumerate(int(x) for x in a.threads.split(",")):
        rows += run_section(models, seq, list(DTYPES), a.rounds, t, a.peak_n, a.peak_reps, a.forwards.split(","))
        if i == 0 and a.profile != "none":
            order = sorted(rows, key=lambda r: share(r)[0])
            prof = [(r, profile_row(models, seq, r)) for r in (order if a.profile == "all" else order[:1])]
        meta["uptime_end"] = _uptime()
        text = render(meta, rows, prof)
        if a.out:  # after every section, so that a run cut short keeps what it measured
            Path(a.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

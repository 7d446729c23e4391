"""Pure helpers of ``bench_scale.py``: model FLOPs, the matmul peak, machine facts, goals and the report.

Kept apart from the driver so that ``tests/bench/test_bench_scale.py`` can check them in a second without
running the benchmark.

Model FLOPs of one masked copy of an ``L``-token sequence (what ``mlmprob.token_scores`` runs for it):

    2 * P_enc * L  +  4 * L**2 * hidden * layers  +  2 * P_head

- ``P_enc``: weights of the encoder's linear layers (Q, K, V, attention output, FFN in and out of every
  layer; embeddings, layer norms, biases, softmax, GELU and rotary are not matmuls and not counted);
- ``4 L^2 hidden`` per layer: the two attention matmuls ``Q K^T`` and ``softmax(.) V``;
- ``P_head``: weights of the LM head's linear layers (transform dense + decoder), applied at the one
  masked position only, as mlmprob does (``logits_at``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

FLOP_FORMULA = "2 x P_enc x L + 4 x L^2 x hidden x layers + 2 x P_head"
GOAL_CPU_MFU = 0.5
GOAL_GPU_MFU = 0.5
GOAL_GPU_VS_MINICONS = 3.0
GOAL_SCALING = 0.8
GOAL_STREAM_RATIO = 2.0


# ----------------------------------------------------------------------------------------------
# FLOPs
# ----------------------------------------------------------------------------------------------
def linear_weights(module) -> int:
    """Number of weights in the ``torch.nn.Linear`` layers under ``module`` (biases excluded)."""
    import torch

    return sum(m.weight.numel() for m in module.modules() if isinstance(m, torch.nn.Linear))


def copy_flops(p_enc: int, p_head: int, hidden: int, layers: int, length: int) -> int:
    """Model FLOPs of one masked copy of ``length`` tokens (see the module docstring).

    >>> copy_flops(p_enc=1024, p_head=144, hidden=8, layers=2, length=5)
    12128
    """
    return 2 * p_enc * length + 4 * length * length * hidden * layers + 2 * p_head


def model_flop_counts(model) -> dict:
    """``p_enc``, ``p_head``, ``hidden``, ``layers`` of a Hugging Face ``*ForMaskedLM`` (BERT, ESM, RoBERTa)."""
    base = getattr(model, model.base_model_prefix)
    head = next(getattr(model, n) for n in ("cls", "lm_head") if hasattr(model, n))
    cfg = model.config
    return {
        "p_enc": linear_weights(base.encoder),
        "p_head": linear_weights(head),
        "hidden": int(cfg.hidden_size),
        "layers": int(cfg.num_hidden_layers),
        "params": sum(p.numel() for p in model.parameters()),
    }


# ----------------------------------------------------------------------------------------------
# matmul peak
# ----------------------------------------------------------------------------------------------
def best_rate(fn, flops: float, reps: int, sync=lambda: None) -> tuple[float, float]:
    """Best FLOP/s of ``reps`` calls of ``fn`` (``flops`` each, after two warm-up calls): per wall second, and
    per CPU-second of this process (all its threads; meaningful on the CPU only)."""
    for _ in range(2):
        fn()
    sync()
    wall = cpu = float("inf")
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        fn()
        sync()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return flops / wall, flops / max(cpu, 1e-9)


def matmul_peak(device, dtype, n: int, reps: int) -> tuple[float, float]:
    """Best FLOP/s of ``reps`` square ``n x n`` matmuls in ``dtype`` on ``device`` (after a warm-up): per wall
    second, and per CPU-second of this process (all its threads; meaningful on the CPU only)."""
    import torch

    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    return best_rate(lambda: a @ b, 2.0 * n**3, reps, sync)


# ----------------------------------------------------------------------------------------------
# machine
# ----------------------------------------------------------------------------------------------
def cpu_facts(cpuinfo: str | None = None) -> dict:
    """CPU model and the flags that matter for matmuls, from ``/proc/cpuinfo`` text.

    >>> f = cpu_facts("model name\\t: AMD EPYC\\nflags\\t\\t: fpu avx avx2 fma\\n")
    >>> f["model"], f["avx2"], f["avx512f"], f["amx_bf16"]
    ('AMD EPYC', True, False, False)
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    model, flags = "unknown CPU", set()
    for line in cpuinfo.splitlines():
        key, _, val = line.partition(":")
        if key.strip() == "model name" and model == "unknown CPU":
            model = val.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(val.split())
    out = {"model": model}
    for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"):
        out[f] = f in flags
    return out


def loadavg() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


# ----------------------------------------------------------------------------------------------
# derived numbers and goals
# ----------------------------------------------------------------------------------------------
def pll_row_stats(row: dict) -> dict:
    """copies/s, tokens/s, sequences/s (full-PLL rate), achieved FLOP/s and MFU of one timed row.

    ``mfu`` is per wall second against the wall-clock peak (the issue's definition); ``mfu_cpu`` is per
    CPU-second of the process against the matmul peak per CPU-second (steadier when other jobs share the CPU).
    """
    s, c, L = row["seconds"], row["copies"], row["length"]
    work = c * row["flops_per_copy"]
    peak = max(row["peak_before"], row["peak_after"])
    out = {
        "copies_s": c / s,
        "tokens_s": c * L / s,
        "seqs_s": c / s / L,
        "flops_s": work / s,
        "peak": peak,
        "mfu": work / s / peak,
        "mfu_cpu": None,
    }
    if row.get("cpu_seconds") and row.get("peak_cpu_before"):
        out["mfu_cpu"] = work / row["cpu_seconds"] / max(row["peak_cpu_before"], row["peak_cpu_after"])
    return out


def _verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("**met**" if ok else "**missed**")


def evaluate_goals(pll: list[dict], minicons: list[dict], scaling: dict | None, stream: dict | None) -> list[tuple]:
    """``(goal, measured, verdict)`` for each goal of issue 12 §6; verdict ``None`` when not measured."""
    goals = []
    cpu = [r for r in pll if r["device"] == "cpu" and r["dtype"] == "float32"]
    if cpu:
        stats = [(f"{r['model']} L={r['length']}", pll_row_stats(r)) for r in cpu]
        met = [st["mfu"] >= GOAL_CPU_MFU for _, st in stats]
        text = (
            "; ".join(
                f"{k}: {st['mfu']:.0%}" + (f" ({st['mfu_cpu']:.0%} per CPU-second)" if st["mfu_cpu"] else "")
                for k, st in stats
            )
            + f"; {sum(met)} of {len(met)} rows at 50% or more (wall clock)"
        )
        goals.append(("PLL on CPU at >= 50% of the fp32 matmul peak", text, all(met)))
    else:
        goals.append(("PLL on CPU at >= 50% of the fp32 matmul peak", "no CPU float32 rows", None))
    gpu = [
        r
        for r in pll
        if r["device"].startswith("cuda")
        and r["dtype"] == "bfloat16"
        and r["model"].startswith("esm2-650M")
        and r["length"] == 512
    ]
    if gpu:
        m = pll_row_stats(gpu[0])["mfu"]
        goals.append(("ESM-2 650M, L=512, bf16, one GPU: MFU >= 50%", f"{m:.0%}", m >= GOAL_GPU_MFU))
    else:
        goals.append(("ESM-2 650M, L=512, bf16, one GPU: MFU >= 50%", "no GPU was measured in this run", None))
    mc = [
        r
        for r in minicons
        if r["device"].startswith("cuda") and r["model"].startswith("esm2-650M") and "error" not in r
    ]
    if mc:
        best = max(mc, key=lambda r: r["length"])
        x = best["minicons_s"] / best["mlmprob_s"]
        goals.append(
            ("ESM-2 650M on one GPU: >= 3x minicons", f"{x:.2f}x at L={best['length']}", x >= GOAL_GPU_VS_MINICONS)
        )
    else:
        goals.append(("ESM-2 650M on one GPU: >= 3x minicons", "no GPU was measured in this run", None))
    if scaling and scaling.get("efficiency") is not None:
        e = scaling["efficiency"]
        goals.append(
            (
                f"scaling 1 -> {scaling['n']} {scaling['unit']}: efficiency >= 0.8",
                f"{e:.2f} (wall clock, start-up included"
                + ("" if scaling["efficiency_net"] is None else f"; {scaling['efficiency_net']:.2f} without start-up")
                + ")",
                e >= GOAL_SCALING,
            )
        )
    else:
        goals.append(("worker scaling efficiency >= 0.8", "not run", None))
    if stream and stream.get("ratio") is not None:
        goals.append(
            (
                f"streaming memory flat (peak RSS at {stream['large']:,} / at {stream['small']:,} <= 2)",
                f"{stream['ratio']:.2f}",
                stream["ratio"] <= GOAL_STREAM_RATIO,
            )
        )
    else:
        goals.append(("streaming memory flat (within 2x)", "not run", None))
    return goals


# ----------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------
def _g(x: float) -> str:
    return f"{x / 1e9:.1f}"


def render_report(
    meta: dict, pll: list[dict], peaks: list[dict], minicons: list[dict], scaling: dict | None, stream: dict | None
) -> str:
    """The markdown report (``meta``: command, machine, threads, load, date, device note, ...)."""
    L = ["# Scale benchmark: PLL throughput and MFU, minicons, worker scaling, streaming memory", ""]
    if meta.get("quick"):
        L += [
            "**This is a `--quick` smoke run (tiny sizes): its numbers check that the script works and are "
            "not the benchmark's results.**",
            "",
        ]
    L += [
        f"Command: `{meta['command']}`",
        "",
        f"- date: {meta['date']}; total wall time {meta.get('wall_s', 0):.0f} s",
        f"- machine: {meta['machine']}",
        f"- devices measured: {meta['devices']}",
        f"- torch threads: {meta['threads']}; load average (1/5/15 min) {meta['load_start']} at the start, "
        f"{meta.get('load_end', '?')} at the end",
        f"- torch {meta['torch']}, transformers {meta['transformers']}, minicons {meta['minicons']}",
        "",
    ]
    if meta.get("pending"):
        L += [
            f"**Incomplete: this report was written while the run was still going; not finished: "
            f"{', '.join(meta['pending'])}.**",
            "",
        ]
    for f in meta.get("failures", []):
        L += [f"**Failed: {f}.**", ""]
    if meta.get("no_gpu_note"):
        L += [f"**{meta['no_gpu_note']}**", ""]
    L += ["## Goals (issue 12 §6)", "", "| goal | measured | verdict |", "|---|---|---|"]
    for goal, measured, ok in evaluate_goals(pll, minicons, scaling, stream):
        L.append(f"| {goal} | {measured} | {_verdict(ok)} |")
    L += [
        "",
        "## 1. PLL throughput and MFU",
        "",
        "Each row times a fixed number of masked copies of random sequences of exactly L tokens (special "
        "tokens included) through `mlmprob.token_scores(mlm, ids, positions)` (default token budget; one "
        "masked copy per scored position, LM head only at that position); the best of the repeats counts. "
        "A full PLL of one sequence is L - 2 copies, so sequences/s = copies/s / L is the full-PLL rate "
        "(up to the 2 special positions). Model FLOPs per copy = "
        f"`{FLOP_FORMULA}` (P_enc: weights of the encoder's linear layers; 4 L^2 hidden per layer: QK^T and "
        "AV; P_head: the LM head's linear weights, applied at the one masked position). MFU = copies x "
        "FLOPs per copy / seconds / matmul peak, the peak being the larger of the two measurements taken "
        "in the same process just before and just after that model's rows (table 1b). On the CPU, "
        "'MFU per CPU-second' divides the FLOPs per CPU-second of the process (all threads) by the matmul's "
        "FLOPs per CPU-second: when other jobs share the CPU, the wall-clock figures of both the model and "
        "the peak depend on how much of the CPU the process got, the per-CPU-second ratio much less "
        "(though threads that spin while waiting count as busy).",
        "",
        "| model | params | L | dtype | copies | seconds | copies/s | tokens/s | sequences/s | GFLOP/copy "
        "| GFLOP/s | peak GFLOP/s | MFU | MFU per CPU-second |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in pll:
        s = pll_row_stats(r)
        L.append(
            f"| {r['model']} | {r['params'] / 1e6:.0f}M | {r['length']} | {r['dtype']} | {r['copies']} | "
            f"{r['seconds']:.2f} | {s['copies_s']:.2f} | {s['tokens_s']:.0f} | {s['seqs_s']:.4f} | "
            f"{r['flops_per_copy'] / 1e9:.2f} | {_g(s['flops_s'])} | {_g(s['peak'])} | {s['mfu']:.0%} | "
            + ("" if s["mfu_cpu"] is None else f"{s['mfu_cpu']:.0%}")
            + " |"
        )
    L += [
        "",
        "### 1b. Matmul peak (best of repeated square matmuls, same process and threads)",
        "",
        "| model section | device | dtype | size | before (GFLOP/s) | after (GFLOP/s) | before (GFLOP/CPU-s) "
        "| after (GFLOP/CPU-s) |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for p in peaks:
        cpu = f"{_g(p['cpu_before'])} | {_g(p['cpu_after'])}" if p["device"] == "cpu" else " | "
        L.append(
            f"| {p['model']} | {p['device']} | {p['dtype']} | {p['n']} | {_g(p['before'])} | {_g(p['after'])} | {cpu} |"
        )
    L += ["", "Commands of the worker processes (one per model):", ""]
    L += [f"    {c}" for c in meta.get("pll_commands", [])]
    L += [
        "",
        "## 2. mlmprob vs minicons (full PLL, same model object, data and device)",
        "",
        "Full PLL of the same random sequences: mlmprob `token_scores(mlm, ids)` over all of them in one call; "
        'minicons `MaskedLMScorer(model, tokenizer=...).sequence_score([text], PLL_metric="original")`, one '
        "sequence per call (all its masked copies in one forward pass with full logits). The minicons "
        "tokenizer is a `BertTokenizerFast` over the model's vocabulary with the tokens joined by spaces, "
        "checked to give exactly mlmprob's ids. minicons 0.3.39 calls `tokenizer.batch_encode_plus`, which "
        "transformers 5 removed: the script sets `batch_encode_plus = __call__` on that tokenizer instance. "
        "Seconds per sequence are the best of the rounds (method order alternating).",
        "",
        "| model | L | dtype | sequences | mlmprob s/seq | minicons s/seq | mlmprob speed-up | speed-up in CPU time "
        "| max abs PLL diff (nats) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in minicons:
        if "error" in r:
            L.append(f"| {r['model']} | {r['length']} | {r['dtype']} | {r['n']} | failed: {r['error']} | | | | |")
            continue
        cpu = f"{r['minicons_cpu'] / r['mlmprob_cpu']:.2f}x" if r.get("mlmprob_cpu") else ""
        L.append(
            f"| {r['model']} | {r['length']} | {r['dtype']} | {r['n']} | {r['mlmprob_s']:.2f} | "
            f"{r['minicons_s']:.2f} | {r['minicons_s'] / r['mlmprob_s']:.2f}x | {cpu} | {r['max_diff']:.1e} |"
        )
    if not minicons:
        L.append("| (not run) | | | | | | | | |")
    L += ["", f"## 3. Scaling over {scaling['unit'] if scaling else 'workers'}", ""]
    if scaling:
        L += [
            scaling["desc"],
            "",
            "| configuration | wall s (best) | all rounds | start-up s | sequences/s | efficiency "
            "(wall) | efficiency (start-up subtracted) |",
            "|---|---:|---|---:|---:|---:|---:|",
        ]
        for c in scaling["rows"]:
            eff = "" if c.get("eff") is None else f"{c['eff']:.2f}"
            net = "" if c.get("eff_net") is None else f"{c['eff_net']:.2f}"
            L.append(
                f"| {c['label']} | {c['wall']:.1f} | {', '.join(f'{x:.1f}' for x in c['walls'])} | "
                f"{c['startup']:.1f} | {scaling['n_seqs'] / c['wall']:.2f} | {eff} | {net} |"
            )
        L += ["", "Commands:", ""] + [f"    {c['cmd']}" for c in scaling["rows"]]
    else:
        L.append("(not run)")
    L += ["", "## 4. Streaming memory", ""]
    if stream:
        L += [
            stream["desc"],
            "",
            "| sequences | wall s | peak RSS (MiB) | ratio to the smallest run |",
            "|---:|---:|---:|---:|",
        ]
        base = stream["rows"][0]["rss"]
        for r in stream["rows"]:
            L.append(f"| {r['n']:,} | {r['wall']:.1f} | {r['rss'] / 2**20:.0f} | {r['rss'] / base:.2f} |")
        L += ["", "Commands:", ""] + [f"    {r['cmd']}" for r in stream["rows"]]
    else:
        L.append("(not run)")
    L.append("")
    return "\n".join(L)

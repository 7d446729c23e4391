"""The PLL benchmark's markdown report (``bench_pll.py``)."""

from __future__ import annotations

import os

from pll_inputs import GIB, METHODS, VOCAB


# ----------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------
def _mib(b) -> str:
    return f"{b / 2**20:.0f}"


def _loadavg() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _max_diff(a, b) -> float:
    return max(abs(x - y) for x, y in zip(a, b))


def report(args, command: str, env: dict, sections: list[dict], long: dict | None) -> str:
    L = [
        "# PLL scoring benchmark",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {env['machine']}; torch {env['torch']}, transformers {env['transformers']}, "
        f"minicons {env['minicons']}; {args.threads} torch threads; {env['date']}; load average "
        f"{env['load_start']} at the start, {env['load_end']} at the end (other jobs shared the CPU, so "
        f"sequences/CPU-s, from the worker's own CPU time, is the steadier comparison).",
        "",
        "How it is measured: every (model, method) runs in a fresh worker process, in rounds (the order of "
        "the methods reversed every other round; the naive loop runs once, on the first sequences only). "
        "A worker loads the model, runs one warm-up forward pass, then times tokenization plus scoring of "
        "every sequence (minicons' one-off vocabulary scan in its constructor is not timed). "
        "sequences/s is wall clock, sequences/CPU-s uses the worker's user+system CPU time over all its "
        "threads; both are the best round. Peak = peak RSS of the worker while scoring (model and runtime "
        "included); delta = peak minus the RSS right after loading the model; both the largest over the "
        "rounds.",
        "",
    ]
    for s in sections:
        res = {r["method"]: r for r in s["results"]}
        L += [
            f"## {s['title']}",
            "",
            s["desc"],
            "",
            "| method | sequences | sequences/s | sequences/CPU-s | seconds | peak RSS (MiB) | delta (MiB) "
            "| mlmprob speed-up (wall) | (CPU time) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        ok = {m: r for m, r in res.items() if "error" not in r}
        for m in METHODS:
            r = res.get(m)
            if r is None:
                continue
            if "error" in r:
                L.append(f"| {m} | failed: {r['error']} | | | | | | | |")
                continue
            base = ok.get("mlmprob")
            ratio = base["seq_per_s"] / r["seq_per_s"] if base else float("nan")
            cratio = base["seq_per_cpu_s"] / r["seq_per_cpu_s"] if base else float("nan")
            L.append(
                f"| {m} | {r['n']} | {r['seq_per_s']:.3f} | {r['seq_per_cpu_s']:.3f} | {r['seconds']:.1f} | "
                f"{_mib(r['peak'])} | {_mib(r['delta'])} | {ratio:.2f}x | {cratio:.2f}x |"
            )
        L.append("")
        if "mlmprob" in ok:
            for m in ("minicons", "naive"):
                if m in ok:
                    b, r = ok["mlmprob"], ok[m]
                    L.append(
                        f"- mlmprob / {m}: throughput **{b['seq_per_s'] / r['seq_per_s']:.2f}x** (wall clock), "
                        f"{b['seq_per_cpu_s'] / r['seq_per_cpu_s']:.2f}x (CPU time); peak RSS "
                        f"{b['peak'] / r['peak']:.2f}x; max |PLL(mlmprob) - PLL({m})| = "
                        f"{_max_diff(b['pll'], r['pll']):.2e} nats over {min(b['n'], r['n'])} sequences"
                    )
            L.append(
                "- seconds per round: "
                + "; ".join(
                    f"{m} " + ", ".join(f"{x:.1f}" for x in ok[m].get("all_seconds", [ok[m]["seconds"]]))
                    for m in METHODS
                    if m in ok
                )
            )
            L.append(
                f"- PLL range over the sequences: {min(ok['mlmprob']['pll']):.2f} .. {max(ok['mlmprob']['pll']):.2f} nats"
            )
        for line in s.get("checks", []):
            L.append(f"- {line}")
        L.append("")
    if long is not None:
        L += [
            f"## One {args.long_tokens}-token English sequence, {long.get('copies', '?')} masked copies, "
            "BERT-base-sized model",
            "",
            f"BertForMaskedLM 768 hidden x 12 layers x 12 heads, vocabulary {VOCAB}, random weights; one "
            f"wiki103 sequence of exactly {args.long_tokens} tokens ([CLS] ... [SEP]) scored by mlmprob at "
            f"{long.get('copies', '?')} positions (one masked copy each), batch_tokens={args.batch_tokens}.",
            "",
        ]
        if "error" in long:
            L.append(f"- failed: {long['error']}")
        else:
            verdict = "PASS" if long["lifetime_peak"] < 2 * GIB else "FAIL"
            L += [
                f"- peak RSS while scoring: {_mib(long['peak'])} MiB (delta over the loaded model: {_mib(long['delta'])} MiB)",
                f"- lifetime peak RSS of the process (loading included): {_mib(long['lifetime_peak'])} MiB "
                f"= {long['lifetime_peak'] / GIB:.2f} GiB: **{verdict}** (< 2 GiB)",
                f"- time: {long['seconds']:.1f} s ({long.get('copies', 0) / long['seconds']:.1f} copies/s)",
            ]
            if long.get("copies") != args.long_tokens:
                L.append(
                    f"- note: only {long['copies']} of the {args.long_tokens} copies were scored (--mem-copies); "
                    f"the rest are sub-batches of the same shape, so the peak barely moves (allocator "
                    f"fragmentation only: a full 512-copy run measured 1.34 GiB against 1.27 GiB for 64 "
                    f"copies; `--mem-copies -1` scores all)"
                )
            n = args.long_tokens
            L.append(
                f"- for comparison (arithmetic, not run): all {n} copies in one forward pass with full logits, "
                f"as minicons does, hold {n}x{n}x{VOCAB} float32 logits = {n * n * VOCAB * 4 / GIB:.1f} GiB"
            )
        L.append("")
    return "\n".join(L)

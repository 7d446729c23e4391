"""The markdown report of ``bench_variants.py`` (kept apart from the measurements), and the number of forward
rows the per-variant loop takes, by method (what the report's extrapolations and the test check against)."""

from __future__ import annotations

import scale_lib

N_CANDIDATES = 20  # ag reads the pair joint over the model's candidate tokens (the 20 residues)


def cpu_model() -> str:
    return scale_lib.cpu_facts()["model"]


def loadavg() -> str:
    return scale_lib.loadavg()


def loop_passes(method: str, k: int, n_res: int, n_candidates: int = N_CANDIDATES) -> int:
    """Forward rows of ``score_variants(mlm, wt, [v], [method])`` for one variant of ``k`` sites of a wild type
    of ``n_res`` residues (each call alone: nothing shared with other variants).

    >>> [loop_passes(m, 3, 100) for m in ("masked_marginals", "hcb", "epistasis", "pll_delta")]
    [3, 3, 5, 200]
    """
    return {
        "wt_marginals": 1,
        "masked_marginals": k,
        "masked_marginals_all": 1,
        "masked_marginals_mt": k,
        "mutant_marginals": 1,
        "pll_delta": 2 * n_res,
        "hcb": k,
        "epistasis": 2 * k - 1,
        "ag": 2 * n_candidates + 1 if k == 2 else 0,
    }[method]


def _rate(n: int, seconds: float) -> str:
    return f"{n / seconds:.2f}" if n and seconds > 0 else ""


def _spp(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def _x(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}x"


def set_rows(s: dict, n_res: int) -> list[dict]:
    """Derived numbers of one variant set: per method, passes per variant and rates of both ways, and ratios."""
    out = []
    for r in s["rows"]:
        b, lp = r["batched"], r["loop"]
        d = {
            "method": r["method"],
            "n": r["n"],
            "passes": b["passes"],
            "seconds": b["seconds"],
            "per_variant": b["passes"] / r["n"],
            "rate": r["n"] / b["seconds"] if b["seconds"] > 0 else None,
            "n_loop": r["n_loop"],
            "loop_per_variant": lp["passes"] / r["n_loop"] if r["n_loop"] else None,
            "loop_rate": r["n_loop"] / lp["seconds"] if r["n_loop"] and lp["seconds"] > 0 else None,
            "loop_expected": loop_passes(r["method"], s["k"], n_res),
            "max_diff": r["max_diff"],
        }
        d["s_per_pass"] = b["seconds"] / b["passes"] if b["passes"] else None
        d["loop_s_per_pass"] = lp["seconds"] / lp["passes"] if lp["passes"] else None
        d["pass_ratio"] = d["loop_expected"] / d["per_variant"] if d["per_variant"] else None
        d["speedup"] = d["rate"] / d["loop_rate"] if d["rate"] and d["loop_rate"] else None
        out.append(d)
    return out


SET_TITLES = {"singles": "single mutants", "doubles": "double mutants", "multi": "multi-site mutants"}


def render(res: dict) -> str:
    m = res["meta"]
    n_res = m["length"]
    L = ["# Variant scoring: forward passes and variants/s, batched vs per-variant loop (issue 13 §4)", ""]
    if m.get("quick"):
        L += [
            "**This is a `--quick` smoke run (tiny sizes): its numbers check that the script works and are not the "
            "benchmark's results.**",
            "",
        ]
    L += [
        f"Command: `{m['command']}`",
        "",
        f"- date: {m['date']}; total wall time {m.get('wall_s', 0):.0f} s",
        f"- machine: {m['machine']}; device {m['device']}, dtype {m['dtype']}, torch threads {m['threads']}",
        f"- load average (1/5/15 min): {m['load_start']} at the start, {m.get('load_end', '?')} at the end "
        "(other jobs share this machine)",
        f"- torch {m['torch']}, transformers {m['transformers']}",
        f"- model `{m['model']}`; wild type {n_res} residues ({m['tokens']} tokens with the special ones); "
        f"token budget {m['batch_tokens']}; variant sets drawn with `torch.Generator().manual_seed({m['seed']})`",
        "",
        "## What is measured",
        "",
        "A **forward pass** is one row (one sequence, masked or not) given to the model: a proxy around the "
        "model counts the rows of every `logits` / `logits_at` call (every model call of `score_variants` goes "
        "through `models.protocol.gather_logits`, which calls one of them). Passes are exact counts; times are "
        "wall-clock seconds of one run on a shared machine (no repeats), so ratios of variants/s carry the noise "
        "of other jobs.",
        "",
        "- **batched**: `score_variants(mlm, wt, variants, methods=[method])`: all variants of the set in one call; "
        "rows are deduplicated by content across variants and batched under the token budget.",
        "- **loop**: `for v in variants: score_variants(mlm, wt, [v], methods=[method])`: one call per variant "
        "and no `ForwardCache`, so no row is shared between variants (what a per-variant script does); each "
        "call still batches its own rows. Timed on the first variants of the set only (column 'loop "
        "variants'); its passes per variant depend only on the method and the number of sites k (wt_marginals, "
        "masked_marginals_all, mutant_marginals: 1; masked_marginals, masked_marginals_mt, hcb: k; epistasis: "
        "2k - 1; pll_delta: 2 x residues; ag: 2 x 20 + 1), checked against the count.",
        "- **passes ratio** = loop passes per variant / batched passes per variant (how many times more rows "
        "the loop would forward over the whole set); **speed-up** = batched variants/s / loop variants/s.",
        "- pll_delta re-scores each mutant in full (residues rows per variant) whatever k is, so it runs on the "
        f"sets {m['pll_sets']!r} only, on the first {m['sizes']['pll_n']} variants; ag on the first "
        f"{m['sizes']['ag_n']} doubles (2K + 1 = 41 rows per distinct pair; random doubles share no pair, so "
        "batching cannot save rows there).",
        "",
    ]
    for s in res["sets"]:
        L += [
            f"## {SET_TITLES.get(s['set'], s['set'])} (k = {s['k']}, {s['n']} variants)",
            "",
            "| method | variants | passes | passes/variant | s | s/pass | variants/s | loop variants | loop passes/variant "
            "| loop s/pass | loop variants/s | passes ratio | speed-up | max abs score diff |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for d in set_rows(s, n_res):
            lpv = "" if d["loop_per_variant"] is None else f"{d['loop_per_variant']:.1f}"
            diff = "" if d["max_diff"] is None else f"{d['max_diff']:.1e}"
            rate = "" if d["rate"] is None else f"{d['rate']:.2f}"
            lrate = "" if d["loop_rate"] is None else f"{d['loop_rate']:.2f}"
            L.append(
                f"| {d['method']} | {d['n']} | {d['passes']} | {d['per_variant']:.2f} | {d['seconds']:.1f} | "
                f"{_spp(d['s_per_pass'])} | {rate} | {d['n_loop']} | {lpv} | {_spp(d['loop_s_per_pass'])} | {lrate} | "
                f"{_x(d['pass_ratio'])} | {_x(d['speedup'])} | {diff} |"
            )
        L.append("")
    sat = res.get("saturate")
    L += ["## `--saturate`", ""]
    if sat:
        st, lp = sat["stream"], sat["loop"]
        per = lp["passes"] / sat["n_loop"] if sat["n_loop"] else None
        loop_all = None if per is None else per * sat["n"]
        lrate = sat["n_loop"] / lp["seconds"] if sat["n_loop"] and lp["seconds"] > 0 else None
        rate = sat["n"] / st["seconds"]
        L += [
            "Every single mutant of the wild type (19 x L) scored by wt_marginals and masked_marginals through "
            "the code `mlmprob variants --saturate` runs with one worker (`VariantsJob` over `saturation_units`, "
            "chunks of 256, `runtime.engine.run_stream` into a JSONL writer; the heatmap and CSV files the CLI "
            "writes afterwards are not timed). The ForwardCache of the worker keeps the wild-type rows across "
            "chunks, so the run needs the unmasked wild type and one masked row per residue: L + 1 passes. The "
            "loop scores the first mutants one `score_variants(..., methods=[wt_marginals, masked_marginals])` "
            "call each (2 rows per mutant: the wild type and its masked row); its total for all 19 x L mutants "
            "is passes per mutant x 19 x L (extrapolated; exact, every single mutant costs the same 2 rows), and "
            "19 x L alone is what a loop of masked_marginals only would take.",
            "",
            "| residues L | mutants (19 L) | passes | L + 1 | s | mutants/s | loop mutants | loop passes/mutant | "
            "loop mutants/s | loop passes for all 19 L | passes ratio | speed-up |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        L.append(
            f"| {sat['length']} | {sat['n']} | {st['passes']} | {sat['length'] + 1} | {st['seconds']:.1f} | "
            f"{rate:.1f} | {sat['n_loop']} | {'' if per is None else f'{per:.1f}'} | "
            f"{'' if lrate is None else f'{lrate:.2f}'} | {'' if loop_all is None else f'{loop_all:.0f}'} | "
            f"{_x(None if loop_all is None else loop_all / st['passes'])} | "
            f"{_x(None if lrate is None else rate / lrate)} |"
        )
        L.append("")
        verdict = "**met**" if st["passes"] == sat["length"] + 1 else "**missed**"
        L += [
            f"Issue 13 §4 goal: a `--saturate` of this {sat['length']}-residue chain takes L passes, not 19 x L: "
            f"{st['passes']} passes = L + 1 against 19 x L = {19 * sat['length']}: {verdict}.",
            "",
        ]
    else:
        L += ["(not run)", ""]
    L += notes(res)
    return "\n".join(L)


def notes(res: dict) -> list[str]:
    """Caveats that hold for any run, with this run's spread of seconds per pass."""
    m = res["meta"]
    spp = [
        d[k]
        for s in res["sets"]
        for d in set_rows(s, m["length"])
        for k in ("s_per_pass", "loop_s_per_pass")
        if d[k] is not None and d["passes"] >= 10
    ]
    spread = (
        (
            f" In this run the seconds per forward pass (rows with at least 10 passes) ranged from {min(spp):.3f} "
            f"to {max(spp):.3f} ({max(spp) / min(spp):.1f}x) while the load average went from {m['load_start']} to "
            f"{m.get('load_end', '?')}, so a speed-up is only meaningful where it is well "
            "outside that spread; with a passes ratio of 1.00x the speed-ups scatter around 1 by noise."
        )
        if spp
        else ""
    )
    return [
        "## Notes",
        "",
        "- Passes are exact and deterministic (same seed, same counts on any machine); times are one run with no "
        "repeats (batched before loop, method by method), on a CPU shared with other jobs." + spread,
        "- Where batching saves rows, the saving comes from rows shared by several variants: the unmasked wild "
        "type (wt_marginals: 1 row for the whole set) and the wild type masked at one site (masked_marginals, "
        "hcb's first context, epistasis, masked_marginals_mt of singles: at most L rows for any number of "
        "variants; that is what makes `--saturate` L + 1). Rows specific to one variant (mutant_marginals, "
        "masked_marginals_all of multi-site variants, masked_marginals_mt and hcb beyond the first site, the "
        "pll_delta mutant re-scoring, ag of distinct pairs) cannot be shared: there batched and loop "
        "forward the same rows, and only the per-call overhead differs (compare the s/pass columns).",
        "- The loop is not the naive one-row-per-call loop: each `score_variants([v])` call still forwards "
        "that variant's own rows together (k rows in one call for masked_marginals, L for pll_delta), with "
        "the LM head only at the read positions.",
        "- 'max abs score diff' compares the loop's scores with the batched ones: float32 logits of the same "
        "row differ at the 1e-6 level with the composition of the batch they run in.",
        "- One torch thread (`--threads`), so that other jobs' load slows both ways alike; on an idle "
        "machine or a GPU every row is cheaper, and the passes ratios are unchanged.",
        "",
    ]

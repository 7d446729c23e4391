"""Variant-scoring benchmark (issue 13 §4): forward passes and variants/s of ``mlmprob.score_variants``
against a loop that scores each variant on its own, and the cost of ``mlmprob variants --saturate``.

Side by side in one run, in one process, on one model (default AntiBERTy, real weights) and one wild type
(default trastuzumab VH, 120 residues):

1. For random sets of single, double and 10-site variants (seeded ``torch.Generator``), per method:
   - **batched**: ``score_variants(mlm, wt, variants, methods=[method])``, every variant of the set in one call
     (rows shared across variants, deduplicated by content, batched under the token budget);
   - **loop**: ``for v in variants: score_variants(mlm, wt, [v], methods=[method])``, one call per variant,
     no ``ForwardCache``, so nothing is shared between variants (what a per-variant script does), on the
     first ``--loop-n`` variants of the set (``pll_delta``: ``--pll-loop-n``; ``ag``: ``--ag-loop-n``).
   A forward pass is one row (one sequence, masked or not) given to the model: a proxy around the model
   counts the rows of every ``logits`` / ``logits_at`` call (all of ``score_variants``' model calls go
   through ``models.protocol.gather_logits``, which calls one of the two). The loop's scores are checked
   against the batched ones (max abs difference).
2. ``--saturate``: every single mutant of the wild type (19 x L) through the code ``mlmprob variants
   --saturate`` runs with one worker: ``VariantsJob`` (methods wt_marginals, masked_marginals) over
   ``saturation_units`` in chunks of 256 through ``runtime.engine.run_stream`` into a JSONL writer, the
   forward rows counted the same way; and the loop on the first ``--sat-loop-n`` mutants.

``--quick`` shrinks every size (smoke test; ``tests/bench/test_bench_variants.py`` runs it on a tiny model).

    nice -n 5 python bench/bench_variants.py                      # AntiBERTy, CPU, 1 thread: about 7 minutes
    python bench/bench_variants.py --quick --model DIR --out runs/v.md
    python bench/bench_variants.py --render docs/results/bench_variants.json   # re-render the report, no measuring
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import variants_report as report  # noqa: E402

from mlmprob.models.reader import reader_of  # noqa: E402
from mlmprob.models.spec import ModelSpec

TRASTUZUMAB_VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    "WGGDGFYAMDYWGQGTLVTVSS"
)
METHODS = (
    "wt_marginals",
    "masked_marginals",
    "masked_marginals_all",
    "masked_marginals_mt",
    "mutant_marginals",
    "pll_delta",
    "hcb",
    "ag",
    "epistasis",
)
# flag -> (default, --quick)
SIZES = {
    "singles": (200, 40),
    "doubles": (50, 8),
    "multi": (10, 3),
    "multi_k": (10, 10),
    "pll_n": (2, 2),
    "ag_n": (4, 2),
    "loop_n": (3, 0),
    "pll_loop_n": (1, 0),
    "ag_loop_n": (1, 0),
    "sat_loop_n": (5, 3),
}
PLL_SETS = ("singles", "singles,doubles,multi")


class CountingMLM:
    """The model, with every row given to ``logits`` / ``logits_at`` counted (``rows``) and every call (``calls``)."""

    def __init__(self, mlm):
        self.mlm, self.rows, self.calls = mlm, 0, 0

    def __getattr__(self, name):
        return getattr(self.mlm, name)

    def logits(self, ids):
        self.rows += int(ids.shape[0])
        self.calls += 1
        return self.mlm.logits(ids)

    def logits_at(self, ids, rows, cols):
        self.rows += int(ids.shape[0])
        self.calls += 1
        fn = getattr(self.mlm, "logits_at", None)
        return fn(ids, rows, cols) if fn is not None else self.mlm.logits(ids)[rows, cols]


def random_variants(gen, n: int, k: int, wild_type: str, alphabet: str) -> list[list[tuple[int, str]]]:
    """``n`` distinct variants of ``k`` distinct sites each: ``[(0-based residue, mutant letter), ...]`` sorted."""
    import torch

    seen, out = set(), []
    for _ in range(100 * n + 100):
        if len(out) == n:
            break
        sites = sorted(torch.randperm(len(wild_type), generator=gen)[:k].tolist())
        v = []
        for s in sites:
            choices = [c for c in alphabet if c != wild_type[s]]
            v.append((s, choices[int(torch.randint(len(choices), (1,), generator=gen))]))
        if tuple(v) not in seen:
            seen.add(tuple(v))
            out.append(v)
    if len(out) < n:
        raise SystemExit(f"could not draw {n} distinct {k}-site variants of a {len(wild_type)}-residue wild type")
    return out


def _timed(counter: CountingMLM, fn):
    r0, c0 = counter.rows, counter.calls
    t, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, {
        "seconds": time.perf_counter() - t,
        "cpu_seconds": time.process_time() - cpu,
        "passes": counter.rows - r0,
        "calls": counter.calls - c0,
    }


def method_row(counter, ids, variants, method: str, n_batched: int, n_loop: int, batch_tokens: int) -> dict:
    """Batched over the first ``n_batched`` variants, loop over the first ``n_loop``; passes, times, score diff."""
    import torch

    from mlmprob import score_variants

    batch = variants[:n_batched]
    scores, b = _timed(
        counter, lambda: score_variants(reader_of(counter, batch_tokens), ids, batch, methods=[method])[method]
    )
    loop = variants[:n_loop]
    per, lp = _timed(
        counter,
        lambda: [score_variants(reader_of(counter, batch_tokens), ids, [v], methods=[method])[method][0] for v in loop],
    )
    diff = None
    if loop:
        a, c = torch.stack(per), scores[: len(loop)]
        both = ~(a.isnan() & c.isnan())
        diff = float((a[both] - c[both]).abs().max()) if both.any() else 0.0
    return {"method": method, "n": len(batch), "batched": b, "n_loop": len(loop), "loop": lp, "max_diff": diff}


def variants_section(a, counter, ids, where, to_id, wt: str, log) -> list[dict]:
    import torch

    from mlmprob.alphabet import AMINO_ACIDS

    gen = torch.Generator().manual_seed(a.seed)
    sets = [("singles", a.singles, 1), ("doubles", a.doubles, 2), ("multi", a.multi, a.multi_k)]
    pll_sets = set(a.pll_sets.split(","))
    out = []
    for name, n, k in sets:
        if n == 0:
            continue
        drawn = random_variants(gen, n, k, wt, AMINO_ACIDS)
        tokens = [[(int(where[s]), to_id[m]) for s, m in v] for v in drawn]
        rows = []
        for method in a.methods.split(","):
            nb, nl = n, a.loop_n or n
            if method == "pll_delta":
                if name not in pll_sets:
                    continue
                nb, nl = min(n, a.pll_n), a.pll_loop_n or min(n, a.pll_n)
            if method == "ag":
                if k != 2:
                    continue
                nb, nl = min(n, a.ag_n), a.ag_loop_n or min(n, a.ag_n)
            log(f"  {name} x {method}: batched {nb}, loop {min(nl, nb)}")
            rows.append(method_row(counter, ids, tokens, method, nb, min(nl, nb), a.batch_tokens))
        out.append({"set": name, "k": k, "n": n, "variants": [[[s, m] for s, m in v] for v in drawn], "rows": rows})
    return out


def saturate_section(a, counter, ids, where, to_id, wt: str, tmp: Path) -> dict:
    from mlmprob import score_variants
    from mlmprob.runtime.engine import run_stream
    from mlmprob.runtime.writers import open_writer, read_results
    from mlmprob.variants.mutations import parse_mutant
    from mlmprob.variants.spec import VariantsSpec
    from mlmprob.variants.stream import SATURATE_METHODS, VariantsJob
    from mlmprob.variants.units import saturation_units

    job = VariantsJob(
        model_spec=ModelSpec(a.model, batch_tokens=a.batch_tokens),
        wild_type=wt,
        spec=VariantsSpec(methods=SATURATE_METHODS),
    )
    out = tmp / "saturate.jsonl"
    fields = ("id", "mutant", "n_mutations", "window", *SATURATE_METHODS)

    def stream():
        state = job.prepare(counter)  # reads the tokenizer only: no model rows
        writer = open_writer(out, config={"command": "variants", "saturate": True}, fields=fields)
        with writer:
            return run_stream(
                lambda device: state,
                job.run,
                saturation_units(wt),
                writer,
                devices=["cpu"],
                chunk_size=256,
                progress=False,
                unit_name="variant",
            )

    summary, s = _timed(counter, stream)
    n = sum(1 for _ in read_results(out))
    units = list(saturation_units(wt))[: a.sat_loop_n]
    loop_vars = [[(int(where[m.index]), to_id[m.mt]) for m in parse_mutant(u.mutant, wt)] for u in units]
    _, lp = _timed(
        counter,
        lambda: [
            score_variants(reader_of(counter, a.batch_tokens), ids, [v], methods=SATURATE_METHODS) for v in loop_vars
        ],
    )
    return {
        "length": len(wt),
        "n": n,
        "written": summary.written,
        "stream": s,
        "n_loop": len(units),
        "loop": lp,
        "methods": list(SATURATE_METHODS),
    }


def parse(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--model", default="antiberty", help="mlmprob.load_mlm name or directory (a residue-level model)")
    p.add_argument("--wild-type", default=TRASTUZUMAB_VH, help="wild-type residues")
    p.add_argument("--methods", default=",".join(METHODS))
    for k, (d, q) in SIZES.items():
        p.add_argument(
            "--" + k.replace("_", "-"),
            type=int,
            default=None,
            help=f"default {d} (--quick: {q}); "
            + ("0 = every variant of the batched run" if "loop" in k and k != "sat_loop_n" else ""),
        )
    p.add_argument(
        "--pll-sets",
        default=None,
        help=f"variant sets pll_delta runs on (default {PLL_SETS[0]!r}; --quick: {PLL_SETS[1]!r})",
    )
    p.add_argument("--batch-tokens", type=int, default=None, help="token budget (default: mlmprob's auto choice)")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-saturate", action="store_true", help="skip the --saturate section")
    p.add_argument("--quick", action="store_true", help="tiny sizes: checks that the script works")
    p.add_argument(
        "--render", metavar="JSON", help="measure nothing: rewrite --out from the raw numbers of an earlier run"
    )
    p.add_argument(
        "--out", default="docs/results/bench_variants.md", help="markdown report (raw numbers: .json beside it)"
    )
    a = p.parse_args(argv)
    for k, (d, q) in SIZES.items():
        if getattr(a, k) is None:
            setattr(a, k, q if a.quick else d)
    if a.pll_sets is None:
        a.pll_sets = PLL_SETS[1] if a.quick else PLL_SETS[0]
    return a


def main(argv=None) -> dict:
    a = parse(argv)
    if a.render:
        result = json.loads(Path(a.render).read_text())
        Path(a.out).write_text(report.render(result))
        return result
    import torch
    import transformers

    import mlmprob
    from mlmprob.alphabet import AMINO_ACIDS
    from mlmprob.batching import auto_batch_tokens
    from mlmprob.variants.mutations import letter_ids, residue_positions

    torch.set_num_threads(a.threads)
    args = list(sys.argv[1:] if argv is None else argv)
    command = "python " + " ".join(shlex.quote(x) for x in [os.path.relpath(__file__)] + args)
    if os.nice(0) > 0:
        command = f"nice -n {os.nice(0)} " + command
    meta = {
        "command": command,
        "quick": a.quick,
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "threads": a.threads,
        "machine": f"{report.cpu_model()}, {os.cpu_count()} logical CPUs; Python {platform.python_version()}",
        "load_start": report.loadavg(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "model": a.model,
        "seed": a.seed,
        "sizes": {k: getattr(a, k) for k in SIZES},
        "pll_sets": a.pll_sets,
    }
    started = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - started:6.0f} s] {msg}", file=sys.stderr, flush=True)

    wt = a.wild_type.strip().upper()
    mlm = mlmprob.load_mlm(a.model)
    a.batch_tokens = auto_batch_tokens(mlm, a.batch_tokens)
    ids, where = residue_positions(mlm, wt)
    to_id = letter_ids(mlm, AMINO_ACIDS)
    counter = CountingMLM(mlm)
    meta.update(
        length=len(wt),
        tokens=len(ids),
        batch_tokens=a.batch_tokens,
        device=str(getattr(mlm, "device", "cpu")),
        dtype=str(getattr(mlm, "dtype", "?")).replace("torch.", ""),
    )
    mlmprob.score_variants(
        reader_of(mlm, a.batch_tokens),
        ids,
        [[(int(where[0]), to_id["A" if wt[0] != "A" else "C"])]],
        methods=["wt_marginals"],
    )  # warm-up, not counted
    log(f"model {a.model} loaded; wild type {len(wt)} residues ({len(ids)} tokens); batch_tokens {a.batch_tokens}")
    sets = variants_section(a, counter, ids, where, to_id, wt, log)
    sat = None
    if not a.no_saturate:
        log("saturate")
        with tempfile.TemporaryDirectory(prefix="bench_variants_") as td:
            sat = saturate_section(a, counter, ids, where, to_id, wt, Path(td))
    meta.update(load_end=report.loadavg(), wall_s=time.perf_counter() - started)
    result = {"meta": meta, "sets": sets, "saturate": sat}
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = report.render(result)
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    print(text)
    log(f"written {out} and {out.with_suffix('.json')}")
    return result


if __name__ == "__main__":
    main()

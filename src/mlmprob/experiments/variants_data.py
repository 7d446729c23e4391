"""Variant effects and developability on real data: the trastuzumab CDR-H3 library (binder vs
non-binder, Mason et al. 2021) scored by every ``score_variants`` method with AntiBERTy and
Sapiens-VH against sequence-only baselines, and the PLL and left-to-right chain-rule log-likelihood
of GDPa1 and Jain-137 VH domains against their assays (issue 13, section 3; ``chain`` and the
log-likelihood: issue 20).

Usage::

    nohup nice -n 5 python -m mlmprob.experiments.variants_data --out docs/results/variants/raw \\
        --threads 2 > variants.log 2>&1 &
    python -m mlmprob.experiments.variants_data --out docs/results/variants/raw --report-only

``--plan`` lists the stages ``model:group:n`` (``n`` variants per class of the ordered library, or
``all``) in the order they run; the default runs the cheap scores first and grows the subsamples
of the expensive ones after (see ``DEFAULT_PLAN``). Each chunk is appended to its file in ``--out``
when scored; a rerun (after a kill too) skips the chunks already there. The report
(``variants_data_report``) is written to ``--report`` (default: ``README.md`` beside ``--out``) from
whatever chunks exist.
"""

from __future__ import annotations

from ..argtypes import nonnegative_int, positive_int  # noqa: E402

import argparse
import datetime
import shlex
import sys
import time
from pathlib import Path
from typing import Sequence

import torch

from ..batching import DEFAULT_BATCH_TOKENS
from ..errors import MLMProbError, exit_status
from ..runtime.log import ResumableLog
from .data_option import add_data_option, resolve_data_dir
from .variants_data_common import (GDPA1_CSV, JAIN_CSV, NEG_CSV, POS_CSV, RUNS_FILE, load_library,
                                   write_library_meta)
from .variants_data_runner import Runner, parse_plan

DEFAULT_PLAN = ",".join([
    "baseline:baselines:all", "sapiens-vh:marginals:all", "antiberty:marginals:all",
    "sapiens-vh:masked_marginals_all:2000", "sapiens-vh:mutant_marginals:2000", "sapiens-vh:hcb:500",
    "sapiens-vh:masked_marginals_mt:500", "sapiens-vh:ag:all", "sapiens-vh:jain_pll:all",
    "antiberty:masked_marginals_all:250", "antiberty:mutant_marginals:250", "antiberty:hcb:50",
    "antiberty:masked_marginals_mt:50", "sapiens-vh:gdpa1_pll:all", "sapiens-vh:pll_delta:25",
    "antiberty:pll_delta:5", "antiberty:ag:all", "antiberty:masked_marginals_all:2000",
    "antiberty:mutant_marginals:2000", "antiberty:hcb:200", "antiberty:masked_marginals_mt:200",
    "sapiens-vh:pll_delta:100", "sapiens-vh:hcb:2000", "sapiens-vh:masked_marginals_mt:2000",
    "antiberty:jain_pll:all", "antiberty:pll_delta:10", "antiberty:hcb:500", "antiberty:masked_marginals_mt:500",
    "antiberty:gdpa1_pll:all", "sapiens-vh:chain:500", "sapiens-vh:gdpa1_loglik:all", "sapiens-vh:jain_loglik:all",
    "antiberty:chain:50", "sapiens-vh:chain:1000", "antiberty:chain:100",
])
NEEDED = (POS_CSV, NEG_CSV, GDPA1_CSV, JAIN_CSV)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mlmprob.experiments.variants_data",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--out", required=True, help="folder of the raw result files")
    add_data_option(p, ", ".join(NEEDED))
    p.add_argument("--plan", default=DEFAULT_PLAN, help="comma list of model:group:n stages, run in order")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the library ordering (the subsamples)")
    p.add_argument("--threads", type=positive_int, default=2, help="torch CPU threads")
    p.add_argument("--batch-tokens", type=positive_int, default=DEFAULT_BATCH_TOKENS, help='tokens per forward sub-batch')
    p.add_argument("--report", help="report path (default: README.md in the parent of --out)")
    p.add_argument("--n-boot", type=positive_int, default=1000, help="bootstrap resamples of the report")
    p.add_argument("--report-only", action="store_true", help="only rebuild the report from the files in --out")
    p.add_argument("--no-report", action="store_true", help='do not rewrite the report after the run')
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    return exit_status(lambda: _main(args, argv))


def _main(args, argv) -> int:
    out = Path(args.out)
    data = resolve_data_dir(args.data, NEEDED) if not args.report_only or args.data else None
    if not args.report_only:
        stages = parse_plan(args.plan)
        torch.set_num_threads(args.threads)
        lib = load_library(data, args.seed)
        with ResumableLog(out / RUNS_FILE) as runs:     # held for the whole run: one runner per --out
            write_library_meta(out, lib)
            cmd = "python -m mlmprob.experiments.variants_data " + shlex.join(argv)
            started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            runs.append({"event": "start", "command": cmd, "started": started, "threads": args.threads,
                         "plan": args.plan})
            t0 = time.perf_counter()
            written = Runner(out, data, lib, batch_tokens=args.batch_tokens,
                             log=lambda s: print(s, flush=True)).run(stages)
            runs.append({"event": "finish", "command": cmd, "started": started,
                         "wall_s": round(time.perf_counter() - t0, 1), "chunks_written": written})
    if not args.no_report:
        from .variants_data_report import write_report

        report = Path(args.report) if args.report else out.parent / "README.md"
        write_report(out, report, data=data, n_boot=args.n_boot)
        print(f"report: {report}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

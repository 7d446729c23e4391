"""Variant effects and developability on real data: the trastuzumab CDR-H3 library (binder vs
non-binder, Mason et al. 2021) scored by every ``score_variants`` method with AntiBERTy and
Sapiens-VH against sequence-only baselines, and the PLL and left-to-right chain-rule log-likelihood
of GDPa1 and Jain-137 VH domains against their assays (issue 13, section 3; ``chain`` and the
log-likelihood: issue 20).

Usage::

    nohup nice -n 5 python -m experiments.variants_data --out docs/results/variants/raw \\
        --threads 2 > variants.log 2>&1 &
    python -m experiments.variants_data --out docs/results/variants/raw --report-only

``--plan`` lists the stages ``model:group:n`` (``n`` variants per class of the ordered library, or
``all``) in the order they run; the default runs the cheap scores first and grows the subsamples
of the expensive ones after (see ``DEFAULT_PLAN``). Each chunk is appended to its file in ``--out``
when scored; a rerun (after a kill too) skips the chunks already there. The report
(``variants_data_report``) is written to ``--report`` (default: ``README.md`` beside ``--out``) from
whatever chunks exist.
"""

from __future__ import annotations

import argparse
import datetime
from collections.abc import Sequence
from pathlib import Path

from mlmprob.argtypes import nonnegative_int, positive_int  # noqa: E402
from mlmprob.batching import DEFAULT_BATCH_TOKENS

from . import runner
from .data_option import add_data_option, resolve_data_dir
from .runner import Experiment, Run
from .variants_data_common import GDPA1_CSV, JAIN_CSV, NEG_CSV, POS_CSV, RUNS_FILE, load_library, write_library_meta
from .variants_data_runner import Runner, parse_plan

DEFAULT_PLAN = ",".join(
    [
        "baseline:baselines:all",
        "sapiens-vh:marginals:all",
        "antiberty:marginals:all",
        "sapiens-vh:masked_marginals_all:2000",
        "sapiens-vh:mutant_marginals:2000",
        "sapiens-vh:hcb:500",
        "sapiens-vh:masked_marginals_mt:500",
        "sapiens-vh:ag:all",
        "sapiens-vh:jain_pll:all",
        "antiberty:masked_marginals_all:250",
        "antiberty:mutant_marginals:250",
        "antiberty:hcb:50",
        "antiberty:masked_marginals_mt:50",
        "sapiens-vh:gdpa1_pll:all",
        "sapiens-vh:pll_delta:25",
        "antiberty:pll_delta:5",
        "antiberty:ag:all",
        "antiberty:masked_marginals_all:2000",
        "antiberty:mutant_marginals:2000",
        "antiberty:hcb:200",
        "antiberty:masked_marginals_mt:200",
        "sapiens-vh:pll_delta:100",
        "sapiens-vh:hcb:2000",
        "sapiens-vh:masked_marginals_mt:2000",
        "antiberty:jain_pll:all",
        "antiberty:pll_delta:10",
        "antiberty:hcb:500",
        "antiberty:masked_marginals_mt:500",
        "antiberty:gdpa1_pll:all",
        "sapiens-vh:chain:500",
        "sapiens-vh:gdpa1_loglik:all",
        "sapiens-vh:jain_loglik:all",
        "antiberty:chain:50",
        "sapiens-vh:chain:1000",
        "antiberty:chain:100",
    ]
)
NEEDED = (POS_CSV, NEG_CSV, GDPA1_CSV, JAIN_CSV)


class VariantsData(Experiment):
    """Units: the plan's stages, in order; each stage's chunks go to its own file in ``--out``
    (``variants_data_runner.Runner``), so the runner holds ``runs.jsonl`` (one runner per ``--out``)."""

    prog = "experiments.variants_data"
    formatter_class = argparse.ArgumentDefaultsHelpFormatter
    results = None  # one file per stage, written by the stage
    journal = RUNS_FILE
    out_help = "folder of the raw result files"
    threads_default = 2
    report_only_help = "only rebuild the report from the files in --out"

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        add_data_option(p, ", ".join(NEEDED))
        p.add_argument("--plan", default=DEFAULT_PLAN, help="comma list of model:group:n stages, run in order")
        p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the library ordering (the subsamples)")
        p.add_argument(
            "--batch-tokens", type=positive_int, default=DEFAULT_BATCH_TOKENS, help="tokens per forward sub-batch"
        )
        p.add_argument("--report", help="report path (default: README.md in the parent of --out)")
        p.add_argument("--n-boot", type=positive_int, default=1000, help="bootstrap resamples of the report")
        p.add_argument("--no-report", action="store_true", help="do not rewrite the report after the run")

    def setup(self, run: Run) -> None:
        a = run.args
        run.state["data"] = data = resolve_data_dir(a.data, NEEDED)
        run.state["stages"] = parse_plan(a.plan)
        lib = run.state["lib"] = load_library(data, a.seed)
        run.state["runner"] = Runner(
            run.out, data, lib, batch_tokens=a.batch_tokens, log=lambda s: print(s, flush=True)
        )

    def resume(self, run: Run) -> None:
        write_library_meta(run.out, run.state["lib"])  # with runs.jsonl held

    def units(self, run: Run):
        return run.state["stages"]

    def finished(self, run: Run, stage) -> bool:
        return False  # a stage skips the chunks its file holds

    def run_unit(self, run: Run, stage):
        return run.state["runner"].stage_chunks(stage)

    def start_entry(self, run: Run) -> dict:
        run.state["started"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        return {
            "event": "start",
            "command": run.command,
            "started": run.state["started"],
            "threads": run.args.threads,
            "plan": run.args.plan,
        }

    def finish_entry(self, run: Run, wall_s: float) -> dict:
        return {
            "event": "finish",
            "command": run.command,
            "started": run.state["started"],
            "wall_s": wall_s,
            "chunks_written": {str(s): run.written.get(str(s), 0) for s in run.state["stages"]},
        }

    def report(self, run: Run) -> None:
        from .variants_data_report import write_report

        a = run.args
        data = run.state.get("data") or (resolve_data_dir(a.data, NEEDED) if a.data else None)
        report = Path(a.report) if a.report else run.out.parent / "README.md"
        write_report(run.out, report, data=data, n_boot=a.n_boot)
        print(f"report: {report}")


def build_parser() -> argparse.ArgumentParser:
    return runner.build_parser(VariantsData())


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run_cli(VariantsData(), argv)


if __name__ == "__main__":
    raise SystemExit(main())

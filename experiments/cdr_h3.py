"""CDR-H3 redesign with MH and degenerate-Gibbs samplers (and ancestral draws): the experiments of
Goyal et al. (2022), Tables 1-5 and Figures 1, 2, 4, on antibody heavy chains instead of translation.

Task: for each of the first ``--n-antibodies`` heavy chains of a CSV (column ``HC``; ``--data DIR``
reads ``DIR/antibody/thera_sabdab.csv``, by default in the shared data folder, ``--data FILE.csv``
any other) whose CDR-H3 ``find_cdr_h3`` locates, the CDR-H3 residues are free and everything else
(framework, other CDRs) is clamped; the CDR-H3 length is kept. As in the paper (Alg. 1, line 3) every chain
starts from the *warm start*: CDR-H3 masked and filled with the model's arg-max in one pass. Each
configuration runs ``--chains`` chains per antibody for ``--burn-in + --epochs`` epochs (one
epoch = one sweep over the CDR-H3 positions in random order), all chains of all pending
antibodies in one batched ``sample`` call. Energies ``E_local`` (= -PLL) and ``E_raw`` are summed
over the CDR-H3 positions only. Metrics per chain and epoch: both energies, acceptance and
novel-transition rates, identity and BLEU-4 of the designed CDR-H3 to the native one, and the
stutter rate (share of adjacent equal residues; Li et al.'s failure mode).

Configurations (names are stable keys of the result file):

- ``t1/{mh-local,gibbs}-pt{2.0,1.5,1.0,0.8,0.5}``: proposal temperature (Table 1);
- ``t2/{mh-local,gibbs}-topp{0.99,0.95,0.9,0.8}``: nucleus (Table 2; its 1.0 column is Table 1's
  ``pt1.0``);
- ``t3/block-{gibbs,mh-raw,mh-local}``: block size decreasing linearly from 4 to 1 over the run
  (Table 3, Figure 4);
- ``t4/anneal{0.02,0.04,0.06}-mh-{local,raw}``: target temperature ``1 - rate * epoch`` (Table 4,
  Figure 2);
- ``t5/warm-start``, ``t1/gibbs-pt0.8`` (degenerate Gibbs T=0.8), ``t5/mask-predict-it10``,
  ``t5/mh-{local,raw}-pt0.8-anneal0.02`` (Table 5; proposal temperature 0.8 as in the paper's App. F);
- ``f1/mh-raw-pt1.0``: the third sampler of Figure 1;
- ``u/{warm-start,mask-predict-it10,gibbs-pt1.0,mh-local-pt1.0}``: unconditional generation of a
  length-``--uncond-length`` sequence from all-mask initialisation (no clamped context).
- ``t6/ancestral-{l2r,random}`` (table ``6``): ancestral draws of the chain-rule distribution
  ``p_sigma`` (``sample(method="ancestral")``; l2r, or a fresh random order per chain and epoch), beside
  the warm start, MH-local and degenerate Gibbs at proposal temperature 1.0.

Result files in ``--out``: ``results.jsonl`` (one line per configuration x antibody x chain;
a rerun skips the finished (configuration, antibody) units), ``runs.jsonl`` (each invocation's
command line and wall time), ``work/`` (the ``sample`` run files of the configuration in
progress, so that a killed run resumes mid-configuration; deleted when it finishes), and the
report (``report.md``, ``fig*.png``; see ``cdr_h3_report``).

Usage::

    python -m experiments.cdr_h3 --model sapiens-vh --out docs/results/sampling/sapiens-vh \\
        --tables 1,2,3,4,5,u --epochs 4 --burn-in 2 --n-antibodies 20 --chains 3
    python -m experiments.cdr_h3 --model sapiens-vh --out ... --report-only

``--only NAME[,NAME]`` runs just those configurations (e.g. to time one).

Code: this module is the command line; ``cdr_h3_units`` loads and encodes the antibodies, ``cdr_h3_runner``
runs the chains, ``cdr_h3_report`` writes the report (its tables built by ``cdr_h3_tables``), and both take
the configurations, metrics and file names from ``cdr_h3_common``.
"""

from __future__ import annotations

import argparse
import datetime
from collections.abc import Sequence
from pathlib import Path

from mlmprob.argtypes import nonnegative_int, positive_int  # noqa: E402
from mlmprob.batching import DEFAULT_BATCH_TOKENS
from mlmprob.models.reader import reader_of
from mlmprob.runtime.log import append_record

from . import runner

# the runner's and the shared names, importable from here as before the split
from .cdr_h3_common import (
    ANNEALS,
    BLOCK_START,
    CONFIGS,
    MP_ITERATIONS,
    PTEMPS,
    RESULTS_FILE,
    RUNS_FILE,
    T5_ANNEAL,
    TABLES,
    TOPPS,
    WORK_DIR,
    Config,
    RunOptions,
    read_results,
    select_configs,
    seq_metrics,
)
from .cdr_h3_report import write_report
from .cdr_h3_runner import CdrH3Units, done_units, run_config, run_experiment
from .cdr_h3_units import Antibody, load_antibodies, prepare_units
from .data_option import add_data_option, resolve_data_dir
from .runner import Run

__all__ = [
    "ANNEALS",
    "ANTIBODY_CSV",
    "BLOCK_START",
    "CONFIGS",
    "CdrH3",
    "MP_ITERATIONS",
    "PTEMPS",
    "RESULTS_FILE",
    "RUNS_FILE",
    "T5_ANNEAL",
    "TABLES",
    "TOPPS",
    "WORK_DIR",
    "Antibody",
    "Config",
    "RunOptions",
    "antibody_csv",
    "build_parser",
    "done_units",
    "load_antibodies",
    "main",
    "prepare_units",
    "read_results",
    "run_config",
    "run_experiment",
    "select_configs",
    "seq_metrics",
]


# -- command line ----------------------------------------------------------------------------------

ANTIBODY_CSV = "antibody/thera_sabdab.csv"


def antibody_csv(data: str | Path | None) -> Path:
    """The antibody CSV of ``--data``: a CSV file as given, or a folder's ``antibody/thera_sabdab.csv``
    (default: the shared data folder); a clear error naming the file and ``--data`` when absent."""
    if data is not None and Path(data).is_file():
        return Path(data)
    return resolve_data_dir(data, [ANTIBODY_CSV]) / ANTIBODY_CSV


class CdrH3(CdrH3Units):
    """The command line of the CDR-H3 experiment on the runner (the units: ``cdr_h3_runner.CdrH3Units``)."""

    prog = "experiments.cdr_h3"
    formatter_class = argparse.ArgumentDefaultsHelpFormatter
    results = RESULTS_FILE
    journal = RUNS_FILE
    threads_default = 1
    threads_help = "torch CPU threads (1 is fastest on a loaded machine)"
    report_only_help = "only rebuild report.md and the figures"

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--model", required=True, help="antiberty, sapiens-vh or a local Hugging Face folder")
        add_data_option(p, f"{ANTIBODY_CSV}; or give a CSV file of antibodies")
        p.add_argument("--column", default="HC", help="heavy-chain column of the antibody CSV")
        p.add_argument("--id-column", default="Therapeutic", help="antibody name column of the CSV")
        p.add_argument(
            "--tables",
            default="1,2,3,4,5,6,u",
            help="comma list of 1..6 and u (unconditional); 6: ancestral sampling beside MH and Gibbs",
        )
        p.add_argument("--only", help="comma list of configuration names (overrides --tables for running)")
        p.add_argument("--epochs", type=positive_int, default=4, help="epochs after burn-in")
        p.add_argument("--burn-in", type=nonnegative_int, default=2, help="burn-in epochs per chain")
        p.add_argument(
            "--n-antibodies", type=positive_int, default=20, help="antibodies sampled (the first N of the CSV)"
        )
        p.add_argument("--chains", type=positive_int, default=3, help="chains per antibody and configuration")
        p.add_argument("--cdr-definition", choices=("imgt", "kabat"), default="imgt", help="CDR-H3 numbering scheme")
        p.add_argument(
            "--uncond-length", type=positive_int, default=120, help="sequence length of the unconditional runs"
        )
        p.add_argument("--uncond-chains", type=positive_int, default=3, help="chains of the unconditional runs")
        p.add_argument(
            "--seed",
            type=nonnegative_int,
            default=0,
            help="base seed (each unit's generator is derived from it and the unit's name)",
        )
        p.add_argument(
            "--dtype",
            default="float32",
            help="model dtype (float32: the dtype of the stored results, whatever load_mlm's default on this machine)",
        )
        p.add_argument(
            "--batch-tokens", type=positive_int, default=DEFAULT_BATCH_TOKENS, help="tokens per forward sub-batch"
        )
        p.add_argument("--no-report", action="store_true", help="do not rewrite the report after the run")
        p.add_argument("--note", default="", help="free text recorded with this invocation in runs.jsonl")

    @staticmethod
    def options(args) -> RunOptions:
        return RunOptions(
            args.epochs, args.burn_in, args.chains, args.uncond_length, args.uncond_chains, args.seed, args.batch_tokens
        )

    def setup(self, run: Run) -> None:
        args = run.args
        csv = antibody_csv(args.data)
        configs = select_configs(
            [t.strip() for t in args.tables.split(",") if t.strip()],
            [n.strip() for n in args.only.split(",")] if args.only else None,
        )
        from mlmprob.models import load_mlm

        mlm = load_mlm(args.model, dtype=args.dtype)
        abs_ = load_antibodies(
            csv,
            args.n_antibodies,
            args.column,
            args.id_column,
            args.cdr_definition,
            max_residues=None if reader_of(mlm).max_length is None else mlm.max_length - 2,
        )
        run.out.mkdir(parents=True, exist_ok=True)
        run.state.update(
            mlm=mlm, antibodies=abs_, configs=configs, opts=self.options(args), log=lambda s: print(s, flush=True)
        )

    def start_entry(self, run: Run) -> dict:
        a = run.args
        run.state["started"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        return {
            "event": "start",
            "command": run.command,
            "started": run.state["started"],
            "threads": a.threads,
            "dtype": a.dtype,
            "note": a.note,
        }

    def finish_entry(self, run: Run, wall_s: float) -> dict:
        return {
            "event": "finish",
            "command": run.command,
            "started": run.state["started"],
            "wall_s": wall_s,
            "written": dict(run.written),
            "note": run.args.note,
        }

    def record_run(self, run: Run, entry: dict) -> None:
        _append_run(run.out, entry)

    def report(self, run: Run) -> None:
        path = write_report(run.out, self.options(run.args), model=run.args.model)
        print(f"report: {path}")


def build_parser() -> argparse.ArgumentParser:
    return runner.build_parser(CdrH3())


def _append_run(out: Path, entry: dict) -> None:
    append_record(out / RUNS_FILE, entry)


def main(argv: Sequence[str] | None = None) -> int:
    return runner.run_cli(CdrH3(), argv)


if __name__ == "__main__":
    raise SystemExit(main())

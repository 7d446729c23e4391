"""Infilling experiments on antibody heavy chains and English sentences: resumable JSONL results and
the paper's tables.

Datasets: antibody heavy chains (``gdpa1``, ``thera``; gaps of ``k`` residues, regions ``random`` and
``cdrh3``; see ``antibody_gaps``) and English sentences (``snli``, ``xsum``; gaps of ``k`` sub-word
tokens of each model's own tokenization, region ``random``; see ``english_gaps``). English fills range
over the model's whole vocabulary less its special tokens (its ``proposal_ids`` if it has them), and
their metrics compare token ids (English records also hold ``gold_ids`` and ``fill_ids``).

One JSONL record per (model, dataset, region, k, gap, method) with the ranked fills, their scores,
the per-gap metrics and the forward rows used. A rerun with the same output file skips finished
records (a line cut by a kill is dropped and redone). Tables (markdown):

- Table 1 shape: methods x (metric, number of missing residues or tokens), one per model and region;
- Table 2 shape: methods x models (a metric averaged over all gap lengths), one per region;
- Table 3 shape: HCB, standard and the two ablations x models;
- Table 4: HCB vs standard beam search paired on the same gaps, with an exact sign test (``infill_paired``).

Smoke run (a minute on a laptop CPU)::

    python -m experiments.infill_runner --models sapiens-vh --n-gaps 5 --lengths 2 3 4 5 6 7 \\
        --out results/infill_smoke.jsonl --tables results/infill_smoke.md

English (any masked LM with a sub-word tokenizer; gaps of 1-4 tokens here)::

    python -m experiments.infill_runner --models en-small --dataset snli --n-gaps 100 --lengths 1 2 3 4 \\
        --out results/infill_en_snli.jsonl --tables results/infill_en_snli.md

Randomness: gap draws from ``seed`` (gap ``i`` is the same whatever ``n_gaps``); each
sampling/ablation record from a generator seeded by its key (so results do not depend on
resumption), except the context-scramble memory, which is filled by the gaps run since the start of
the process.

Code: this module draws the gaps, runs and records them, and is the command line; the datasets,
methods and metrics are in ``infill_choices``, one gap's measurement in ``infill_measure``, the tables in
``infill_tables``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from mlmprob.argtypes import nonnegative_int, positive_int  # noqa: E402
from mlmprob.errors import MLMProbError
from mlmprob.infilling.corrections import ContextScramble
from mlmprob.runtime.log import read_log

from .antibody_gaps import load_chains, sample_gaps
from .data_option import add_data_option, resolve_data_dir
from .english_gaps import encode_sentences, load_sentences, sample_token_gaps, seed_of

# the choices and the tables, importable from here as before they had modules of their own
from .infill_choices import (
    ABLATION_ORDER,
    ABLATIONS,
    ANTIBODY_DATASETS,
    BEAM_METHODS,
    DATA_FILES,
    DATASETS,
    LABELS,
    METHODS,
    METRICS,
    REGIONS,
    dataset_files,
    dataset_regions,
    is_english,
    run_method,
)
from .infill_measure import CountingMLM, measure_gap
from .infill_tables import metric_means, table_ablations, table_methods_by_k, table_models, tables_markdown, unit_of
from .runner import LogFileExperiment, Run, run_units
from .runner import run_cli as runner_main

__all__ = [
    "ABLATION_ORDER",
    "ABLATIONS",
    "ANTIBODY_DATASETS",
    "BEAM_METHODS",
    "DATASETS",
    "LABELS",
    "METHODS",
    "METRICS",
    "REGIONS",
    "ExperimentConfig",
    "dataset_files",
    "dataset_regions",
    "draw_data",
    "is_english",
    "main",
    "model_gaps",
    "model_label",
    "record_key",
    "report_progress",
    "run_experiment",
    "run_method",
    "metric_means",
    "table_ablations",
    "table_methods_by_k",
    "table_models",
    "tables_markdown",
    "unit_of",
]


@dataclass(frozen=True)
class ExperimentConfig:
    models: tuple[str, ...] = ("antiberty", "sapiens-vh")
    dataset: str = "gdpa1"
    regions: tuple[str, ...] | None = None  # None: every region of the dataset
    lengths: tuple[int, ...] = (2, 3, 4, 5, 6, 7)
    n_gaps: int = 300
    beam_size: int = 20
    methods: tuple[str, ...] = METHODS
    seed: int = 0
    device: str = "cpu"
    dtype: str | None = None

    def __post_init__(self):
        bad = [m for m in self.methods if m not in METHODS]
        if bad:
            raise MLMProbError(f"unknown method(s) {', '.join(bad)}; choose from {', '.join(METHODS)}")
        allowed = dataset_regions(self.dataset)
        if self.regions is None:
            object.__setattr__(self, "regions", allowed)
        bad = [r for r in self.regions if r not in allowed]
        if bad:
            raise MLMProbError(
                f"unknown region(s) {', '.join(bad)} for dataset {self.dataset}; choose from {', '.join(allowed)}"
            )
        if not self.regions or not self.models or not self.methods:
            raise MLMProbError("give at least one model, region and method")
        if self.n_gaps < 1 or self.beam_size < 1 or not self.lengths or min(self.lengths) < 1:
            raise MLMProbError("n_gaps, beam_size and every gap length must be positive")


def model_label(name: str, dtype: str | None) -> str:
    """The ``model`` field of a record: the name, plus ``@dtype`` when the weights were cast, so that
    runs in another precision never mix with (or resume) full-precision records. Seeds use the bare
    name, so both precisions see the same gaps and random streams.

    >>> model_label("antiberty", None), model_label("antiberty", "bf16")
    ('antiberty', 'antiberty@bf16')
    """
    return name if dtype is None else f"{name}@{dtype}"


def record_key(rec: dict) -> tuple:
    return (rec["model"], rec["dataset"], rec["region"], int(rec["k"]), int(rec["gap_id"]), rec["method"])


def model_gaps(config: ExperimentConfig, mlm, source, antibody: dict | None, progress: bool) -> dict:
    """Gaps per (region, k): the antibody draws, or English ones from this model's tokenization."""
    if antibody is not None:
        return antibody
    enc = encode_sentences(mlm, source)
    if progress and enc.skipped:
        print(
            f"{config.dataset}: {len(enc.skipped)} of {len(source)} sentences skipped (e.g. "
            f"{enc.skipped[0][0]}: {enc.skipped[0][1]})",
            file=sys.stderr,
        )
    return {
        (region, k): sample_token_gaps(enc.sentences, config.dataset, k, config.n_gaps, config.seed, region)
        for region in config.regions
        for k in config.lengths
    }


def draw_data(config: ExperimentConfig, data_dir: str | Path) -> tuple[list, dict | None]:
    """The data of ``config``: ``(chains, gaps per (region, k))`` for antibodies; ``(sentences, None)``
    for English, whose gaps depend on each model's tokenizer (``model_gaps`` draws them)."""
    if is_english(config.dataset):
        return load_sentences(config.dataset, data_dir), None
    chains = load_chains(config.dataset, data_dir)
    return chains, {
        (region, k): sample_gaps(
            chains, k, config.n_gaps, region, torch.Generator().manual_seed(seed_of(config.seed, region, k))
        )
        for region in config.regions
        for k in config.lengths
    }


class Infill(LogFileExperiment):
    """Units: (model, region, k, gap, method), one record each; ``--out`` is the result file."""

    prog = "experiments.infill_runner"
    description = globals()["__doc__"].split("\n")[0]  # the module's first line
    report_only_flag = "--tables-only"
    report_only_help = "only build --tables from --out"

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        d = ExperimentConfig()
        p.add_argument("--tables", help="write the markdown tables here (from every record in --out)")
        p.add_argument("--models", nargs="+", default=list(d.models), help="models (names or local directories)")
        p.add_argument(
            "--dataset",
            default=d.dataset,
            choices=list(DATASETS),
            help="antibody heavy chains (gdpa1, thera) or English sentences (snli, xsum)",
        )
        p.add_argument(
            "--regions",
            nargs="+",
            default=None,
            choices=list(REGIONS),
            help="default: every region of the dataset (English: random only)",
        )
        p.add_argument("--lengths", nargs="+", type=positive_int, default=list(d.lengths), help="gap lengths k")
        p.add_argument("--n-gaps", type=positive_int, default=d.n_gaps, help="gaps per (region, length)")
        p.add_argument("--beam-size", type=positive_int, default=d.beam_size, help="beam width")
        p.add_argument(
            "--methods", nargs="+", default=list(d.methods), choices=list(METHODS), help="infilling methods to run"
        )
        p.add_argument("--seed", type=nonnegative_int, default=d.seed, help="seed of the gap draws")
        p.add_argument("--device", default="cpu", help="device (auto, cpu, cuda, ...)")
        p.add_argument("--dtype", default=None, help="model dtype (default: the weights')")
        add_data_option(p, f"the dataset's files ({', '.join(DATA_FILES)})", "--data-dir")

    def setup(self, run: Run) -> None:
        if "config" not in run.state:
            a = run.args
            data_dir = resolve_data_dir(a.data, dataset_files(a.dataset))
            run.state.update(
                config=ExperimentConfig(
                    tuple(a.models),
                    a.dataset,
                    tuple(a.regions) if a.regions else None,
                    tuple(a.lengths),
                    a.n_gaps,
                    a.beam_size,
                    tuple(a.methods),
                    a.seed,
                    a.device,
                    a.dtype,
                ),
                data_dir=data_dir,
                progress=True,
            )
        config = run.state["config"]
        if run.state.get("load") is None:
            from mlmprob.models import load_mlm

            run.state["load"] = lambda name: load_mlm(name, device=config.device, dtype=config.dtype)
        run.out.parent.mkdir(parents=True, exist_ok=True)
        run.state["source"], run.state["antibody"] = draw_data(config, run.state["data_dir"])

    def key(self, record: dict) -> tuple:
        return record_key(record)

    def units(self, run: Run):
        config = run.state["config"]
        for model_name in config.models:
            label = model_label(model_name, config.dtype)
            todo = [
                (label, config.dataset, region, k, g, m)
                for region in config.regions
                for k in config.lengths
                for g in range(config.n_gaps)
                for m in config.methods
            ]
            todo = [u for u in todo if u not in run.done]
            if todo:  # the model is loaded only when it has records to run
                mlm = CountingMLM(run.state["load"](model_name))
                run.state.update(
                    model=model_name,
                    mlm=mlm,
                    todo=len(todo),
                    t0=time.time(),
                    gaps=model_gaps(config, mlm, run.state["source"], run.state["antibody"], run.state["progress"]),
                    scramble=ContextScramble(
                        mlm.mask_id, torch.Generator().manual_seed(seed_of(config.seed, model_name))
                    ),
                )
            for i, unit in enumerate(todo):
                run.state["i"] = i
                yield unit

    def run_unit(self, run: Run, unit):
        config, mlm, model_name = run.state["config"], run.state["mlm"], run.state["model"]
        label, _, region, k, gap_id, method = unit
        gap = run.state["gaps"][(region, k)][gap_id]
        gen = torch.Generator().manual_seed(seed_of(config.seed, model_name, region, k, gap.gap_id, method))
        scramble = run.state["scramble"]
        yield {
            "model": label,
            "dataset": config.dataset,
            "region": region,
            "k": k,
            "gap_id": gap.gap_id,
            "method": method,
            "chain_id": gap.chain_id,
            "start": gap.start,
            "beam_size": config.beam_size,
            **measure_gap(
                mlm, gap, lambda ids, cols: run_method(method, mlm, ids, cols, config.beam_size, gen, scramble)
            ),
        }
        if run.state["progress"]:
            report_progress(label, run.state["i"] + 1, run.state["todo"], run.state["t0"])

    def report(self, run: Run) -> None:
        a = run.args
        if not a.report_only:
            print(f"{sum(run.written.values())} new records in {a.out}", file=sys.stderr)
        if a.tables:
            Path(a.tables).parent.mkdir(parents=True, exist_ok=True)
            Path(a.tables).write_text(tables_markdown(list(read_log(Path(a.out)))))
            print(f"tables written to {a.tables}", file=sys.stderr)


def run_experiment(
    config: ExperimentConfig,
    out: str | Path,
    *,
    data_dir: str | Path,
    load: Callable | None = None,
    progress: bool = True,
) -> int:
    """Run every missing record of ``config`` into ``out`` (JSONL, appended). Returns the number of
    new records. ``load(name)`` gives a masked LM (default ``load_mlm`` on ``config.device``)."""
    r = Run(
        argparse.Namespace(out=str(out)),
        [],
        Path(out),
        "",
        experiment=Infill(),
        state={"config": config, "data_dir": data_dir, "load": load, "progress": progress},
    )
    r.experiment.setup(r)
    return sum(run_units(r.experiment, r, journal=False).values())


def report_progress(label: str, done: int, total: int, t0: float, every: int = 50) -> None:
    """Every ``every`` records, a line on stderr: records done of ``total`` and the rate since ``t0``."""
    if done % every == 0:
        print(f"[{label}] {done}/{total} records, {done / (time.time() - t0):.1f}/s", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    return runner_main(Infill(), argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

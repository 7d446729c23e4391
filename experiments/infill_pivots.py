"""How HCB beam search depends on its pivot token (Calef et al., Sec. 6 "choice of pivot", Fig. 2/5).

HCB's correction ``-log q(v | input)`` can use any output token ``v`` as pivot; the default is the mask.
This sweep runs HCB beam search with every pivot of a model's output vocabulary (or a chosen list) on
the same gaps as the infilling runner (same data, seed and gap ids), next to standard beam search on
those gaps, and reports top-k accuracy per pivot with a paired sign test against standard.

One JSONL record per (model, dataset, region, k, gap, order, pivot); ``pivot`` is ``null`` for
standard beam search. Resumable like the runner (finished records are skipped)::

    python -m experiments.infill_pivots --model antiberty --dtype bf16 --region cdrh3 --k 3 --n-gaps 50 \\
        --out results/pivots.jsonl --report results/pivots.md --plot results/pivots.png
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mlmprob.argtypes import nonnegative_int, positive_int  # noqa: E402
from mlmprob.errors import MLMProbError
from mlmprob.infilling.beam import beam_search, make_correction
from mlmprob.metrics.significance import exact_sign_test
from mlmprob.models.reader import reader_of
from mlmprob.runtime.log import read_log

from .data_option import add_data_option, resolve_data_dir
from .infill_choices import DATA_FILES, DATASETS, REGIONS, dataset_files
from .infill_measure import CountingMLM, measure_gap
from .infill_paired import discordant
from .infill_runner import ExperimentConfig, draw_data, model_gaps, model_label, report_progress
from .runner import LogFileExperiment, Run, run_units
from .runner import run_cli as runner_main


def token_name(mlm, token_id: int) -> str:
    """A printable name of an output token (the tokenizer's own string when it has one)."""
    tok = reader_of(mlm).tokenizer
    tokens = getattr(tok, "tokens", None)
    if tokens is not None and 0 <= token_id < len(tokens):
        return str(tokens[token_id])
    hf = getattr(tok, "hf", None)
    if hf is not None:
        return str(hf.convert_ids_to_tokens(int(token_id)))
    return str(token_id)


@dataclass(frozen=True)
class PivotSweepConfig:
    model: str = "antiberty"
    dataset: str = "gdpa1"
    region: str = "cdrh3"
    k: int = 3
    n_gaps: int = 50
    beam_size: int = 20
    order: str = "l2r"
    pivots: tuple[int, ...] | None = None  # None: every output token of the model
    seed: int = 0
    device: str = "cpu"
    dtype: str | None = None

    def experiment(self) -> ExperimentConfig:
        """The runner config whose gaps this sweep uses (validates dataset, region, sizes)."""
        return ExperimentConfig(
            models=(self.model,),
            dataset=self.dataset,
            regions=(self.region,),
            lengths=(self.k,),
            n_gaps=self.n_gaps,
            beam_size=self.beam_size,
            methods=("hcb-" + self.order,),
            seed=self.seed,
            device=self.device,
            dtype=self.dtype,
        )


def _key(rec: dict) -> tuple:
    return (rec["model"], rec["dataset"], rec["region"], int(rec["k"]), int(rec["gap_id"]), rec["order"], rec["pivot"])


class PivotSweep(LogFileExperiment):
    """Units: (gap, pivot), standard beam search first (pivot None); ``--out`` is the result file."""

    prog = "experiments.infill_pivots"
    description = globals()["__doc__"].split("\n")[0]  # the module's first line
    report_only_help = "only build --report/--plot from --out"

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        d = PivotSweepConfig()
        p.add_argument("--report", help="write the markdown table here")
        p.add_argument("--plot", help="write the bar chart (PNG) here")
        p.add_argument("--model", default=d.model, help="model name or local directory")
        p.add_argument("--dataset", default=d.dataset, choices=list(DATASETS), help="gap source")
        p.add_argument("--region", default=d.region, choices=list(REGIONS), help="where gaps are drawn")
        p.add_argument("--k", type=positive_int, default=d.k, help="gap length")
        p.add_argument("--n-gaps", type=positive_int, default=d.n_gaps, help="gaps in the sweep")
        p.add_argument("--beam-size", type=positive_int, default=d.beam_size, help="beam width")
        p.add_argument("--order", default=d.order, choices=["l2r", "best"], help="fill order of the beam search")
        p.add_argument(
            "--pivots", nargs="+", type=nonnegative_int, default=None, help="token ids (default: every output token)"
        )
        p.add_argument("--seed", type=nonnegative_int, default=d.seed, help="seed of the gap draw")
        p.add_argument("--device", default=d.device, help="device (auto, cpu, cuda, ...)")
        p.add_argument("--dtype", default=None, help="model dtype (default: the weights')")
        add_data_option(p, f"the dataset's files ({', '.join(DATA_FILES)})", "--data-dir")

    def setup(self, run: Run) -> None:
        if "config" not in run.state:
            a = run.args
            data_dir = resolve_data_dir(a.data, dataset_files(a.dataset))
            run.state.update(
                config=PivotSweepConfig(
                    a.model,
                    a.dataset,
                    a.region,
                    a.k,
                    a.n_gaps,
                    a.beam_size,
                    a.order,
                    None if a.pivots is None else tuple(a.pivots),
                    a.seed,
                    a.device,
                    a.dtype,
                ),
                data_dir=data_dir,
                progress=True,
                load=None,
            )
        config = run.state["config"]
        if config.order not in ("l2r", "best"):
            raise MLMProbError(f"order must be 'l2r' or 'best', got {config.order!r}")
        exp = config.experiment()
        load = run.state["load"]
        if load is None:
            from mlmprob.models import load_mlm

            def load(name):
                return load_mlm(name, device=config.device, dtype=config.dtype)

        source, antibody = draw_data(exp, run.state["data_dir"])  # absent data: an error before the model is loaded
        mlm = CountingMLM(load(config.model))
        pivots = list(range(mlm.vocab_size)) if config.pivots is None else list(config.pivots)
        for p in pivots:
            make_correction(mlm, "hcb", p)  # clear error for an id outside the output vocabulary
        run.out.parent.mkdir(parents=True, exist_ok=True)
        gaps = model_gaps(exp, mlm, source, antibody, run.state["progress"])[(config.region, config.k)]
        run.state.update(mlm=mlm, pivots=pivots, gaps=gaps, label=model_label(config.model, config.dtype))

    def key(self, record: dict) -> tuple:
        return _key(record)

    def units(self, run: Run):
        c, label = run.state["config"], run.state["label"]
        todo = [
            (g, p)
            for g in run.state["gaps"]
            for p in [None] + run.state["pivots"]
            if (label, c.dataset, c.region, c.k, g.gap_id, c.order, p) not in run.done
        ]
        run.state.update(todo=len(todo), t0=time.time())
        for i, unit in enumerate(todo):
            run.state["i"] = i
            yield unit

    def finished(self, run: Run, unit) -> bool:
        return False  # units() yields the pending ones only

    def run_unit(self, run: Run, unit):
        config, mlm, (gap, pivot) = run.state["config"], run.state["mlm"], unit
        corr = make_correction(mlm, "standard" if pivot is None else "hcb", pivot)
        yield {
            "model": run.state["label"],
            "dataset": config.dataset,
            "region": config.region,
            "k": config.k,
            "gap_id": gap.gap_id,
            "order": config.order,
            "pivot": pivot,
            "pivot_token": None if pivot is None else token_name(mlm, pivot),
            "mask_pivot": pivot == mlm.mask_id,
            "beam_size": config.beam_size,
            **measure_gap(
                mlm,
                gap,
                lambda ids, cols: beam_search(
                    mlm, ids, cols, correction=corr, order=config.order, beam_size=config.beam_size
                ),
            ),
        }
        if run.state["progress"]:
            report_progress(run.state["label"], run.state["i"] + 1, run.state["todo"], run.state["t0"])

    def report(self, run: Run) -> None:
        a = run.args
        if not a.report_only:
            print(f"{sum(run.written.values())} new records in {a.out}", file=sys.stderr)
        rows = summarize_sweep(list(read_log(Path(a.out))))
        if not rows:
            raise MLMProbError(f"no paired records in {a.out}")
        if a.report:
            Path(a.report).parent.mkdir(parents=True, exist_ok=True)
            Path(a.report).write_text(sweep_markdown(rows, f"HCB pivot sweep ({a.out})"))
        if a.plot:
            plot_sweep(rows, a.plot)
        if not a.report:
            print(sweep_markdown(rows))


def run_sweep(
    config: PivotSweepConfig,
    out: str | Path,
    *,
    data_dir: str | Path,
    load: Callable | None = None,
    progress: bool = True,
) -> int:
    """Append every missing record of ``config`` to ``out``; returns the number of new records."""
    r = Run(
        argparse.Namespace(out=str(out)),
        [],
        Path(out),
        "",
        experiment=PivotSweep(),
        state={"config": config, "data_dir": data_dir, "load": load, "progress": progress},
    )
    r.experiment.setup(r)
    return sum(run_units(r.experiment, r, journal=False).values())


@dataclass(frozen=True)
class PivotRow:
    """One pivot (``None``: standard beam search) over the gaps that also have a standard record."""

    pivot: int | None
    name: str
    mask_pivot: bool
    n_gaps: int
    top1: float
    top5: float
    top20: float
    identity: float
    only_pivot_right: int  # gaps where only this pivot's top fill is right (vs standard)
    only_standard_right: int

    @property
    def p_value(self) -> float:
        return exact_sign_test(self.only_pivot_right, self.only_standard_right)


def summarize_sweep(records: Sequence[dict]) -> list[PivotRow]:
    """Rows per (model, region, k, order) group pooled, best top-1 first; standard is ``pivot=None``."""
    std = {_key(r)[:-1]: r for r in records if r["pivot"] is None}
    by_pivot: dict = defaultdict(list)
    for r in records:
        base = std.get(_key(r)[:-1])
        if base is not None:
            by_pivot[r["pivot"]].append((r, base))
    rows = []
    for pivot, pairs in by_pivot.items():
        n = len(pairs)
        first = pairs[0][0]
        only_pivot, only_standard = discordant(pairs)
        rows.append(
            PivotRow(
                pivot,
                "standard beam" if pivot is None else str(first["pivot_token"]),
                bool(first.get("mask_pivot")),
                n,
                *(sum(r[m] for r, _ in pairs) / n for m in ("top1", "top5", "top20", "identity")),
                only_pivot_right=only_pivot,
                only_standard_right=only_standard,
            )
        )
    return sorted(rows, key=lambda r: (-r.top1, -r.top20, r.pivot if r.pivot is not None else -1))


def sweep_markdown(rows: Sequence[PivotRow], title: str = "") -> str:
    head = [
        "pivot",
        "gaps",
        "top-1",
        "top-5",
        "top-20",
        "identity",
        "only pivot right",
        "only standard right",
        "sign test p",
    ]
    lines = ([f"# {title}", ""] if title else []) + ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        name = f"`{r.name}`" + (" (mask, default)" if r.mask_pivot else "")
        if r.pivot is None:
            name, test = "**standard beam (no pivot)**", ["-", "-", "-"]
        else:
            test = [str(r.only_pivot_right), str(r.only_standard_right), f"{r.p_value:.2g}"]
        lines.append(
            f"| {name} | {r.n_gaps} | "
            + " | ".join(f"{100 * v:.1f}" for v in (r.top1, r.top5, r.top20, r.identity))
            + " | "
            + " | ".join(test)
            + " |"
        )
    return "\n".join(lines) + "\n"


def plot_sweep(rows: Sequence[PivotRow], path: str | Path, title: str = "") -> Path:
    """Bar chart of top-1 accuracy per pivot (mask and standard beam highlighted), saved as PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(6.0, 0.32 * len(rows) + 1.5), 3.8))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    colors = ["tab:green" if r.pivot is None else "tab:orange" if r.mask_pivot else "tab:blue" for r in rows]
    ax.bar(range(len(rows)), [100 * r.top1 for r in rows], color=colors)
    ax.set_xticks(range(len(rows)), ["standard" if r.pivot is None else r.name for r in rows], rotation=90, fontsize=8)
    ax.set_ylabel("top-1 accuracy (%)")
    ax.set_ylim(0, max(5.0, 110 * max(r.top1 for r in rows)))
    ax.set_title(title or "HCB beam search by pivot (green: standard beam, orange: mask pivot)", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


def main(argv: list[str] | None = None) -> int:
    return runner_main(PivotSweep(), argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

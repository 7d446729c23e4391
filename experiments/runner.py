"""The one runner of the experiments: an experiment declares its units, how one unit becomes records and
how its report is written; the runner owns the rest.

An experiment is a subclass of :class:`Experiment` (its options, units, records, report); ``main(argv)``
of its module is ``runner.run_cli(TheExperiment(), argv)``. The runner

- builds the command line: ``--out`` (a result folder, or with ``results = ""`` the result file itself),
  the experiment's own options, ``--threads`` and ``--report-only`` (where the experiment offers them);
- holds the results log (``runtime.log.ResumableLog``: ``OUT.lock``, so a second writer is refused with
  one line; a torn last line trimmed; the stored configuration checked) for the whole run;
- skips the units whose records are already there (:meth:`Experiment.finished`), runs the others in
  order and commits every batch of records a unit yields as soon as it is yielded, so a killed run
  redoes only the unit it was in;
- records the exact command line and wall time of each run in the journal (``runs.jsonl`` by default, in
  the experiment's own format: :meth:`Experiment.start_entry`, :meth:`Experiment.finish_entry`);
- rewrites the report from the records (after a run, or alone with ``--report-only``).

Bad input anywhere is one ``error:`` line and exit status 2 (``errors.exit_status``).

>>> import tempfile
>>> class Squares(Experiment):
...     prog = "squares"
...     def units(self, run):
...         return [1, 2, 3]
...     def key(self, record):
...         return record["n"]
...     def run_unit(self, run, unit):
...         yield {"n": unit, "square": unit * unit}
...     def report(self, run):
...         print(sorted(r["square"] for r in read_log(run.out / "results.jsonl")))
>>> out = tempfile.mkdtemp()
>>> run_cli(Squares(), ["--out", out]), run_cli(Squares(), ["--out", out, "--report-only"])
[1, 4, 9]
[1, 4, 9]
(0, 0)
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mlmprob.argtypes import positive_int
from mlmprob.errors import MLMProbError, exit_status
from mlmprob.jsonl import dumps
from mlmprob.runtime.log import ResumableLog, RunMeta, append_record, read_log

__all__ = [
    "Experiment",
    "LogFileExperiment",
    "Run",
    "RunMeta",
    "build_parser",
    "command_lines",
    "execute",
    "run_cli",
    "read_log",
    "run_units",
]


@dataclass
class Run:
    """One invocation, as the runner hands it to the experiment's hooks."""

    args: argparse.Namespace
    argv: list[str]
    out: Path  # --out (a folder, or the result file itself)
    command: str  # the exact command line: ``python -m PROG ARGV``
    log: ResumableLog | None = None  # the results log while the units run
    done: dict = field(default_factory=dict)  # key (``Experiment.key``) -> the last record of it, kept current
    written: Counter = field(default_factory=Counter)  # records written this run, by unit label
    state: dict = field(default_factory=dict)  # whatever the experiment keeps between its hooks
    experiment: Experiment | None = None

    @property
    def results(self) -> Path:
        """The results log's path."""
        return self.out / self.experiment.results if self.experiment.results else self.out


class Experiment:
    """What an experiment declares. Override :meth:`units`, :meth:`key`, :meth:`run_unit` and
    :meth:`report`; the class attributes and the other hooks have defaults that fit most."""

    prog: str = ""  # the module: ``python -m experiments.NAME``
    description: str | None = None  # None: the first paragraph of the experiment module's docstring
    formatter_class = argparse.HelpFormatter
    results: str | None = "results.jsonl"  # the log in --out; "": --out is the log; None: the experiment's own files
    journal: str | None = "runs.jsonl"  # the journal in --out (command line, wall time); None: none
    out_default: str | None = None  # None: --out is required
    out_help: str = "result folder"
    threads: bool = True  # offer --threads
    threads_default: int | None = None
    threads_type: Callable = staticmethod(positive_int)
    threads_help: str = "torch CPU threads"
    report_only: bool = True  # offer --report-only
    report_only_flag: str = "--report-only"  # its spelling (dest ``report_only`` whatever it is)
    report_only_help: str = "only rewrite the report from the records"
    header: bool = False  # the log's first line is its configuration
    encode: Callable = staticmethod(dumps)

    # -- command line ----------------------------------------------------------------------------

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The experiment's own options (added after ``--out``)."""

    def check(self, args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
        """Refuse option combinations (``parser.error``) before anything runs."""

    # -- the results log -------------------------------------------------------------------------

    def config(self, run: Run) -> dict | None:
        """The configuration stored with the results and compared on a rerun (None: none)."""
        return None

    def meta(self, run: Run) -> RunMeta | None:
        """Where the configuration is stored (a JSON side file), unless ``header`` is set."""
        return None

    def resume(self, run: Run) -> None:
        """After the log is opened: ``run.done`` from its records (override to check or trim them)."""
        run.done = {self.key(r): r for r in run.log.records()} if run.log is not None else {}

    # -- units -----------------------------------------------------------------------------------

    def setup(self, run: Run) -> None:
        """Before the log is opened: check the data, load what every unit shares (into ``run.state``)."""

    def units(self, run: Run) -> Iterable:
        """The units, in the order they run."""
        raise NotImplementedError

    def key(self, record: dict):
        """The key of the unit a record belongs to (what :meth:`finished` looks up in ``run.done``)."""
        raise NotImplementedError

    def unit_key(self, unit):
        """A unit's key, as :meth:`key` gives it for its records (the unit itself by default)."""
        return unit

    def label(self, unit) -> str:
        """A unit's name in the journal's count of written records."""
        return str(unit)

    def finished(self, run: Run, unit) -> bool:
        """Whether the records of ``unit`` are all there already (then it is skipped)."""
        return self.unit_key(unit) in run.done

    def run_unit(self, run: Run, unit) -> Iterable[dict | list[dict]]:
        """Yield the unit's records: each record (or list of records, committed together) is written
        when yielded."""
        raise NotImplementedError

    def teardown(self, run: Run) -> None:
        """After the last unit, before the log is closed (remove work files, ...)."""

    # -- journal and report ----------------------------------------------------------------------

    def start_entry(self, run: Run) -> dict | None:
        """The journal's entry when the units start (None: none)."""
        return None

    def finish_entry(self, run: Run, wall_s: float) -> dict | None:
        """The journal's entry when every unit is done."""
        import torch

        return {"command": run.command, "wall_s": wall_s, "threads": torch.get_num_threads()}

    def report_only_entry(self, run: Run) -> dict | None:
        """The journal's entry of a ``--report-only`` run (None: none)."""
        return None

    def record_run(self, run: Run, entry: dict) -> None:
        """Write a journal entry (the runner's hold on the output is kept)."""
        path = run.out / self.journal
        if run.log is not None and run.log.path == path:
            run.log.append(entry)
        elif self.results is None and "journal" in run.state:
            run.state["journal"].append(entry)
        else:
            append_record(path, entry)

    def report(self, run: Run) -> None:
        """Rewrite the report from the records."""

    def wants_report(self, run: Run) -> bool:
        """Whether the report is rewritten after this invocation (``--no-report`` where offered)."""
        return not getattr(run.args, "no_report", False)


class LogFileExperiment(Experiment):
    """An experiment whose ``--out`` is its result file (JSONL) itself: no journal, no ``--threads``, defaults
    shown in ``--help``."""

    formatter_class = argparse.ArgumentDefaultsHelpFormatter
    results = ""  # --out is the log
    journal = None
    out_help = "result file (JSONL); rerunning continues it"
    threads = False


def build_parser(exp: Experiment) -> argparse.ArgumentParser:
    """The command line: ``--out``, the experiment's options, ``--threads``, ``--report-only``."""
    description = exp.description
    if description is None:
        description = (sys.modules[type(exp).__module__].__doc__ or "").split("\n\n")[0]
    p = argparse.ArgumentParser(
        prog=f"python -m {exp.prog}", description=description, formatter_class=exp.formatter_class
    )
    if exp.out_default is None:
        p.add_argument("--out", required=True, help=exp.out_help)
    else:
        p.add_argument("--out", default=exp.out_default, help=exp.out_help)
    exp.add_arguments(p)
    if exp.threads:
        p.add_argument("--threads", type=exp.threads_type, default=exp.threads_default, help=exp.threads_help)
    if exp.report_only:
        p.add_argument(exp.report_only_flag, dest="report_only", action="store_true", help=exp.report_only_help)
    return p


def command_lines(cmds: Iterable[dict], only: str = "report only") -> list[str]:
    """A report's list of the journal's commands: each with its wall time and threads, or ``(only)`` for a
    report-only run.

    >>> command_lines([{"command": "python -m x --out o", "wall_s": 1.5, "threads": 1}])
    ['- `python -m x --out o` (wall 1.5 s, 1 thread(s))']
    """
    return [
        f"- `{c['command']}` "
        + (f"({only})" if c.get("report_only") else f"(wall {c['wall_s']} s, {c['threads']} thread(s))")
        for c in cmds
    ]


def run_cli(exp: Experiment, argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``) and run ``exp``; the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(exp)
    args = parser.parse_args(argv)
    exp.check(args, parser)
    return exit_status(lambda: execute(exp, args, argv))


def execute(exp: Experiment, args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Run the pending units (unless ``--report-only``), then the report."""
    run = Run(args, list(argv), Path(args.out), f"python -m {exp.prog} " + shlex.join(argv), experiment=exp)
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(args.threads)
    if getattr(args, "report_only", False):
        entry = exp.report_only_entry(run)
        if entry is not None:
            exp.record_run(run, entry)
    else:
        exp.setup(run)
        run_units(exp, run)
    if exp.wants_report(run):
        exp.report(run)
    return 0


def run_units(exp: Experiment, run: Run, journal: bool = True) -> Counter:
    """Hold the output, skip the finished units, run and commit the others, keep the journal (unless
    ``journal`` is false: a run through the experiment's Python function); the records written by unit."""
    journal = journal and exp.journal is not None
    if exp.results is None:  # the experiment keeps its own files: the journal is the held output
        if exp.journal is None:  # pragma: no cover
            raise MLMProbError(f"{exp.prog}: an experiment without a results log needs a journal")
        run.out.mkdir(parents=True, exist_ok=True)
        run.state["journal"] = ResumableLog(run.out / exp.journal)
    else:
        run.log = ResumableLog(
            run.results, config=exp.config(run), meta=exp.meta(run), header=exp.header, encode=exp.encode
        )
    try:
        exp.resume(run)
        t0 = time.perf_counter()
        if journal and (entry := exp.start_entry(run)) is not None:
            exp.record_run(run, entry)
        for unit in exp.units(run):
            if exp.finished(run, unit):
                continue
            for item in exp.run_unit(run, unit):
                records = item if isinstance(item, list) else [item]
                if run.log is not None:
                    run.log.append(*records)
                    run.done.update((exp.key(r), r) for r in records)
                run.written[exp.label(unit)] += len(records)
        exp.teardown(run)
        if journal and (entry := exp.finish_entry(run, round(time.perf_counter() - t0, 1))):
            exp.record_run(run, entry)
    finally:
        for log in (run.log, run.state.pop("journal", None)):
            if log is not None:
                log.close()
        run.log = None
    return run.written

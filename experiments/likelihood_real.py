"""The chain-rule likelihood of real MLMs on held-out data (issue 20, part 5): per-token perplexities.

For each model and evaluation set, a seeded sample of sequences is scored with ``mlmprob.loglik``
under the left-to-right order, the right-to-left order and ``K_max`` random orders (drawn from the
record's own generator, ``likelihood.records.record_generator``), and with the exact PLL. One record
per sequence goes to ``results.jsonl`` as it finishes (a rerun skips finished sequences; a larger
``--n`` extends the same sample); ``README.md`` is rewritten from the records by
``likelihood_real_report``.

    python -m experiments.likelihood_real --out docs/results/likelihood \\
        --plan en-small:snli,xsum:20:64 sapiens-vh:thera_heavy,gdpa1_vh:6:64 --threads 1
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from mlmprob.alphabet import is_protein
from mlmprob.argtypes import nonnegative_int, positive_int
from mlmprob.errors import MLMProbError
from mlmprob.likelihood.chain import loglik
from mlmprob.likelihood.records import record_generator
from mlmprob.runtime.log import RunMeta

from .data_option import add_data_option, resolve_data_dir
from .english_sets import evaluation_sets
from .runner import Experiment, Run, run_units
from .runner import run_cli as runner_main

SETS = {  # name: (file, column); protein sets keep the chains of standard residues only
    "thera_heavy": ("antibody/thera_sabdab.csv", "HC"),
    "thera_light": ("antibody/thera_sabdab.csv", "LC"),
    "gdpa1_vh": ("antibody/GDPa1_v1.2.csv", "vh_protein_sequence"),
    "gdpa1_vl": ("antibody/GDPa1_v1.2.csv", "vl_protein_sequence"),
    "snli": ("snli_test.tsv", None),
    "xsum": ("xsum_test.jsonl", None),
}


@dataclass(frozen=True)
class Stage:
    """One model on some sets: ``n`` sequences per set, ``k_max`` random orders each."""

    model: str
    sets: tuple[str, ...]
    n: int
    k_max: int

    def __str__(self) -> str:
        return f"{self.model}:{','.join(self.sets)}:{self.n}:{self.k_max}"


def parse_stage(text: str) -> Stage:
    """``MODEL:SET[,SET...]:N:KMAX``.

    >>> str(parse_stage("sapiens-vh:thera_heavy,gdpa1_vh:6:64"))
    'sapiens-vh:thera_heavy,gdpa1_vh:6:64'
    """
    parts = text.split(":")
    if len(parts) != 4:
        raise MLMProbError(f"stage {text!r}: expected MODEL:SET[,SET...]:N:KMAX")
    sets = tuple(s for s in parts[1].split(",") if s)
    unknown = [s for s in sets if s not in SETS]
    if not sets or unknown:
        raise MLMProbError(f"stage {text!r}: unknown set {unknown[0] if unknown else ''!r}; use {', '.join(SETS)}")
    try:
        n, k = int(parts[2]), int(parts[3])
    except ValueError:
        raise MLMProbError(f"stage {text!r}: N and KMAX must be integers") from None
    if n < 1 or k < 1:
        raise MLMProbError(f"stage {text!r}: N and KMAX must be at least 1")
    return Stage(parts[0], sets, n, k)


def _protein_column(path: Path, column: str) -> list[str]:
    with path.open(newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    if not rows or column not in rows[0]:
        raise MLMProbError(f"{path}: no column {column!r}")
    seen, out = set(), []
    for r in rows:
        s = (r.get(column) or "").strip().upper()
        if is_protein(s) and s not in seen:
            seen.add(s)
            out.append(s)
    return out


def load_set(data: Path, name: str) -> list[str]:
    """Every distinct sequence of the set, in file order."""
    if name in ("snli", "xsum"):
        return evaluation_sets(data, n=10**9)[name]
    file, column = SETS[name]
    return _protein_column(data / file, column)


def sample_set(seqs: list[str], n: int, seed: int = 0) -> list[str]:
    """The first ``n`` of a seeded permutation: a larger ``n`` extends a smaller one's sample.

    >>> sample_set(list("abcdef"), 2) == sample_set(list("abcdef"), 4)[:2]
    True
    """
    perm = torch.randperm(len(seqs), generator=torch.Generator().manual_seed(seed)).tolist()
    return [seqs[i] for i in perm[:n]]


def score_sequence(mlm, seq: str, k_max: int, seed: int = 0) -> dict:
    """The numbers of one sequence: PLL, ``l2r``, ``r2l`` and ``k_max`` random orders (natural logs)."""
    from mlmprob.energies import pll

    ids = mlm.encode([seq]).input_ids
    t0 = time.perf_counter()
    out = {"n_tokens": 0, "pll": float(pll(mlm, ids)[0])}
    for order in ("l2r", "r2l"):
        r = loglik(mlm, ids, order=order)
        out[order] = float(r.per_order[0, 0])
        out[f"{order}_log_inside"] = float(r.log_inside[0, 0])
    r = loglik(mlm, ids, order="random", n_orders=k_max, generator=record_generator(seed, seq))
    k = int(r.n_orders[0])
    out.update(
        n_tokens=int(r.n_tokens[0]),
        per_order=[round(x, 6) for x in r.per_order[0, :k].tolist()],
        log_inside=[round(x, 6) for x in r.log_inside[0, :k].tolist()],
        exact=bool(r.exact[0]),
        outside_mass=float(r.outside_mass[0, :k].mean()),
        seconds=round(time.perf_counter() - t0, 2),
    )
    return out


class LikelihoodReal(Experiment):
    """Units: (stage, set, sequence) in plan order; one record each; the commands in ``config.json``."""

    prog = "experiments.likelihood_real"
    out_default = "docs/results/likelihood"
    out_help = "results folder (results.jsonl, README.md)"
    threads_type = staticmethod(positive_int)
    threads_help = "torch threads"
    report_only_help = "only rewrite README.md from the records"

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--plan", nargs="*", default=[], help="stages MODEL:SET[,SET...]:N:KMAX, run in order")
        add_data_option(p, "the antibody CSVs and the English test sets")
        p.add_argument("--seed", type=nonnegative_int, default=0, help="sample and order seed")

    def setup(self, run: Run) -> None:
        a = run.args
        if "stages" not in run.state:
            run.state["stages"] = [parse_stage(s) for s in a.plan]
            run.state["data"] = resolve_data_dir(a.data, [SETS[s][0] for st in run.state["stages"] for s in st.sets])
        run.state.setdefault("log", lambda m: print(m, file=sys.stderr, flush=True))

    def config(self, run: Run) -> dict:
        return {"seed": run.args.seed, "dtype": getattr(run.args, "dtype", "float32")}

    def meta(self, run: Run) -> RunMeta:
        return RunMeta(run.out / "config.json")

    def key(self, r: dict) -> tuple:
        return r["model"], r["set"], r["k_max"], r["sequence"]

    def units(self, run: Run):
        for st in run.state["stages"]:
            run.state.pop("mlm", None)
            for name in st.sets:
                for i, seq in enumerate(sample_set(load_set(run.state["data"], name), st.n, run.args.seed)):
                    yield st, name, i, seq

    def unit_key(self, unit) -> tuple:
        st, name, _, seq = unit
        return st.model, name, st.k_max, seq

    def run_unit(self, run: Run, unit):
        from mlmprob.models.loading import load_mlm

        st, name, i, seq = unit
        if "mlm" not in run.state:  # loaded once per stage, when it has a pending sequence
            run.state["mlm"] = load_mlm(st.model, dtype=self.config(run)["dtype"])
        rec = {"model": st.model, "set": name, "index": i, "k_max": st.k_max, "sequence": seq}
        rec.update(score_sequence(run.state["mlm"], seq, st.k_max, run.args.seed))
        yield rec
        run.state["log"](f"{st.model} {name} #{i}: {rec['n_tokens']} tokens, {rec['seconds']} s")

    def record_run(self, run: Run, entry: dict) -> None:
        meta = RunMeta(run.out / "config.json")
        stored = meta.load()
        stored["commands"] = stored.get("commands", []) + [entry]
        meta.save(stored)

    def report(self, run: Run) -> None:
        from .likelihood_real_report import write_report

        write_report(run.out)


def run(stages: list[Stage], out: Path, data: Path, seed: int = 0, dtype: str = "float32", log=print) -> int:
    """Score what ``results.jsonl`` lacks; returns the number of new records."""
    args = argparse.Namespace(out=str(out), seed=seed, dtype=dtype)
    r = Run(args, [], Path(out), "", experiment=LikelihoodReal(), state={"stages": stages, "data": data, "log": log})
    return sum(run_units(r.experiment, r, journal=False).values())


def main(argv=None) -> int:
    return runner_main(LikelihoodReal(), argv)


if __name__ == "__main__":
    raise SystemExit(main())

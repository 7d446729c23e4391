"""Decoders on real models (issue 30, item 4b): stutter, chain-rule likelihood, diversity and cost.

Two tasks: **antibody** (``--model-antibody``, default ``antiberty``): the CDR-H3 (IMGT, by the numbering
library) of the first ``--n-antibodies`` heavy chains of ``antibody/thera_sabdab.csv`` (column ``HC``) is
redrawn given the rest of the chain; **english** (``--model-english``, default ``en-small``): the middle
``--words`` words of the first ``--n-sentences`` SNLI premises of ``snli_test.tsv`` with at least
``--words + 4`` words are redrawn. Every decoder of :data:`DECODERS` draws ``--samples`` samples per input
from the all-masked free positions, at a budget of sequential model calls set from the ``n`` free
positions: ``n`` (ancestral), its own (speculative: exact draws of the same law in fewer calls),
``ceil(n/2)`` or ``ceil(n/4)`` (parallel decoding, confidence / margin / entropy unmasking, semi-AR,
ReMDM, mask-predict), or adaptive (the dependence-aware decoder). Per input and decoder: ``stutter`` (share of
adjacent sampled pairs with equal tokens) and the native sequence's own rate at the same pairs, the
chain-rule log-likelihood per token of the samples (``mlmprob.loglik``, left to right, the free positions
given the rest) and of the native, diversity (mean pairwise Hamming distance over the free positions / n,
share of distinct samples), sequential calls and forward rows per sample.

Records go to ``results.jsonl`` as each (task, input, decoder) unit finishes; a rerun skips finished
units; ``README.md`` is rewritten from the records (``decoders_real_report``).

    python -m experiments.decoders_real --out docs/results/decoders/real --threads 1
"""

from __future__ import annotations

import argparse
import csv
import math
import shlex
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from mlmprob.argtypes import nonnegative_int, positive_int
from mlmprob.errors import MLMProbError

from .data_option import add_data_option, resolve_data_dir
from .runner import Experiment, Run, RunMeta, build_parser, run_cli, run_units

ANTIBODY_CSV, SNLI = "antibody/thera_sabdab.csv", "snli_test.tsv"


@dataclass(frozen=True)
class Input:
    """One input: ``name``, model ``ids`` ``[L]``, ``free`` bool ``[L]`` (the positions redrawn)."""

    name: str
    ids: torch.Tensor
    free: torch.Tensor


def _half(n: int) -> int:
    return math.ceil(n / 2)


def _quarter(n: int) -> int:
    return math.ceil(n / 4)


def _sample(method: str, **kw) -> Callable:
    def gen(mlm, ids, free, g):
        from mlmprob.sampling.api import sample

        k = {key: (v(int(free[0].sum())) if callable(v) else v) for key, v in kw.items()}
        r = sample(mlm, ids, method=method, epochs=1, order="random", positions=free, generator=g, **k)
        return r.samples[0], r.calls[0].double(), r.forward_rows

    return gen


def _kernel(make: Callable) -> Callable:
    """A decoder kernel (``Unmasking``, ``Adaptive``) run for one epoch: ``make(mlm, n)``."""

    def gen(mlm, ids, free, g):
        k = make(mlm, int(free[0].sum()))
        s = k.init(ids, free)
        while s.epoch == 0:
            s, _ = k.step(s, g)
        return s.ids, s.calls.double(), s.forward_rows

    return gen


def _unmasking(**kw) -> Callable:
    def make(mlm, n):
        from mlmprob.sampling.unmasking import Unmasking

        return Unmasking(mlm, **{key: (v(n) if callable(v) else v) for key, v in kw.items()})

    return _kernel(make)


def _adaptive(**kw) -> Callable:
    def make(mlm, n):
        from mlmprob.sampling.adaptive import Adaptive

        return Adaptive(mlm, **kw)

    return _kernel(make)


def _mask_predict(mlm, ids, free, g):
    from mlmprob.sampling.maskpredict import mask_predict

    n = _half(int(free[0].sum()))
    r = mask_predict(mlm, ids, n, positions=free)
    return r.ids, torch.full((len(ids),), float(n)), r.forward_rows


# name -> (budget label, generator(mlm, ids [B, L], free [B, L], generator) -> (ids, calls [B], rows)).
# Adding a decoder is one line here.
DECODERS: dict[str, tuple[str, Callable]] = {
    "ancestral random": ("n", _sample("ancestral")),
    "speculative k2": ("own", _sample("speculative", draft_k=2)),
    "speculative k4": ("own", _sample("speculative", draft_k=4)),
    "parallel k2": ("n/2", _sample("ancestral", tokens_per_step=2)),
    "parallel k4": ("n/4", _sample("ancestral", tokens_per_step=4)),
    "confidence n/2": ("n/2", _unmasking(score="confidence", steps=_half)),
    "margin n/2": ("n/2", _unmasking(score="margin", steps=_half)),
    "entropy n/2": ("n/2", _unmasking(score="entropy", steps=_half)),
    "confidence n/4": ("n/4", _unmasking(score="confidence", steps=_quarter)),
    "margin n/4": ("n/4", _unmasking(score="margin", steps=_quarter)),
    "semi-AR b4 n/2": ("n/2", _unmasking(score="confidence", steps=_half, block_length=4)),
    "ReMDM conf n/4 + n/4 r0.1": (
        "n/2",
        _unmasking(score="confidence", steps=_quarter, remask=0.1, remask_steps=_quarter),
    ),
    "mask-predict n/2": ("n/2", _mask_predict),
    "adaptive t0.05 top2": ("adaptive", _adaptive(threshold=0.05, pair_top_k=2)),
    "adaptive t0.5 top2": ("adaptive", _adaptive(threshold=0.5, pair_top_k=2)),
}
SKIP = {
    "antibody": ("adaptive t0.05 top2", "adaptive t0.5 top2")
}  # its pair rows (2 m per step) are too many for AntiBERTy on a CPU


def antibody_inputs(mlm, path: Path, n: int) -> list[Input]:
    """The first ``n`` heavy chains of the CSV whose CDR-H3 the numbering library finds."""
    from mlmprob.sampling.stream import free_positions

    out = []
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            seq = (row.get("HC") or "").strip()
            if len(out) == n:
                break
            if not seq or seq.lower() == "na":
                continue
            enc = mlm.encode([seq])
            try:
                free = free_positions(mlm, enc, 0, row["Therapeutic"], seq, cdr="H3")
            except MLMProbError:
                continue
            out.append(Input(row["Therapeutic"], enc.input_ids[0], free))
    return out


def english_inputs(mlm, path: Path, n: int, words: int) -> list[Input]:
    """The first ``n`` distinct SNLI premises with at least ``words + 4`` words: their middle ``words`` words."""
    out, seen = [], set()
    with open(path, encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            text = line.split("\t")[0].strip()
            if len(out) == n:
                break
            if text in seen:
                continue
            seen.add(text)
            enc = mlm.encode([text])
            wid = enc.word_ids[0]
            n_words = int(wid.max()) + 1
            if n_words < words + 4:
                continue
            a = (n_words - words) // 2
            out.append(Input(text, enc.input_ids[0], (wid >= a) & (wid < a + words)))
    return out


def _pairs(free: torch.Tensor) -> torch.Tensor:
    """Bool ``[L - 1]``: adjacent pairs with both positions free."""
    return free[:-1] & free[1:]


def measure(mlm, inp: Input, out_ids: torch.Tensor) -> dict:
    """Stutter, chain-rule log-likelihood per token (left to right) and diversity of the samples ``[B, L]``."""
    from mlmprob.likelihood import loglik

    B, n = len(out_ids), int(inp.free.sum())
    pairs = _pairs(inp.free)
    eq = (out_ids[:, :-1] == out_ids[:, 1:])[:, pairs].double()
    ll = loglik(mlm, out_ids, inp.free.expand(B, -1), order="l2r").per_order[:, 0] / n
    x = out_ids[:, inp.free]
    ham = [float((x[i] != x[j]).double().mean()) for i in range(B) for j in range(i + 1, B)]
    return {
        "stutter": float(eq.mean()) if pairs.any() else None,
        "loglik_per_token": float(ll.mean()),
        "loglik_per_token_samples": ll.tolist(),
        "hamming": sum(ham) / len(ham) if ham else None,
        "distinct": len({tuple(r) for r in x.tolist()}) / B,
        "samples": x.tolist(),
    }


def native(mlm, inp: Input) -> dict:
    """The native sequence's stutter and chain-rule log-likelihood per token at the same positions."""
    from mlmprob.likelihood import loglik

    pairs = _pairs(inp.free)
    eq = (inp.ids[:-1] == inp.ids[1:])[pairs].double()
    ll = loglik(mlm, inp.ids[None], inp.free[None], order="l2r").per_order[0, 0] / int(inp.free.sum())
    return {"stutter": float(eq.mean()) if pairs.any() else None, "loglik_per_token": float(ll)}


def run(out: Path, tasks: dict, samples: int, seed: int, decoders=None, setup: dict | None = None, log=print) -> None:
    """``tasks``: ``{task: (mlm, inputs)}``; every missing (task, input, decoder) unit. ``setup``: what else
    the records depend on (stored in ``config.json``; a rerun must match)."""
    argv = ["--out", str(out), "--samples", str(samples), "--seed", str(seed)]
    if decoders:
        argv += ["--decoders", ";".join(decoders)]
    exp = DecodersReal(tasks=tasks, setup=setup or {}, log=log)
    args = build_parser(exp).parse_args(argv)
    r = Run(args, argv, Path(out), f"python -m {exp.prog} " + shlex.join(argv), experiment=exp)
    exp.setup(r)
    run_units(exp, r, journal=False)


class DecodersReal(Experiment):
    """Units: (task, input): the input's native record and one record per decoder (``unit``:
    ``{task}/{i}/{decoder}``); a rerun samples only what is missing."""

    prog = "experiments.decoders_real"
    out_help = "result folder (results.jsonl, config.json, README.md)"
    report_only_help = "rewrite README.md only"

    def __init__(self, tasks: dict | None = None, setup: dict | None = None, log=print):
        self.tasks, self.setup_extra, self.log = tasks, setup or {}, log

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        add_data_option(p, f"{ANTIBODY_CSV} and {SNLI}")
        p.add_argument("--tasks", default="antibody,english", help="comma-separated: antibody, english")
        p.add_argument("--model-antibody", default="antiberty", help="model of the antibody task")
        p.add_argument("--model-english", default="en-small", help="model of the English task")
        p.add_argument("--n-antibodies", type=positive_int, default=6, help="heavy chains (the first N of the CSV)")
        p.add_argument("--n-sentences", type=positive_int, default=20, help="SNLI premises (the first N long enough)")
        p.add_argument("--words", type=positive_int, default=5, help="middle words redrawn per sentence")
        p.add_argument("--samples", type=positive_int, default=4, help="samples per input and decoder")
        p.add_argument(
            "--seed",
            type=nonnegative_int,
            default=0,
            help="base seed (each unit's generator derives from it and its name)",
        )
        p.add_argument("--decoders", type=lambda s: tuple(s.split(";")), help="semicolon-separated decoder names")

    def setup(self, run: Run) -> None:
        from mlmprob.models import load_mlm
        from mlmprob.models.reader import name_of

        a = run.args
        names = list(a.decoders or DECODERS)
        bad = [n for n in names if n not in DECODERS]
        if bad:
            raise MLMProbError(f"unknown decoders {bad}; known: {list(DECODERS)}")
        run.state["names"] = names
        if self.tasks is None:
            tasks = {}
            for task in a.tasks.split(","):
                if task == "antibody":
                    d = resolve_data_dir(a.data, [ANTIBODY_CSV])
                    mlm = load_mlm(a.model_antibody)
                    tasks[task] = (mlm, antibody_inputs(mlm, d / ANTIBODY_CSV, a.n_antibodies))
                elif task == "english":
                    d = resolve_data_dir(a.data, [SNLI])
                    mlm = load_mlm(a.model_english)
                    tasks[task] = (mlm, english_inputs(mlm, d / SNLI, a.n_sentences, a.words))
                else:
                    raise MLMProbError(f"unknown task {task!r}: use antibody, english")
            self.tasks = tasks
            self.setup_extra = {"words": a.words, "models": {t: name_of(m) for t, (m, _) in tasks.items()}}
        run.out.mkdir(parents=True, exist_ok=True)

    def config(self, run: Run) -> dict:
        return {"samples": run.args.samples, "seed": run.args.seed, **self.setup_extra}

    def meta(self, run: Run) -> RunMeta:
        return RunMeta(run.out / "config.json", key=None, indent=1)

    def key(self, record: dict) -> str:
        return record.get("unit")

    def units(self, run: Run):
        return [(task, i) for task, (_, inputs) in self.tasks.items() for i in range(len(inputs))]

    def _keys(self, run: Run, unit) -> list[str]:
        task, i = unit
        return [f"{task}/{i}/native"] + [f"{task}/{i}/{n}" for n in run.state["names"] if n not in SKIP.get(task, ())]

    def finished(self, run: Run, unit) -> bool:
        return all(k in run.done for k in self._keys(run, unit))

    def label(self, unit) -> str:
        return f"{unit[0]}/{unit[1]}"

    def run_unit(self, run: Run, unit):
        task, i = unit
        mlm, inputs = self.tasks[task]
        inp = inputs[i]
        samples, seed = run.args.samples, run.args.seed
        base = {"task": task, "input": i, "name": inp.name, "n": int(inp.free.sum())}
        if f"{task}/{i}/native" not in run.done:
            yield {"unit": f"{task}/{i}/native", **base, **native(mlm, inp)}
        for name in run.state["names"]:
            key = f"{task}/{i}/{name}"
            if key in run.done or name in SKIP.get(task, ()):
                continue
            g = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(key.encode()))
            budget, gen = DECODERS[name]
            t0 = time.perf_counter()
            ids = inp.ids.expand(samples, -1).clone()
            ids[:, inp.free] = mlm.mask_id
            got, calls, rows = gen(mlm, ids, inp.free.expand(samples, -1).clone(), g)
            t1 = time.perf_counter()
            rec = {
                "unit": key,
                **base,
                "decoder": name,
                "budget": budget,
                "calls": float(calls.mean()),
                "rows_per_sample": rows / samples,
                **measure(mlm, inp, got),
                "seconds": t1 - t0,
                "score_seconds": time.perf_counter() - t1,
            }
            yield rec
            self.log(
                f"{key}: calls {rec['calls']:.1f}, stutter {rec['stutter']}, loglik/token {rec['loglik_per_token']:.3f}"
            )

    def report(self, run: Run) -> None:
        from .decoders_real_report import write_report

        if not (run.out / "results.jsonl").is_file():
            raise MLMProbError(f"{run.out} has no results.jsonl to report")
        write_report(run.out, DECODERS)


def main(argv=None) -> int:
    return run_cli(DecodersReal(), argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

"""The pairwise-joint experiment (Torroba Hennigen & Kim 2023, sec. 3): pairs over a data set,
every construction and metric per pair, a resumable JSONL of per-pair records, a Table-1-shaped
report and the token-distance plot of App. E.

Pairs are planned deterministically from the seed: for scheme ``k`` the sequences are a seeded
permutation of the data set, and pair ``i`` draws its positions from a generator seeded by
``(seed, k, i)``. A rerun with the same configuration therefore skips the records already in the
file and computes exactly the missing ones.

- ``random``: two distinct scored positions, uniformly at random;
- ``contiguous``: ``(t, t + 1)`` with ``t`` uniform among positions whose right neighbour is scored.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import torch

from ..batching import DEFAULT_BATCH_TOKENS
from ..errors import MLMProbError
from ..jsonl import dumps, read_jsonl, trim_partial_line
from ..models.protocol import MaskedLM, default_positions
from .evaluate import AGOptions, evaluate_pair
from .metrics import JointSummary, summarize

SCHEMES = ("random", "contiguous")
METHOD_LABELS = {"mlm": "MLM", "mrf_logit": "MRF-L", "mrf": "MRF", "hcb": "HCB", "ag": "AG"}
RECORDS_FILE, REPORT_FILE, SUMMARY_FILE, PLOT_FILE = "pairs.jsonl", "report.md", "summary.json", "distance.png"


@dataclass(frozen=True)
class JointsConfig:
    """One experiment. ``pivot`` is ``"mode"`` (the paper's default) or ``"mask"``; ``top_k`` None
    uses the full candidate vocabulary (the model's proposal ids, else its whole vocabulary)."""

    model: str
    data: str
    column: str = "HC"
    schemes: tuple[str, ...] = SCHEMES
    n_pairs: int = 500
    seed: int = 0
    top_k: int | None = None
    pivot: str = "mode"
    ag_steps: int | None = None
    ag_tol: float = 1e-10
    ag_max_steps: int = 5000
    max_sequences: int | None = None

    def __post_init__(self):
        bad = [s for s in self.schemes if s not in SCHEMES]
        if bad or not self.schemes:
            raise MLMProbError(f"unknown pair scheme(s) {bad or '(none)'}; use {', '.join(SCHEMES)}")
        if self.n_pairs < 1:
            raise MLMProbError(f"n_pairs must be >= 1, got {self.n_pairs}")
        if self.pivot not in ("mode", "mask"):
            raise MLMProbError(f"pivot must be 'mode' or 'mask', got {self.pivot!r}")
        if self.top_k is not None and self.top_k < 1:
            raise MLMProbError(f"top_k must be >= 1, got {self.top_k}")

    def identity(self) -> dict:
        """The fields that must match to resume a record file (everything but ``n_pairs``)."""
        d = dataclasses.asdict(self)
        d.pop("n_pairs")
        d["schemes"] = list(d["schemes"])
        return d


# -- data and pair plan -----------------------------------------------------------------------------
def read_sequences(path: str | Path, column: str = "HC", max_sequences: int | None = None) -> list[str]:
    """Sequences from a CSV column (``.csv``), or one per non-empty line of a text file."""
    p = Path(path)
    if not p.is_file():
        raise MLMProbError(f"data file not found: {p}")
    if p.suffix.lower() == ".csv":
        with p.open(newline="") as f:
            reader = csv.DictReader(f)
            if column not in (reader.fieldnames or []):
                raise MLMProbError(f"{p} has no column {column!r}; columns: {', '.join(reader.fieldnames or [])}")
            seqs = [(row.get(column) or "").strip() for row in reader]
    else:
        seqs = [line.strip() for line in p.read_text().splitlines()]
    seqs = [s for s in seqs if s and s.lower() not in ("na", "nan", "none")]
    if max_sequences is not None:
        seqs = seqs[:max_sequences]
    if not seqs:
        raise MLMProbError(f"no sequences in {p}" + (f" column {column!r}" if p.suffix.lower() == ".csv" else ""))
    return seqs


@dataclass(frozen=True)
class PlannedPair:
    scheme: str
    i: int
    seq_index: int
    input_ids: torch.Tensor   # [L]
    a: int
    b: int


def _pair_generator(seed: int, k: int, i: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 1_000_003 + k * 100_003 + i)


def draw_pair(positions: torch.Tensor, scheme: str, generator: torch.Generator) -> tuple[int, int] | None:
    """Positions ``(a, b)``, ``a < b``, from the scored ``positions`` (bool ``[L]``), or None if the
    sequence has no such pair."""
    idx = positions.nonzero(as_tuple=True)[0]
    if scheme == "random":
        if len(idx) < 2:
            return None
        pick = torch.randperm(len(idx), generator=generator)[:2]
        a, b = sorted(int(idx[j]) for j in pick)
        return a, b
    left = idx[positions[(idx + 1).clamp(max=len(positions) - 1)] & (idx + 1 < len(positions))]
    if len(left) == 0:
        return None
    t = int(left[torch.randint(len(left), (1,), generator=generator)])
    return t, t + 1


def plan_pairs(mlm: MaskedLM, sequences: Sequence[str], config: JointsConfig) -> Iterator[PlannedPair]:
    """The deterministic pair list, scheme by scheme; sequences the model cannot encode or without a
    valid pair are skipped (the next sequence of the permutation is used)."""
    encode = getattr(mlm, "encode", None)
    if encode is None:
        raise MLMProbError("the runner needs a model with a tokenizer (encode); use pairwise_joint directly otherwise")
    for k, scheme in enumerate(config.schemes):
        order = torch.randperm(len(sequences), generator=torch.Generator().manual_seed(config.seed * 7919 + k))
        i = j = 0
        while i < config.n_pairs:
            if j >= len(order) * 2 and i == 0:
                raise MLMProbError(f"no sequence admits a {scheme} pair")
            s = int(order[j % len(order)])
            j += 1
            try:
                ids = encode([sequences[s]]).input_ids[0]
            except MLMProbError:   # e.g. too long for the model, or symbols outside its alphabet
                continue
            pos = default_positions(mlm, ids[None])[0]
            ab = draw_pair(pos, scheme, _pair_generator(config.seed, k, i))
            if ab is None:
                continue
            yield PlannedPair(scheme, i, s, ids, ab[0], ab[1])
            i += 1


# -- records ------------------------------------------------------------------------------------------
# JSON has no infinities: a gold pair outside the candidates (log-probability -inf, G-KL undefined)
# is written as null; reading restores -inf and NaN.
NULL_METRICS = {"pair_logp": -math.inf, "unary_logp": -math.inf, "akl": math.nan, "gkl": math.nan}
SUMMARY_NULLS = ("null: U-PPL/P-PPL are infinite when a gold pair lies outside the candidate vocabulary "
                 "(see n_covered); G-KL, A-KL and rates are undefined without pairs to average")


def load_records(path: str | Path) -> tuple[dict | None, list[dict]]:
    """``(config identity or None, pair records)`` of a JSONL file; an unreadable trailing line (an
    interrupted write) is dropped."""
    header, records = None, []
    for obj in read_jsonl(Path(path)):
        if obj.get("kind") == "config":
            header = obj["config"]
        elif obj.get("kind") == "pair":
            for metrics in obj.get("metrics", {}).values():
                for k, v in NULL_METRICS.items():
                    if metrics.get(k, 0.0) is None:
                        metrics[k] = v
            records.append(obj)
    return header, records


def run_joints(mlm: MaskedLM, config: JointsConfig, out_dir: str | Path, *,
               batch_tokens: int = DEFAULT_BATCH_TOKENS,
               progress: Callable[[dict], None] | None = None) -> list[dict]:
    """Compute the missing pair records into ``out_dir/pairs.jsonl``; returns all records of the
    configuration (first ``n_pairs`` per scheme)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RECORDS_FILE
    trim_partial_line(path)     # a line cut by a kill: dropped before appending, its pair is redone
    header, records = load_records(path)
    if header is not None and header != config.identity():
        raise MLMProbError(f"{path} holds results of another configuration ({header}); use a new output folder")
    done = {(r["scheme"], r["i"]) for r in records}
    sequences = read_sequences(config.data, config.column, config.max_sequences)
    pivot = None
    if config.pivot == "mask":
        if not 0 <= mlm.mask_id < mlm.vocab_size:
            raise MLMProbError("pivot 'mask' needs a model whose output vocabulary has the mask token")
        pivot = (mlm.mask_id, mlm.mask_id)
    ag = AGOptions(config.ag_steps, config.ag_tol, config.ag_max_steps)
    with path.open("a") as f:
        if header is None:
            f.write(dumps({"kind": "config", "config": config.identity()}) + "\n")
        for pp in plan_pairs(mlm, sequences, config):
            if (pp.scheme, pp.i) in done:
                continue
            t0 = time.perf_counter()
            ev = evaluate_pair(mlm, pp.input_ids, pp.a, pp.b, top_k=config.top_k, pivot=pivot, ag=ag,
                               batch_tokens=batch_tokens)
            rec = {"kind": "pair", "scheme": pp.scheme, "i": pp.i, "seq_index": pp.seq_index,
                   "length": int(len(pp.input_ids)), "distance": abs(pp.b - pp.a) - 1, **ev.record(),
                   "seconds": time.perf_counter() - t0}
            f.write(dumps(rec) + "\n")
            f.flush()
            records.append(rec)
            if progress is not None:
                progress(rec)
    keep = {(s, i) for s in config.schemes for i in range(config.n_pairs)}
    return sorted((r for r in records if (r["scheme"], r["i"]) in keep),
                  key=lambda r: (config.schemes.index(r["scheme"]), r["i"]))


# -- report ---------------------------------------------------------------------------------------------
def summarize_records(records: Sequence[dict]) -> dict[str, dict[str, JointSummary]]:
    """scheme -> method -> Table-1 metrics."""
    out: dict[str, dict[str, JointSummary]] = {}
    for scheme in dict.fromkeys(r["scheme"] for r in records):
        rs = [r for r in records if r["scheme"] == scheme]
        out[scheme] = {m: summarize(r["metrics"][m] for r in rs) for m in METHOD_LABELS}
    return out


def diagnostics(records: Sequence[dict]) -> dict[str, dict[str, float]]:
    """scheme -> mean CI gap, incompatibility, AG steps, coverage, truncation and speed."""
    out = {}
    for scheme in dict.fromkeys(r["scheme"] for r in records):
        rs = [r for r in records if r["scheme"] == scheme]
        n = len(rs)
        mean = lambda xs: sum(xs) / len(xs) if xs else math.nan  # noqa: E731
        secs = sum(r["seconds"] for r in rs)
        out[scheme] = {
            "pairs": n,
            "ci_gap": mean([r["ci_gap"] for r in rs]),
            "incompatibility": mean([r["incompatibility"] for r in rs]),
            "ag_steps_mean": mean([r["ag_steps"] for r in rs]),
            "ag_steps_max": max(r["ag_steps"] for r in rs),
            "ag_not_converged": sum(not r["ag_converged"] for r in rs),
            "gold_covered": sum(r["gold_in_candidates"] for r in rs),
            "K_mean": mean([r["K"] for r in rs]),
            "forward_rows_per_pair": mean([r["n_forward"] for r in rs]),
            "outside_mass_unary": mean([r["outside_mass"]["unary"] for r in rs]),
            "outside_mass_marginal": mean([r["outside_mass"]["marginal"] for r in rs]),
            "pairs_per_s": n / secs if secs > 0 else math.nan,
        }
    return out


def _fmt(x: float) -> str:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return str(x)
    if x != 0 and abs(x) < 0.01:
        return f"{x:.1e}"
    return f"{x:.3f}" if abs(x) < 10 else f"{x:.2f}"


def format_report(records: Sequence[dict], title: str = "Pairwise joints") -> str:
    """Markdown: Table 1 (methods x U-PPL, P-PPL, A-KL, G-KL per scheme) and the diagnostics."""
    summ = summarize_records(records)
    schemes = list(summ)
    cols = ["U-PPL", "P-PPL", "A-KL", "G-KL"]
    lines = [f"# {title}", "", "Lower is better everywhere. U-PPL/P-PPL: unary/pairwise perplexity; "
             "A-KL/G-KL: KL from the MLM's unary conditionals to the joint's (all / gold conditioning values).", ""]
    head = "| method | " + " | ".join(f"{s} {c}" for s in schemes for c in cols) + " |"
    lines += [head, "|" + "---|" * (1 + len(cols) * len(schemes))]
    for m, label in METHOD_LABELS.items():
        cells = []
        for s in schemes:
            d = summ[s][m].as_dict()
            cells += [_fmt(d[c]) for c in cols]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    diag = diagnostics(records)
    keys = list(next(iter(diag.values())).keys()) if diag else []
    lines += ["", "Diagnostics: ci_gap = the MLM's conditional-independence gap (mutual information its unary "
              "conditionals express); incompatibility = A-KL of the AG joint (0 iff the unary families are "
              "compatible); outside_mass = softmax mass outside the candidate vocabulary.", "",
              "| scheme | " + " | ".join(keys) + " |", "|" + "---|" * (1 + len(keys))]
    for s, d in diag.items():
        lines.append(f"| {s} | " + " | ".join(_fmt(float(d[k])) if isinstance(d[k], float) else str(d[k])
                                              for k in keys) + " |")
    return "\n".join(lines) + "\n"


def write_report(records: Sequence[dict], out_dir: str | Path, title: str = "Pairwise joints") -> dict[str, Path]:
    """Write ``report.md``, ``summary.json`` and ``distance.png`` into ``out_dir``."""
    from .plots import plot_distance

    out = Path(out_dir)
    if not records:
        raise MLMProbError(f"no pair records to report in {out}")
    (out / REPORT_FILE).write_text(format_report(records, title))
    summ = {s: {m: v.as_dict() for m, v in d.items()} for s, d in summarize_records(records).items()}
    summary = {"table": summ, "diagnostics": diagnostics(records)}
    if "null" in dumps(summary):
        summary["null_means"] = SUMMARY_NULLS
    (out / SUMMARY_FILE).write_text(dumps(summary, indent=2))
    plot_distance(records, out / PLOT_FILE, title=title)
    return {"report": out / REPORT_FILE, "summary": out / SUMMARY_FILE, "plot": out / PLOT_FILE}

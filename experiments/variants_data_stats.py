"""Numbers of the ``variants_data`` report: the scores read back from the result files, and
paired bootstrap estimates (``mlmprob.metrics.ranking.PairedBootstrap``: every score of a table sees
the same resamples, so that differences between two scores get their own interval).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

from mlmprob.errors import MLMProbError
from mlmprob.metrics.ranking import Estimate, PairedBootstrap, auroc, auroc_within, ndcg, spearman

from .variants_data_common import read_chunks
from .variants_data_runner import GROUPS, SET_GROUPS

BASELINES = GROUPS["baselines"]
JOINT = ("masked_marginals_all", "masked_marginals_mt", "hcb", "chain", "ag", "epistasis")


@dataclass
class Score:
    """One score of the library: ``values`` over the ordered library (NaN where not computed),
    ``prefix``: length of the computed prefix (0 for ``ag``, computed on scattered rows)."""

    model: str
    method: str
    values: torch.Tensor
    prefix: int

    @property
    def label(self) -> str:
        return self.method if self.model == "baseline" else f"{self.method} ({self.model})"


@dataclass
class Timing:
    model: str
    group: str
    chunks: int
    variants: int
    seconds: float
    cpu_seconds: float
    rows_est: int


def _split_name(stem: str, groups) -> tuple[str, str] | None:
    for g in sorted(groups, key=len, reverse=True):
        if stem.endswith("-" + g):
            return stem[: -len(g) - 1], g
    return None


def load_scores(out: Path, n: int) -> tuple[list[Score], list[Timing]]:
    """Every library score in ``out`` (files ``mher-<model>-<group>.jsonl``) and the time each took."""
    scores, timings = [], []
    for path in sorted(out.glob("mher-*.jsonl")):
        split = _split_name(path.stem[len("mher-") :], GROUPS)
        if split is None:
            continue
        model, group = split
        chunks = read_chunks(path)
        if not chunks:
            continue
        vals = {m: torch.full((n,), float("nan"), dtype=torch.float64) for m in GROUPS[group]}
        covered = torch.zeros(n, dtype=torch.bool)
        for c in chunks:
            idx = torch.tensor(c["idx"] if "idx" in c else list(range(c["start"], c["stop"])), dtype=torch.long)
            if "idx" not in c:
                covered[idx] = True
            for m in GROUPS[group]:
                got = torch.tensor([float("nan") if x is None else x for x in c["scores"][m]], dtype=torch.float64)
                if len(got) != len(idx):
                    raise MLMProbError(f"{path}: chunk at {c['start']} holds {len(got)} {m} scores for {len(idx)} rows")
                vals[m][idx] = got
        prefix = 0 if group == "ag" else int(covered.long().cumprod(0).sum())
        scores += [Score(model, m, v, prefix) for m, v in vals.items()]
        timings.append(
            Timing(
                model,
                group,
                len(chunks),
                sum(c["n"] for c in chunks),
                sum(c["seconds"] for c in chunks),
                sum(c["cpu_seconds"] for c in chunks),
                sum(c["rows_est"] for c in chunks),
            )
        )
    return scores, timings


def load_set_scores(out: Path, kind: str = "pll") -> dict[tuple[str, str], dict[str, tuple[float, int]]]:
    """``{(set, model): {antibody id: (value, residues)}}`` from ``<set>-<model>-<kind>.jsonl`` (``kind``:
    ``pll``, or ``loglik``: the left-to-right chain rule)."""
    res: dict = {}
    for name in _set_names():
        for path in sorted(out.glob(f"{name}-*-{kind}.jsonl")):
            model = path.stem[len(name) + 1 : -len(kind) - 1]
            d = res.setdefault((name, model), {})
            for c in read_chunks(path):
                for i, p, r in zip(c["ids"], c[kind], c["n_res"]):
                    d[i] = (p, r)
    return res


def _set_names() -> list[str]:
    return list(dict.fromkeys(g.rsplit("_", 1)[0] for g in SET_GROUPS))


def timings_of_sets(out: Path) -> list[Timing]:
    res = []
    for group in SET_GROUPS:
        name, kind = group.rsplit("_", 1)
        for path in sorted(out.glob(f"{name}-*-{kind}.jsonl")):
            chunks = read_chunks(path)
            res.append(
                Timing(
                    path.stem[len(name) + 1 : -len(kind) - 1],
                    group,
                    len(chunks),
                    sum(c["n"] for c in chunks),
                    sum(c["seconds"] for c in chunks),
                    sum(c["cpu_seconds"] for c in chunks),
                    sum(c["rows_est"] for c in chunks),
                )
            )
    return res


def ndcg10(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return ndcg(pred, target, 0.1)


def library_table(
    scores: list[Score],
    labels: torch.Tensor,
    rows: int,
    *,
    n_boot: int,
    seed: int = 0,
    mutations: torch.Tensor | None = None,
) -> tuple[dict[str, PairedBootstrap], list[Score]]:
    """AUROC and NDCG@10% of every score computed on the first ``rows`` variants (paired bootstrap).
    The rows are put in a random order (``seed``) first: NDCG breaks ties in the scores by row order,
    and the library's order (classes interleaved, the surplus of non-binders last) must not decide them."""
    use = [s for s in scores if s.prefix >= rows and bool(torch.isfinite(s.values[:rows]).all())]
    perm = torch.randperm(rows, generator=torch.Generator().manual_seed(seed))
    preds = {s.label: s.values[:rows][perm] for s in use}
    y = labels[:rows].double()[perm]
    res = {
        "auroc": PairedBootstrap(auroc, preds, y, n_boot=n_boot, generator=torch.Generator().manual_seed(seed)),
        "ndcg": PairedBootstrap(ndcg10, preds, y, n_boot=n_boot, generator=torch.Generator().manual_seed(seed)),
    }
    if mutations is not None:
        strata = y + 2 * mutations[:rows].double()[perm]
        res["auroc_k"] = PairedBootstrap(
            auroc_within, preds, strata, n_boot=n_boot, generator=torch.Generator().manual_seed(seed)
        )
    return res, use


def spearman_interval(x: list[float], y: list[float], *, n_boot: int, seed: int = 0) -> tuple[Estimate, int]:
    """Spearman's rho of the pairs where both are known, with its bootstrap interval, and n."""
    pairs = [(a, b) for a, b in zip(x, y) if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)]
    if len(pairs) < 3:
        return Estimate(float("nan"), float("nan"), float("nan"), len(pairs), 0), len(pairs)
    a, b = (torch.tensor(c, dtype=torch.float64) for c in zip(*pairs))
    pb = PairedBootstrap(spearman, {"x": a}, b, n_boot=n_boot, generator=torch.Generator().manual_seed(seed))
    return pb.estimate("x"), len(pairs)

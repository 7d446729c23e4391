"""Metrics of scores against measured values (variant scores against DMS fitness, binder labels), batched over
``[..., n]`` (float64) so that a bootstrap evaluates all its resamples at once, and their bootstrap intervals."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..errors import MLMProbError

BOOT_ELEMENTS = 1 << 22  # resample elements evaluated at once
Metric = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (predictions, targets) [..., n] -> values [...]


@dataclass(frozen=True)
class Estimate:
    """A metric on the data, with a bootstrap interval at ``level``; ``n``: points, ``n_boot``:
    resamples on which the metric was defined (those the interval is taken over)."""

    value: float
    low: float
    high: float
    n: int
    n_boot: int
    level: float = 0.95

    def fmt(self, digits: int = 3) -> str:
        """``value [low, high]``; ``n/a`` when the value is undefined, the value alone without an interval.

        >>> Estimate(0.5, 0.25, 0.75, 10, 100).fmt(2), Estimate(0.5, math.nan, math.nan, 10, 0).fmt(1)
        ('0.50 [0.25, 0.75]', '0.5')
        """
        if math.isnan(self.value):
            return "n/a"
        if math.isnan(self.low):
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"

    @property
    def above_zero(self) -> bool:
        return self.low > 0

    @property
    def below_zero(self) -> bool:
        return self.high < 0


def rank_average(x: torch.Tensor) -> torch.Tensor:
    """1-based ranks along the last dim, ties given their mean rank (float64).

    >>> rank_average(torch.tensor([3.0, 1.0, 3.0, 2.0])).tolist()
    [3.5, 1.0, 3.5, 2.0]
    """
    s, order = torch.sort(x, dim=-1, stable=True)
    n = x.shape[-1]
    new = torch.ones_like(s, dtype=torch.bool)
    new[..., 1:] = s[..., 1:] != s[..., :-1]
    group = torch.cumsum(new, -1) - 1
    pos = torch.arange(1, n + 1, dtype=torch.float64).expand(s.shape)
    total = torch.zeros(s.shape, dtype=torch.float64).scatter_add_(-1, group, pos)
    count = torch.zeros(s.shape, dtype=torch.float64).scatter_add_(-1, group, torch.ones_like(pos))
    mean = (total / count.clamp(min=1)).gather(-1, group)
    return torch.empty_like(mean).scatter_(-1, order, mean)


def _pearson(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a = a - a.mean(-1, keepdim=True)
    b = b - b.mean(-1, keepdim=True)
    den = (a.square().sum(-1) * b.square().sum(-1)).sqrt()
    return torch.where(den > 0, (a * b).sum(-1) / den, torch.full_like(den, float("nan")))


def spearman(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Spearman's rank correlation along the last dim (ties share their mean rank; NaN for a constant side).

    >>> round(float(spearman(torch.tensor([1., 2, 3, 4]), torch.tensor([1., 3, 2, 4]))), 12)
    0.8
    """
    return _pearson(rank_average(pred.double()), rank_average(target.double()))


def auroc(pred: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Area under the ROC curve along the last dim (Mann-Whitney, ties 1/2; NaN without both classes).

    >>> float(auroc(torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0, 0, 1, 1])))
    0.75
    """
    pos = labels > 0.5
    n1 = pos.sum(-1).double()
    n0 = pos.shape[-1] - n1
    u = (rank_average(pred.double()) * pos).sum(-1) - n1 * (n1 + 1) / 2
    ok = (n1 > 0) & (n0 > 0)
    return torch.where(ok, u / (n1 * n0).clamp(min=1), torch.full_like(n1, float("nan")))


def auroc_within(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """AUROC over the positive / negative pairs of the same stratum along the last dim: ``target`` = ``label + 2 k`` for
    0/1 ``label`` and integer stratum ``k`` (e.g. binder / non-binder and the number of mutations). Mann-Whitney within
    each stratum, summed over the strata (ties count 1/2); a score that only orders the strata gets exactly 0.5."""
    y = torch.remainder(target, 2)
    k = torch.div(target, 2, rounding_mode="floor").long()
    n = pred.shape[-1]
    k = k - k.min()
    S = int(k.max()) + 1
    combined = k.double() * (n + 1) + rank_average(pred.double())
    rank = rank_average(combined)  # strata in order, ranks within kept
    zeros = torch.zeros(k.shape[:-1] + (S,), dtype=torch.float64)
    size = zeros.scatter_add(-1, k, torch.ones_like(rank))  # [..., S]
    below = torch.cumsum(size, -1) - size  # items in lower strata
    within = rank - below.gather(-1, k)
    n1 = zeros.scatter_add(-1, k, y.double())
    n0 = size - n1
    u = (within * y).sum(-1) - (n1 * (n1 + 1) / 2).sum(-1)
    pairs = (n1 * n0).sum(-1)
    return torch.where(pairs > 0, u / pairs.clamp(min=1), torch.full_like(u, float("nan")))


def ndcg(pred: torch.Tensor, target: torch.Tensor, top: float = 0.1) -> torch.Tensor:
    """NDCG at the top ``top`` fraction along the last dim: gains the targets min-max scaled, over the ``k = max(1,
    floor(top n))`` best predictions, ties in input order; NaN for constant targets.

    >>> t = torch.arange(10.)           # k = 1: only the best prediction counts
    >>> float(ndcg(t, t)), round(float(ndcg(-(t - 5).abs(), t)), 4)   # best first; then the one of gain 5/9
    (1.0, 0.5556)
    """
    target = target.double()
    lo, hi = target.amin(-1, keepdim=True), target.amax(-1, keepdim=True)
    span = hi - lo
    gain = (target - lo) / torch.where(span > 0, span, torch.ones_like(span))
    k = max(1, math.floor(top * target.shape[-1] + 1e-9))
    disc = 1.0 / torch.log2(torch.arange(2, k + 2, dtype=torch.float64))
    order = torch.sort(pred.double(), dim=-1, descending=True, stable=True).indices[..., :k]
    dcg = (gain.gather(-1, order) * disc).sum(-1)
    idcg = (torch.sort(gain, dim=-1, descending=True).values[..., :k] * disc).sum(-1)
    return torch.where(span[..., 0] > 0, dcg / idcg.clamp(min=1e-300), torch.full_like(dcg, float("nan")))


def top_recall(pred: torch.Tensor, target: torch.Tensor, top: float = 0.1) -> torch.Tensor:
    """Recall of the top ``top`` fraction along the last dim.

    >>> t = torch.arange(20.)           # the top 10%: {18, 19}; then {0, 19} predicted
    >>> float(top_recall(t, t)), float(top_recall(torch.where(t == 0, 100., t), t))
    (1.0, 0.5)
    """
    pred, target = pred.double(), target.double()
    q = torch.tensor(1.0 - top, dtype=torch.float64)
    best_t = target >= torch.quantile(target, q, dim=-1, keepdim=True)
    best_p = pred >= torch.quantile(pred, q, dim=-1, keepdim=True)
    return (best_t & best_p).sum(-1).double() / best_t.sum(-1).double()


def _check(pred, target, what: str = "target") -> tuple[torch.Tensor, torch.Tensor]:
    pred, target = torch.as_tensor(pred, dtype=torch.float64), torch.as_tensor(target, dtype=torch.float64)
    if pred.dim() != 1 or pred.shape != target.shape:
        raise MLMProbError(
            f"predictions and {what} must be 1-D of the same length, got shapes "
            f"{tuple(pred.shape)} and {tuple(target.shape)}"
        )
    if len(pred) < 2:
        raise MLMProbError(f"a metric needs at least 2 points, got {len(pred)}")
    bad = ~(torch.isfinite(pred) & torch.isfinite(target))
    if bad.any():
        raise MLMProbError(
            f"{int(bad.sum())} of {len(pred)} points are NaN or infinite (first at index "
            f"{int(bad.nonzero()[0])}); drop them first"
        )
    return pred, target


def _percentile(value: float, boots: torch.Tensor, n: int, level: float) -> Estimate:
    boots = boots[torch.isfinite(boots)]
    if len(boots) == 0:
        return Estimate(value, float("nan"), float("nan"), n, 0, level)
    lo, hi = torch.quantile(boots, torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)).tolist()
    return Estimate(value, lo, hi, n, len(boots), level)


#: The most bootstrap resamples: their metric values are kept in memory (8 bytes each, per method).
MAX_BOOT = 1_000_000


def bootstrap(
    metric: Metric, pred, target, *, generator: torch.Generator, n_boot: int = 1000, level: float = 0.95
) -> Estimate:
    """``metric(pred, target)`` with a percentile bootstrap interval (resamples of all ``n`` points).

    >>> g = torch.Generator().manual_seed(0)
    >>> e = bootstrap(spearman, torch.arange(30.), torch.arange(30.) ** 2, generator=g, n_boot=200)
    >>> e.value, e.low, e.high
    (1.0, 1.0, 1.0)
    """
    pred, target = _check(pred, target)
    return PairedBootstrap(metric, {"": pred}, target, n_boot=n_boot, generator=generator, level=level).estimate("")


class PairedBootstrap:
    """A metric of several scores against one target on the same ``n_boot`` resamples of the ``n``
    points, so that the difference of two scores gets its own interval.

    >>> t = torch.arange(20.)
    >>> pb = PairedBootstrap(spearman, {"a": t, "b": -t}, t, n_boot=50, generator=torch.Generator().manual_seed(0))
    >>> pb.estimate("a").fmt(1), pb.difference("a", "b").fmt(1)
    ('1.0 [1.0, 1.0]', '2.0 [2.0, 2.0]')
    """

    def __init__(
        self,
        metric: Metric,
        preds: dict[str, torch.Tensor],
        target: torch.Tensor,
        *,
        n_boot: int,
        generator: torch.Generator,
        level: float = 0.95,
    ):
        self.n = n = len(target)
        if n < 2:
            raise MLMProbError(f"a bootstrap needs at least 2 rows, got {n}")
        if n_boot < 1:
            raise MLMProbError(f"n_boot must be at least 1, got {n_boot}")
        if n_boot > MAX_BOOT:
            raise MLMProbError(f"n_boot must be at most {MAX_BOOT:,} (every resample's value is kept), got {n_boot}")
        if not 0 < level < 1:
            raise MLMProbError(f"level must lie in (0, 1), got {level}")
        self.level = level
        self.values = {k: float(metric(p, target)) for k, p in preds.items()}
        per = max(1, BOOT_ELEMENTS // n)  # every prediction on the same resamples of the n points
        boots: dict[str, list] = {k: [] for k in preds}
        for start in range(0, n_boot, per):
            idx = torch.randint(n, (min(per, n_boot - start), n), generator=generator)
            t = target[idx]
            for k, p in preds.items():
                boots[k].append(metric(p[idx], t))
        self.boots = {k: torch.cat(v) for k, v in boots.items()}

    def estimate(self, key: str) -> Estimate:
        return _percentile(self.values[key], self.boots[key], self.n, self.level)

    def difference(self, a: str, b: str) -> Estimate:
        """The metric of ``a`` minus that of ``b``, its interval from the paired resamples."""
        return _percentile(self.values[a] - self.values[b], self.boots[a] - self.boots[b], self.n, self.level)


def evaluate(
    pred,
    target=None,
    *,
    generator: torch.Generator,
    labels=None,
    top: float = 0.1,
    n_boot: int = 1000,
    level: float = 0.95,
) -> dict[str, Estimate]:
    """Spearman, NDCG and top recall at ``top`` against measured ``target`` values, and AUROC
    against 0/1 ``labels`` (e.g. a fitness threshold, or binder / non-binder), for whichever of the
    two is given, each with a bootstrap interval. Every metric sees the same resamples (a copy of
    ``generator``'s state each); ``generator`` ends advanced by one bootstrap.

    >>> g = torch.Generator().manual_seed(0)
    >>> r = evaluate(torch.tensor([0.1, 0.4, 0.35, 0.8]), labels=torch.tensor([0, 0, 1, 1]), generator=g, n_boot=50)
    >>> list(r), r["auroc"].value
    (['auroc'], 0.75)
    """
    if target is None and labels is None:
        raise MLMProbError("evaluate needs measured target values, 0/1 labels, or both")
    if not 0 < top <= 1:
        raise MLMProbError(f"top must be a fraction in (0, 1], got {top}")
    if target is not None:
        pred, target = _check(pred, target)
    if labels is not None:
        pred, y = _check(pred, labels, "labels")
        if not ((y == 0) | (y == 1)).all():
            raise MLMProbError("labels must be 0 or 1")
        if y.min() == y.max():
            raise MLMProbError("AUROC needs both labels 0 and 1 among the points")
    state = generator.get_state()
    out: dict[str, Estimate] = {}

    def run(fn, y):  # the first bootstrap advances generator; the others run on copies of its state
        g = torch.Generator().set_state(state) if out else generator
        return bootstrap(fn, pred, y, generator=g, n_boot=n_boot, level=level)

    if target is not None:
        out["spearman"] = run(spearman, target)
        out["ndcg"] = run(lambda p, t: ndcg(p, t, top), target)
        out["top_recall"] = run(lambda p, t: top_recall(p, t, top), target)
    if labels is not None:
        out["auroc"] = run(auroc, y)
    return out

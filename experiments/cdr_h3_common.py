"""What the CDR-H3 runner (``cdr_h3``, ``cdr_h3_runner``) and its report (``cdr_h3_report``) share: the
result file names, the sequence metrics of a design (``seq_metrics``, computed by ``mlmprob.metrics``),
the sampler configurations and the tables that read them, the run settings, and the results reader.
Neither the runner nor the report is imported here, so the report never depends on the runner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mlmprob.errors import MLMProbError
from mlmprob.metrics.sequences import bleu, identity, stutter_rate
from mlmprob.runtime.log import read_log

RESULTS_FILE, RUNS_FILE, WORK_DIR = "results.jsonl", "runs.jsonl", "work"
PTEMPS = (2.0, 1.5, 1.0, 0.8, 0.5)
TOPPS = (1.0, 0.99, 0.95, 0.9, 0.8)
ANNEALS = (0.02, 0.04, 0.06)
T5_ANNEAL, BLOCK_START, MP_ITERATIONS = 0.02, 4, 10


# -- metrics ---------------------------------------------------------------------------------------


def seq_metrics(cdr: str, native: str | None) -> dict:
    """``identity``, ``bleu`` (sentence BLEU-4) and ``stutter`` of one designed sequence (identity and
    BLEU None without a native sequence).

    >>> seq_metrics("ACDE", "ACDF")
    {'identity': 0.75, 'bleu': 0.0, 'stutter': 0.0}
    """
    return {
        "identity": None if native is None else identity(cdr, native),
        "bleu": None if native is None else bleu(cdr, native, max_n=4),
        "stutter": stutter_rate(cdr),
    }


# -- configurations --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """One sampler setting. ``kind``: ``"mcmc"`` (``sample`` with ``method``: ``"mh"``, ``"gibbs"`` or
    ``"ancestral"``), ``"warm_start"`` or ``"mask_predict"``. ``block_start > 1``: block size decreasing
    linearly to 1 over the run; ``anneal > 0``: target temperature ``max(0.05, 1 - anneal * epoch)``;
    ``order``: the order of a sweep (MH, Gibbs) or of an ancestral draw (``"l2r"``, ``"random"``);
    ``unconditional``: all-mask sequence without context instead of CDR-H3 redesign."""

    name: str
    kind: str = "mcmc"
    method: str = "mh"
    energy: str = "local"
    proposal_temperature: float = 1.0
    top_p: float = 1.0
    block_start: int = 1
    anneal: float = 0.0
    iterations: int = MP_ITERATIONS
    unconditional: bool = False
    order: str = "random"

    def sampler_spec(self, total: int):
        """The :class:`~mlmprob.sampling.spec.SamplerSpec` of an ``mcmc`` configuration run for ``total``
        epochs from its warm start (no burn-in: every epoch is recorded)."""
        from mlmprob.sampling.spec import SamplerSpec, method_of

        options = dict(
            method=self.method,
            energy=self.energy,
            epochs=total,
            burn_in=0,
            block_size=("linear", self.block_start, 1, total) if self.block_start > 1 else 1,
            proposal_temperature=self.proposal_temperature,
            top_p=self.top_p,
            anneal=self.anneal,
            temperature_floor=0.05,
            order=self.order,
            init="given",
            energies=True,  # the report's energies of the ancestral draws too
        )
        # the options this method takes: Gibbs has no target (no annealing), ancestral draws no blocks or init
        takes = method_of(self.method).spec.__dataclass_fields__
        return SamplerSpec(**{k: v for k, v in options.items() if k in takes})


def _configs() -> dict[str, Config]:
    cs: list[Config] = [Config("t5/warm-start", kind="warm_start"), Config("t5/mask-predict-it10", kind="mask_predict")]

    # run order = this order: the headline comparisons first, so that a cut-short run has them
    def t1(t):
        return [
            Config(f"t1/mh-local-pt{t}", proposal_temperature=t),
            Config(f"t1/gibbs-pt{t}", method="gibbs", proposal_temperature=t),
        ]

    cs += t1(1.0) + [Config("f1/mh-raw-pt1.0", energy="raw")] + t1(0.8)
    cs += [
        Config("t6/ancestral-l2r", method="ancestral", order="l2r"),
        Config("t6/ancestral-random", method="ancestral", order="random"),
    ]
    for e in ("local", "raw"):
        cs.append(Config(f"t5/mh-{e}-pt0.8-anneal{T5_ANNEAL}", energy=e, proposal_temperature=0.8, anneal=T5_ANNEAL))
    cs += [
        Config("u/warm-start", kind="warm_start", unconditional=True),
        Config("u/mask-predict-it10", kind="mask_predict", unconditional=True),
        Config("u/gibbs-pt1.0", method="gibbs", unconditional=True),
    ]
    cs += [
        Config("t3/block-gibbs", method="gibbs", block_start=BLOCK_START),
        Config("t3/block-mh-raw", energy="raw", block_start=BLOCK_START),
        Config("t3/block-mh-local", block_start=BLOCK_START),
    ]
    for r in ANNEALS:
        cs += [Config(f"t4/anneal{r}-mh-local", anneal=r), Config(f"t4/anneal{r}-mh-raw", energy="raw", anneal=r)]
    cs += t1(2.0) + t1(1.5) + t1(0.5)
    for p in TOPPS[1:]:
        cs += [Config(f"t2/mh-local-topp{p}", top_p=p), Config(f"t2/gibbs-topp{p}", method="gibbs", top_p=p)]
    cs.append(Config("u/mh-local-pt1.0", unconditional=True))
    return {c.name: c for c in cs}


CONFIGS: dict[str, Config] = _configs()

# which configurations each table (and its figure) reads; "u" = unconditional generation
TABLES: dict[str, list[str]] = {
    "1": [f"t1/{m}-pt{t}" for t in PTEMPS for m in ("mh-local", "gibbs")] + ["f1/mh-raw-pt1.0"],
    "2": ["t1/mh-local-pt1.0", "t1/gibbs-pt1.0"]
    + [f"t2/{m}-topp{p}" for p in TOPPS[1:] for m in ("mh-local", "gibbs")],
    "3": ["t3/block-gibbs", "t3/block-mh-raw", "t3/block-mh-local"],
    "4": [f"t4/anneal{r}-mh-{e}" for r in ANNEALS for e in ("local", "raw")],
    "5": [
        "t5/warm-start",
        "t1/gibbs-pt0.8",
        "t5/mask-predict-it10",
        f"t5/mh-local-pt0.8-anneal{T5_ANNEAL}",
        f"t5/mh-raw-pt0.8-anneal{T5_ANNEAL}",
    ],
    "u": ["u/warm-start", "u/mask-predict-it10", "u/gibbs-pt1.0", "u/mh-local-pt1.0"],
    "6": ["t5/warm-start", "t1/mh-local-pt1.0", "t1/gibbs-pt1.0", "t6/ancestral-l2r", "t6/ancestral-random"],
}
for _names in TABLES.values():
    assert all(n in CONFIGS for n in _names), _names


def select_configs(tables: Sequence[str], only: Sequence[str] | None = None) -> list[Config]:
    """Configurations the tables need, in run order (``CONFIGS`` order: the headline ones first).

    >>> [c.name for c in select_configs(["3"])]
    ['t3/block-gibbs', 't3/block-mh-raw', 't3/block-mh-local']
    """
    bad = [t for t in tables if t not in TABLES]
    if bad:
        raise MLMProbError(f"unknown table {bad[0]!r}; choose from {', '.join(TABLES)}")
    want = {n for t in tables for n in TABLES[t]}
    if only:
        unknown = [n for n in only if n not in CONFIGS]
        if unknown:
            raise MLMProbError(f"unknown configuration {unknown[0]!r}; known: {', '.join(CONFIGS)}")
        want = set(only)
    return [c for n, c in CONFIGS.items() if n in want]


# -- run settings and results --------------------------------------------------------------------


@dataclass(frozen=True)
class RunOptions:
    """Settings shared by every configuration of one result folder."""

    epochs: int = 4
    burn_in: int = 2
    chains: int = 3
    uncond_length: int = 120
    uncond_chains: int = 3
    seed: int = 0
    batch_tokens: int | None = None

    @property
    def total_epochs(self) -> int:
        return self.burn_in + self.epochs


def read_results(path: Path) -> list[dict]:
    """Records of a results file; a line cut short by a kill is skipped; for a repeated
    (configuration, unit, chain) the last line wins."""
    out = {(r["config"], r["unit"], r["chain"]): r for r in read_log(path)}
    return list(out.values())

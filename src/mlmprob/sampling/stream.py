"""Sampling record by record, for a stream of sequences: the API behind ``mlmprob sample --out F.jsonl``.

Each input record gets ``chains`` chains, sampled in one :func:`~mlmprob.sampling.sample` call with a
generator seeded from ``(seed, record id)`` alone (:func:`record_seed`, by ``runtime.seeds``), so a
record's chains are the same whichever shard, worker, chunk or resumed run samples it. :class:`SampleJob` is picklable (the
streaming engine sends it to worker processes or Ray actors); its ``run`` turns a chunk of records
into one result row per chain (:meth:`SampleJob.chain_rows`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence, Union

import torch

from ..errors import MLMProbError
from ..models.spec import ModelJob
from ..numbering import check_scheme, parse_cdr
from ..runtime.inputs import Record
from ..runtime.seeds import derive_seed
from .api import METHODS, SampleResult, sample
from .cdr import cdr_mask
from .proposals import ProposalConfig
from .schedules import LinearAnneal, LinearBlockSize
from .speculative import DEFAULT_DRAFT_K

BlockSpec = Union[int, tuple]   # K, or ("linear", START, END[, EPOCHS]) as ``mlmprob sample --block-size`` parses it


def record_seed(seed: int, record_id: str) -> int:
    """A record's generator seed: ``runtime.seeds.derive_seed(seed, "record", record_id)``.

    >>> record_seed(0, "seq1") == record_seed(0, "seq1") != record_seed(1, "seq1")
    True
    """
    return derive_seed(seed, "record", record_id)


def free_positions(mlm, enc, row: int, name: str, seq: str, positions: Sequence[int] | None = None,
                   cdr: str | None = None, numbering: str = "imgt") -> torch.Tensor:
    """Bool ``[L]``: the tokens of sequence ``row`` of the encoding ``enc`` (of ``seq``) that are sampled:
    a CDR (``cdr``: ``"H1"`` ... ``"L3"``, numbered by anarcism under ``numbering``, see
    :func:`~mlmprob.sampling.cdr.cdr_mask`), the tokens of the 0-based residue/word indices
    ``positions``, else every residue/word and every mask token before the padding (a tokenizer may count
    its mask token as special, outside the words). Errors name the sequence (``name``)."""
    word_ids = enc.word_ids[row]
    if cdr:
        try:
            return cdr_mask(seq, word_ids, cdr, numbering)
        except MLMProbError as e:
            raise MLMProbError(f"{name}: {e}") from None
    if positions:
        n_words = int(word_ids.max()) + 1
        bad = [w for w in positions if not 0 <= w < n_words]
        if bad:
            raise MLMProbError(f"{name}: position {bad[0]} is outside its {n_words} residues/words")
        return torch.isin(word_ids, torch.tensor(list(positions)))
    inside = torch.arange(len(word_ids)) < int(enc.lengths[row])
    return (word_ids >= 0) | ((enc.input_ids[row] == mlm.mask_id) & inside)


def block_schedule(block_size: BlockSpec, total_epochs: int):
    """The sampler's block size: ``K``, or a ``LinearBlockSize`` over ``EPOCHS`` (default: every epoch)."""
    if isinstance(block_size, tuple):
        _, start, end, *n = block_size
        return LinearBlockSize(start, end, n[0] if n else total_epochs)
    return block_size


def check_block_size(block_size: BlockSpec, n_free: int, name: str) -> None:
    """Refuse a block size (a schedule's largest) larger than the ``n_free`` free positions of record ``name``.

    >>> check_block_size(("linear", 4, 1), 4, "x")
    >>> check_block_size(99, 30, "x")
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: x: --block-size 99 is larger than its 30 free positions; use at most 30
    """
    k = max(block_size[1:3]) if isinstance(block_size, tuple) else block_size
    if k > n_free:
        raise MLMProbError(f"{name}: --block-size {block_text(block_size)} is larger than its {n_free} free "
                           f"positions; use at most {n_free}")


def block_text(block_size: BlockSpec) -> str:
    """``block_size`` as ``--block-size`` writes it.

    >>> block_text(2), block_text(("linear", 4, 1)), block_text(("linear", 4, 1, 3))
    ('2', '4:1', '4:1:3')
    """
    if isinstance(block_size, tuple):
        return ":".join(str(x) for x in block_size[1:])
    return str(block_size)


def chain_rates(result: SampleResult) -> tuple[list[float], list[float]]:
    """Per-chain acceptance and novelty rates over the epochs after burn-in, pooled over proposals as
    ``SampleResult.accept_rate`` pools them over all chains. A chain with ``n`` free positions makes
    ``ceil(n / k)`` proposals in an epoch of block size ``k`` (``k`` capped at ``n``), so its per-epoch
    rates are weighted by that count. NaN when there are no epochs after burn-in."""
    n_free = result.free.sum(-1).to(torch.float64)                                       # [B]
    k = result.block_size.to(torch.float64)[:, None].clamp(min=1)                          # [E, 1]
    props = torch.ceil(n_free[None, :] / torch.minimum(k, n_free[None, :]).clamp(min=1))  # [E, B]
    post = slice(result.burn_in, None)
    w = props[post]
    total = w.sum(0)
    out = []
    for rate in (result.accept, result.novel):
        pooled = (rate[post] * w).sum(0) / total.clamp(min=1)
        out.append([float(x) if t > 0 else math.nan for x, t in zip(pooled, total)])
    return out[0], out[1]


@dataclass(frozen=True)
class SampleJob(ModelJob):
    """Everything a worker needs to sample the chains of chunks of records (picklable; loaded by
    :class:`~mlmprob.models.spec.ModelJob`: its state is the model's reader)."""

    chains: int = 4
    seed: int = 0
    method: str = "mh"
    energy: str = "local"
    epochs: int = 20
    burn_in: int = 5
    thin: int = 1
    block_size: BlockSpec = 1
    proposal_temperature: float = 1.0
    top_p: float = 1.0
    target_temperature: float = 1.0
    anneal: float = 0.0
    temperature_floor: float = 0.05
    order: str = "random"
    init: str = "given"
    score_all: bool = False
    positions: tuple[int, ...] | None = None
    cdr: str | None = None        # a CDR (H1 ... L3) to sample, numbered under `numbering`
    numbering: str = "imgt"
    skip_invalid: bool = False
    tokens_per_step: int = 1
    draft_k: int | None = None     # speculative only (None: DEFAULT_DRAFT_K)

    def __post_init__(self):
        if self.method not in METHODS:
            raise MLMProbError(f"--method must be one of {METHODS}, got {self.method!r}")
        if self.chains < 1:
            raise MLMProbError(f"--chains must be >= 1, got {self.chains}")
        if self.tokens_per_step != 1 and self.method != "ancestral":
            raise MLMProbError(f"--tokens-per-step is for --method ancestral, got {self.tokens_per_step} with "
                               f"{self.method}")
        if self.tokens_per_step < 1:
            raise MLMProbError(f"--tokens-per-step must be >= 1, got {self.tokens_per_step}")
        if self.draft_k is not None and self.method != "speculative":
            raise MLMProbError(f"--draft-k is for --method speculative, got {self.draft_k} with {self.method}")
        if self.draft_k is not None and self.draft_k < 1:
            raise MLMProbError(f"--draft-k must be >= 1, got {self.draft_k}")
        if self.epochs < 1:
            raise MLMProbError(f"--epochs must be >= 1, got {self.epochs}")
        if self.burn_in < 0:
            raise MLMProbError(f"--burn-in must be >= 0, got {self.burn_in}")
        if not 1 <= self.thin <= self.epochs:
            raise MLMProbError(f"--thin must lie in 1..epochs ({self.epochs}), got {self.thin}")
        if not (self.target_temperature > 0) or math.isinf(self.target_temperature):
            raise MLMProbError(f"--target-temperature must be finite and > 0, got {self.target_temperature}")
        ProposalConfig(self.proposal_temperature, self.top_p)   # raises on bad values
        self.schedules()
        if self.cdr is not None:
            check_scheme(parse_cdr(self.cdr), self.numbering)

    def schedules(self):
        """``(block_size, target_temperature)`` as :func:`~mlmprob.sampling.sample` takes them."""
        tt = self.target_temperature
        if self.anneal > 0:
            tt = LinearAnneal(self.target_temperature, self.anneal, self.temperature_floor)
        return block_schedule(self.block_size, self.burn_in + self.epochs), tt

    def settings(self) -> dict:
        """The sampler's settings as plain JSON values (written into every row and the output's config)."""
        return {"method": self.method, "energy": self.energy, "chains": self.chains, "epochs": self.epochs,
                "burn_in": self.burn_in, "thin": self.thin, "block_size": block_text(self.block_size),
                "proposal_temperature": self.proposal_temperature, "top_p": self.top_p,
                "target_temperature": self.target_temperature, "anneal": self.anneal,
                "temperature_floor": self.temperature_floor, "order": self.order, "init": self.init,
                "score_all": self.score_all, "seed": self.seed,
                # only ancestral runs store it: the MCMC settings (and their resumable outputs) stay as they were
                **({"tokens_per_step": self.tokens_per_step} if self.method == "ancestral" else {}),
                **({"draft_k": self.draft_k or DEFAULT_DRAFT_K} if self.method == "speculative" else {})}

    def run(self, state, records: Sequence[Record]) -> tuple[list[dict], list[tuple[str, str]]]:
        """Sample one chunk: ``chains`` rows per record (in input order) and the ``(id, reason)`` of the
        records skipped (``skip_invalid``: records whose sequence or free positions are unusable)."""
        mlm = state.mlm
        rows: list[dict] = []
        skipped: list[tuple[str, str]] = []
        for rec in records:
            try:
                rows.extend(self.chain_rows(mlm, rec))
            except MLMProbError as e:
                if not self.skip_invalid:
                    raise
                skipped.append((rec.id, str(e)))
        return rows, skipped

    def sample_record(self, mlm, rec: Record) -> SampleResult:
        """The ``chains`` chains of one record (generator seeded by :func:`record_seed`); the forward budget is
        the model reader's (:meth:`mlmprob.models.reader.Reader.with_budget`)."""
        try:
            enc = mlm.encode([rec.seq])
        except MLMProbError as e:
            raise MLMProbError(f"{rec.id}: {e}") from None
        free = free_positions(mlm, enc, 0, rec.id, rec.seq, self.positions, self.cdr, self.numbering)[None, :]
        if self.method not in ("ancestral", "speculative"):
            check_block_size(self.block_size, int(free.sum()), rec.id)
        ids, free = enc.input_ids.repeat(self.chains, 1), free.repeat(self.chains, 1)
        # identity is measured against the input when it has no masks at the free positions
        reference = None if (ids[free] == mlm.mask_id).any() else ids.clone()
        bs, tt = self.schedules()
        g = torch.Generator().manual_seed(record_seed(self.seed, rec.id))
        try:
            return sample(mlm, ids, method=self.method, energy=self.energy, epochs=self.epochs,
                          burn_in=self.burn_in, block_size=bs, proposal_temperature=self.proposal_temperature,
                          top_p=self.top_p, target_temperature=tt, order=self.order, positions=free, generator=g,
                          init=self.init, thin=self.thin, score_all=self.score_all, reference=reference,
                          tokens_per_step=self.tokens_per_step,
                          draft_k=self.draft_k if self.method == "speculative" else None)
        except MLMProbError as e:
            raise MLMProbError(f"{rec.id}: {e}") from None

    def chain_rows(self, mlm, rec: Record) -> list[dict]:
        """One row per chain of ``rec``: ``id`` (``RECORD/chainC``), ``record``, ``chain``, the final
        ``sequence`` (decoded), its ``e_local`` and ``e_raw``, ``accept_rate`` and ``novel_rate`` (after
        burn-in), ``identity`` to the input (None when the input has masks at free positions),
        ``energy_trace`` (the target energy after every epoch, burn-in included), ``n_free``, the
        sampler settings and ``record_seed``; ancestral draws have no acceptance (None) and add ``log_prob``,
        the final draw's log-probability along its order; speculative draws add it too, with
        ``accept_rate`` the drafts' acceptance rate, and :func:`cost_columns`. NaN becomes None when written."""
        r = self.sample_record(mlm, rec)
        accept, novel = chain_rates(r)
        if r.method == "ancestral":
            accept = novel = [None] * self.chains
        elif r.method == "speculative":
            accept, novel = draft_acceptance(r), [None] * self.chains
        settings = self.settings()
        rseed = record_seed(self.seed, rec.id)
        rows = []
        for c in range(self.chains):
            rows.append({"id": f"{rec.id}/chain{c}", "record": rec.id, "chain": c,
                         "sequence": mlm.decode(r.final_ids[c]),
                         "e_local": float(r.energy_local[-1, c]), "e_raw": float(r.energy_raw[-1, c]),
                         "accept_rate": accept[c], "novel_rate": novel[c],
                         "identity": None if r.identity is None else float(r.identity[-1, c]),
                         "energy_trace": r.energy[:, c].tolist(), "n_free": int(r.free[c].sum()),
                         **({} if r.log_prob is None else {"log_prob": float(r.log_prob[-1, c])}),
                         **(cost_columns(r, c) if r.method == "speculative" else {}),
                         **settings, "record_seed": rseed})
        return rows


def draft_acceptance(result: SampleResult) -> list[float]:
    """Per chain, the fraction of the drafts put to the acceptance test that were kept, pooled over the
    epochs after burn-in (NaN when none was tested)."""
    post = slice(result.burn_in, None)
    n = result.proposal_counts[post].to(torch.float64)
    kept = (result.accept[post] * n).sum(0)
    return [float(a / t) if t > 0 else math.nan for a, t in zip(kept, n.sum(0))]


def cost_columns(result: SampleResult, chain: int) -> dict:
    """What chain ``chain``'s draws cost, per draw (mean over every epoch): ``rounds_per_sample``,
    ``calls_per_sample`` (sequential model calls) and ``acceptance_length`` (positions revealed per
    round); and ``forward_rows_per_sample``, the record's rows over all its draws (every chain)."""
    rounds = result.rounds[:, chain].to(torch.float64)
    n_free = int(result.free[chain].sum())
    E, B = result.rounds.shape
    return {"rounds_per_sample": float(rounds.mean()), "calls_per_sample": float(result.calls[:, chain].double().mean()),
            "acceptance_length": n_free * E / float(rounds.sum()) if float(rounds.sum()) > 0 else math.nan,
            "forward_rows_per_sample": result.forward_rows / (E * B)}

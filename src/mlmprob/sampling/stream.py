"""Sampling record by record, behind ``mlmprob sample --out F.jsonl``: each record's chains in one
:func:`~mlmprob.sampling.sample` call seeded from ``(seed, record id)`` alone (:func:`record_seed`: the same whichever
shard, worker, chunk or resume samples them), one row per chain (:meth:`SampleJob.chain_rows`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..errors import MLMProbError
from ..models.spec import ModelJob
from ..numbering import check_scheme, parse_cdr
from ..positions import WORDS_AND_MASKS, Resolved, resolve, word_mask
from ..runtime.inputs import Record
from ..runtime.seeds import derive_seed
from .api import SampleResult, sample
from .cdr import cdr_mask
from .io import epoch_shown
from .spec import BlockLike, MCMCSpec, SamplerSpec, block_text, method_of


def record_seed(seed: int, record_id: str) -> int:
    """A record's generator seed: ``runtime.seeds.derive_seed(seed, "record", record_id)``."""
    return derive_seed(seed, "record", record_id)


def free_positions(
    mlm,
    enc,
    row: int,
    name: str,
    seq: str,
    positions: Sequence[int] | None = None,
    cdr: str | None = None,
    numbering: str = "imgt",
) -> torch.Tensor:
    """Bool ``[L]``: the sampled tokens of sequence ``row`` of ``enc`` (of ``seq``, named ``name`` in errors): the CDR
    ``cdr`` (numbered under ``numbering``), else the 1-based residue/word numbers ``positions``, else every residue/word
    and mask token (:data:`mlmprob.positions.WORDS_AND_MASKS`)."""
    try:
        sel = None
        if cdr:
            sel = cdr_mask(seq, enc.word_ids[row], cdr, numbering)[None]
        elif positions:
            sel = word_mask(enc.word_ids[row], positions)[None]
        return resolve(mlm, enc.input_ids[row : row + 1], sel, WORDS_AND_MASKS, word_ids=enc.word_ids[row : row + 1])[0]
    except MLMProbError as e:
        raise MLMProbError(f"{name}: {e}") from None


def check_block_size(block_size: BlockLike, n_free: int, name: str) -> None:
    """Refuse a block size (a schedule's largest) larger than the ``n_free`` free positions of record ``name``."""
    if callable(block_size):
        return
    k = max(block_size[1:3]) if isinstance(block_size, tuple) else block_size
    if k > n_free:
        raise MLMProbError(
            f"{name}: --block-size {block_text(block_size)} is larger than its {n_free} free "
            f"positions; use at most {n_free}"
        )


def chain_rates(result: SampleResult) -> tuple[list[float], list[float]]:
    """Per-chain acceptance and novelty rates after burn-in, pooled over proposals as ``SampleResult.accept_rate`` pools
    them (an epoch of block size ``k`` makes ``ceil(n / min(k, n))`` proposals); NaN without epochs after burn-in."""
    n_free = result.free.sum(-1).to(torch.float64)  # [B]
    k = result.block_size.to(torch.float64)[:, None].clamp(min=1)  # [E, 1]
    props = torch.ceil(n_free[None, :] / torch.minimum(k, n_free[None, :]).clamp(min=1))  # [E, B]
    post = slice(result.burn_in, None)
    return _pooled(result.accept[post], props[post]), _pooled(result.novel[post], props[post])


def _pooled(rates: torch.Tensor, weights: torch.Tensor) -> list[float]:
    """Per chain, the epochs' ``rates`` ``[E, B]`` pooled with ``weights`` (NaN where they sum to 0)."""
    total = weights.sum(0)
    pooled = (rates * weights).sum(0) / total.clamp(min=1)
    return [float(x) if t > 0 else math.nan for x, t in zip(pooled, total, strict=True)]


@dataclass(frozen=True)
class SampleJob(ModelJob):
    """What a worker needs to sample chunks of records (picklable; a :class:`~mlmprob.models.spec.ModelJob`): the
    sampler's ``spec``, the ``chains`` per record, the ``seed`` and the free ``positions`` (1-based) or ``cdr``."""

    spec: SamplerSpec = SamplerSpec()  # the defaults are the spec's (MH: 20 epochs after 5 of burn-in)
    chains: int = 4
    seed: int = 0
    positions: tuple[int, ...] | None = None  # 1-based residue/word numbers (--positions)
    cdr: str | None = None  # a CDR (H1 ... L3) to sample, numbered under `numbering`
    numbering: str = "imgt"
    skip_invalid: bool = False

    def __post_init__(self):
        SamplerSpec.check(self.spec)
        if self.chains < 1:
            raise MLMProbError(f"--chains must be >= 1, got {self.chains}")
        self.spec.check_size(self.chains)  # before any model is loaded; again with the records' lengths
        if self.cdr is not None:
            check_scheme(parse_cdr(self.cdr), self.numbering)

    def settings(self) -> dict:
        """The sampler's settings as plain JSON values (written into every row and the output's config)."""
        return self.spec.settings(chains=self.chains, seed=self.seed)

    def run(self, state, records: Sequence[Record]) -> tuple[list[dict], list[tuple[str, str]]]:
        """Sample one chunk: ``chains`` rows per record, in input order, and the ``(id, reason)`` of the records skipped
        (``skip_invalid``); each epoch moves the runner's bar when it shows them."""
        rows: list[dict] = []
        skipped: list[tuple[str, str]] = []

        def on_epoch(rec, total):
            state.advance(1, **epoch_shown(rec, self.spec.energy, self.spec.info.accepts))

        for rec in records:
            try:
                rows.extend(self.chain_rows(state.mlm, rec, on_epoch if state.on_progress is not None else None))
            except MLMProbError as e:
                if not self.skip_invalid:
                    raise
                skipped.append((rec.id, str(e)))
        return rows, skipped

    def sample_record(self, mlm, rec: Record, on_epoch=None) -> SampleResult:
        """The ``chains`` chains of one record (generator seeded by :func:`record_seed`; ``on_epoch`` as
        :func:`~mlmprob.sampling.sample` takes it)."""
        try:
            enc = mlm.encode([rec.seq])
        except MLMProbError as e:
            raise MLMProbError(f"{rec.id}: {e}") from None
        ids, free, reference = self.chains_of(mlm, enc, [(rec.id, rec.seq)])
        g = torch.Generator().manual_seed(record_seed(self.seed, rec.id))
        try:
            where = Resolved(free, WORDS_AND_MASKS)
            return sample(mlm, ids, self.spec, positions=where, generator=g, reference=reference, on_epoch=on_epoch)
        except MLMProbError as e:
            raise MLMProbError(f"{rec.id}: {e}") from None

    def chains_of(self, mlm, enc, records: list[tuple[str, str]]):
        """``(ids, free, reference)`` of ``chains`` chains per record (``(name, sequence)``, encoded as ``enc``), the
        records' chains together; ``reference`` the inputs unless they have masks at free positions."""
        where = (self.positions, self.cdr, self.numbering)
        free = torch.stack([free_positions(mlm, enc, i, name, seq, *where) for i, (name, seq) in enumerate(records)])
        if not self.spec.independent_draws:
            assert isinstance(self.spec, MCMCSpec)  # the methods without independent draws are the MCMC ones
            for (name, _), row in zip(records, free, strict=True):
                check_block_size(self.spec.block_size, int(row.sum()), name)
        self.spec.check_size(len(records) * self.chains, enc.input_ids.shape[1], mlm.vocab_size)
        ids, free = enc.input_ids.repeat_interleave(self.chains, 0), free.repeat_interleave(self.chains, 0)
        return ids, free, None if (ids[free] == mlm.mask_id).any() else ids.clone()

    def chain_rows(self, mlm, rec: Record, on_epoch=None) -> list[dict]:
        """One row per chain of ``rec``: ``id`` (``RECORD/chainC``), ``record``, ``chain``, the final ``sequence``, its
        ``e_local`` and ``e_raw``, ``accept_rate`` and ``novel_rate`` (after burn-in; the drafts' acceptance for
        speculative, None without an accept step), ``identity`` to the input (None when it has masks at free positions),
        ``energy_trace`` (the target energy after every epoch), ``n_free``, the settings and ``record_seed``; with
        replica exchange ``temperature`` (the chain's rung's); independent draws add ``log_prob`` (the final draw's) and
        :func:`cost_columns`, and have energies only when their spec asks for ``energies``. ``on_epoch``: as
        :meth:`sample_record` takes it."""
        r, chains = self.sample_record(mlm, rec, on_epoch), [(rec.id, c) for c in range(self.chains)]
        rows = result_rows(mlm, r, chains, self.settings(), {"record_seed": record_seed(self.seed, rec.id)})
        ladder = getattr(self.spec, "temperatures", None)
        if ladder is not None:  # replica exchange: each chain's rung (the first C chains: the target's)
            for c, row in enumerate(rows):
                row["temperature"] = ladder[c // (self.chains // len(ladder))]
        return rows


def result_rows(
    mlm, r: SampleResult, chains: list[tuple[str, int]], settings: dict, extra: dict | None = None
) -> list[dict]:
    """One row per chain ``b`` of ``r`` (``chains[b]``: its record's id and its chain number there): the
    columns :meth:`SampleJob.chain_rows` lists, then ``settings`` and ``extra``."""
    info, B = method_of(r.method), len(chains)
    accept: Sequence[float | None]
    novel: Sequence[float | None]
    if info.rates == "chain":
        accept, novel = chain_rates(r)
    else:  # the drafts' acceptance, or no accept step
        accept, novel = (draft_acceptance(r) if info.rates == "drafts" else [None] * B), [None] * B
    trace = r.energy  # the target's trace, None when the draws were not scored
    final = [(name, e) for name, e in (("e_local", r.energy_local), ("e_raw", r.energy_raw)) if e is not None]
    return [
        {
            "id": f"{record}/chain{c}",
            "record": record,
            "chain": c,
            "sequence": mlm.decode(r.final_ids[b]),
            **{name: float(e[-1, b]) for name, e in final},
            "accept_rate": accept[b],
            "novel_rate": novel[b],
            "identity": None if r.identity is None else float(r.identity[-1, b]),
            **({} if trace is None else {"energy_trace": trace[:, b].tolist()}),
            "n_free": int(r.free[b].sum()),
            **({} if r.log_prob is None else {"log_prob": float(r.log_prob[-1, b])}),
            **(cost_columns(r, b) if info.costs else {}),
            **settings,
            **(extra or {}),
        }
        for b, (record, c) in enumerate(chains)
    ]


def draft_acceptance(result: SampleResult) -> list[float]:
    """Per chain, the fraction of the drafts tested that were kept after burn-in (NaN when none was tested)."""
    post = slice(result.burn_in, None)
    return _pooled(result.accept[post], result.proposal_counts[post].to(torch.float64))


def cost_columns(result: SampleResult, chain: int) -> dict:
    """What chain ``chain``'s draws cost, per draw (mean over every epoch): ``rounds_per_sample``,
    ``calls_per_sample`` (sequential model calls) and ``acceptance_length`` (positions revealed per
    round); and ``forward_rows_per_sample``, the record's rows over all its draws (every chain)."""
    assert result.rounds is not None and result.calls is not None  # costs: the draws' results, which count them
    rounds = result.rounds[:, chain].to(torch.float64)
    n_free = int(result.free[chain].sum())
    E, B = result.rounds.shape
    return {
        "rounds_per_sample": float(rounds.mean()),
        "calls_per_sample": float(result.calls[:, chain].double().mean()),
        "acceptance_length": n_free * E / float(rounds.sum()) if float(rounds.sum()) > 0 else math.nan,
        "forward_rows_per_sample": result.forward_rows / (E * B),
    }

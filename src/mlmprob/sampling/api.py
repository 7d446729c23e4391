"""``sample``: many MH, degenerate-Gibbs, ancestral or speculative chains in one batch (a driver stepping a
kernel), with burn-in, thinning, per-epoch diagnostics, a resumable JSONL record and a typed result."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch

from ..energies import Positions, as_input_ids, energies_from_logits
from ..errors import MLMProbError
from ..models.protocol import MaskedLM
from ..runtime.log import ResumableLog
from ..runtime.seeds import check_generator
from .diagnostics import effective_sample_size, reference_identity, split_rhat
from .forward import site_logits
from .init import initialize, resolve_free
from .io import EpochRecord, RunFile, generator_state_hex, set_generator_state
from .options import block_size_at, temperature_at
from .spec import METHODS, MCMCSpec, SamplerSpec  # noqa: F401  (METHODS: re-exported)


class _DrawsOnly:
    """What only the independent draws report (:class:`DrawResult`'s fields), None for the MCMC methods; declared
    on a plain base class, so they are not fields of :class:`SampleResult`."""

    log_prob: torch.Tensor | None = None
    rounds: torch.Tensor | None = None
    calls: torch.Tensor | None = None


@dataclass(frozen=True)
class SampleResult(_DrawsOnly):
    """Outcome of ``sample``; epoch axes ``E`` count every epoch (burn-in included), chain axes ``B``:

    - ``samples`` ``[S, B, L]``: the states after each kept epoch (``kept_epochs`` ``[S]``); ``final_ids`` ``[B, L]``;
      ``free`` bool ``[B, L]``;
    - ``energy_local``, ``energy_raw`` ``[E, B]`` (float64): the states' energies after each epoch; ``energy``: the
      target's trace; None for independent draws unless the spec asks for ``energies``;
    - ``accept``, ``novel`` ``[E, B]``, and ``accept_rate``, ``novel_rate`` after burn-in; ``proposal_counts`` ``[E,
      B]``: the proposals behind ``accept`` (speculative: the drafts tested);
    - ``identity`` ``[E, B]`` or None: fraction of free positions equal to the reference;
    - ``ess``, ``rhat``: of the target-energy trace over the kept epochs; ``forward_rows``: rows forwarded;
    - ``target_temperature``, ``block_size``, ``seconds`` ``[E]``.

    ``log_prob``, ``rounds`` and ``calls`` are None for the MCMC methods (see :class:`DrawResult`).
    """

    samples: torch.Tensor
    kept_epochs: torch.Tensor
    final_ids: torch.Tensor
    free: torch.Tensor
    energy_local: torch.Tensor | None
    energy_raw: torch.Tensor | None
    accept: torch.Tensor
    novel: torch.Tensor
    identity: torch.Tensor | None
    target_temperature: torch.Tensor
    block_size: torch.Tensor
    seconds: torch.Tensor
    accept_rate: float
    novel_rate: float
    ess: float
    rhat: float
    forward_rows: int
    proposals: int
    burn_in: int
    method: str
    energy_kind: str
    proposal_counts: torch.Tensor

    @property
    def energy(self) -> torch.Tensor | None:
        """Trace ``[E, B]`` of the target energy (None when the draws were not scored)."""
        if self.energy_local is None:
            return None
        return self.energy_local if self.energy_kind == "local" else self.energy_raw

    @property
    def proposals_per_second(self) -> float:
        t = float(self.seconds.sum())
        return self.proposals / t if t > 0 else math.nan


@dataclass(frozen=True)
class DrawResult(SampleResult):
    """Outcome of ``sample`` for independent draws (ancestral, speculative, the decoders): :class:`SampleResult`'s
    fields, and ``log_prob`` ``[E, B]`` (each draw's log-probability along its order; the decoders: the product of the
    conditionals used), ``rounds`` and ``calls`` ``[E, B]`` (each draw's sequential rounds and model calls, the energy
    pass included when the spec asks for ``energies``).
    """

    log_prob: torch.Tensor = field()
    rounds: torch.Tensor = field()
    calls: torch.Tensor = field()


def sample(
    mlm: MaskedLM,
    init_ids,
    spec: SamplerSpec | None = None,
    *,
    generator: torch.Generator | None = None,
    positions: Positions = None,
    reference=None,
    run_file: RunFile | None = None,
    on_epoch: Callable[[EpochRecord, int], None] | None = None,
    **options,
) -> SampleResult:
    """Run ``B`` chains for ``burn_in + epochs`` epochs as ``spec`` (a :class:`~mlmprob.sampling.spec.SamplerSpec`)
    says; ``options`` are its fields (``sample(m, ids, epochs=4)``), or change a given ``spec``'s. ``init_ids``: token
    ids ``[B, L]`` (one chain per row), or text, a sequence or a list of them (:func:`~mlmprob.energies.as_input_ids`).

    ``method="mh"`` targets ``p(x) ∝ exp(-E(x)/tau)``, ``E`` = ``E_local`` or ``E_raw`` (``energy``) over the free
    positions (``score_all``: every non-special position); ``"gibbs"`` accepts every proposal. An epoch is one sweep
    over each chain's free positions in ``order`` (``"random"``, ``"l2r"``) in blocks of ``block_size``; ``block_size``
    and ``target_temperature`` take schedules (``LinearBlockSize``, ``LinearAnneal``). Proposals are the MLM
    conditionals at ``proposal_temperature`` (0: greedy) and nucleus ``top_p``; MH's ``informed`` and ``sites=k`` make
    exact moves of :mod:`~mlmprob.mcmc.moves` instead (``ceil(n / k)`` an epoch). ``method="ancestral"`` draws every
    epoch an exact sample of ``p_sigma`` of ``mlmprob.loglik`` (``order``: ``"l2r"``, ``"r2l"``, given orders, or
    ``"random"``: the mixture over orders), ``tokens_per_step`` positions per step (approximate for more than 1);
    ``log_prob``: each draw's log-probability along its order. ``"speculative"``: the same exact draws in fewer
    sequential calls (``draft_k`` drafts a round). ``init``: ``"given"``, ``"greedy"`` or ``"random"`` (MCMC only). The
    states after every ``thin``-th epoch after burn-in are kept. ``positions``: the free positions. ``reference``
    (``[L]`` or ``[B, L]``) adds the identity metric. ``run_file`` (:class:`~mlmprob.sampling.io.RunFile`): where the
    run is written as it goes; an existing one of the same configuration is resumed after its last complete epoch
    (``generator`` reset to its stored state). ``on_epoch(record, total_epochs)`` is called after every epoch.

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))
    >>> r = sample(m, torch.zeros(5, 3, dtype=torch.long), epochs=4, burn_in=2,
    ...            generator=torch.Generator().manual_seed(0))
    >>> tuple(r.samples.shape), tuple(r.energy.shape), 0 <= r.accept_rate <= 1
    ((4, 5, 3), (6, 5), True)
    >>> a = sample(m, torch.zeros(5, 3, dtype=torch.long), SamplerSpec(method="ancestral", epochs=2),
    ...            generator=torch.Generator().manual_seed(0))
    >>> tuple(a.log_prob.shape), torch.allclose(a.log_prob[-1], m.log_prob(a.final_ids))
    ((2, 5), True)
    """
    spec = SamplerSpec.of(spec, **options)
    ids = as_input_ids(mlm, init_ids, "init_ids")
    free = resolve_free(mlm, ids, positions)
    if generator is None:
        generator = torch.Generator()
        generator.seed()
    check_generator(generator)
    with Chains(mlm, spec, ids, free, generator, reference, run_file) as chains:
        for rec in chains.epochs():
            if on_epoch is not None:
                on_epoch(rec, spec.total_epochs)
        records = chains.records
    return result_from_records(records[: spec.total_epochs], free, spec)


class Chains:
    """The one epoch loop: a run's chains, started fresh or resumed from ``run_file`` after its last complete epoch;
    :meth:`epochs` yields (and writes) one :class:`~mlmprob.sampling.io.EpochRecord` per epoch. Used by :func:`sample`
    and by the app, which draws the chains as they go."""

    def __init__(
        self,
        mlm,
        spec: SamplerSpec,
        ids: torch.Tensor,
        free: torch.Tensor,
        generator: torch.Generator,
        reference=None,
        run_file: RunFile | None = None,
    ):
        self.mlm, self.spec, self.generator = mlm, spec, generator
        spec.check_size(ids.shape[0], ids.shape[1], mlm.vocab_size)
        self.kernel = spec.kernel(mlm)
        self.ref = _reference(reference, ids)
        self.run_log: ResumableLog | None = None
        self.records: list[EpochRecord] = []
        if run_file is not None:
            self.run_log, self.records = run_file.open(spec.run_config(mlm), ids, free)
        try:
            self.state, rows_before = self._start(ids, free)
        except BaseException:
            self.close()
            raise
        self.rows_before = rows_before - self.state.forward_rows  # the kernel counts from its own init

    def _start(self, ids: torch.Tensor, free: torch.Tensor):
        """``(first state, rows forwarded before the kernel's)``: fresh, or after the run file's last epoch."""
        if self.records:
            last = self.records[-1]
            set_generator_state(self.generator, last.generator_state)
            state = self.kernel.init(torch.tensor(last.ids, dtype=torch.long), free, epoch=len(self.records))
            return state, last.forward_rows
        if self.spec.independent_draws:
            start, rows_before = ids, 0
        else:
            assert isinstance(self.spec, MCMCSpec)  # the methods without independent draws are the MCMC ones
            start, rows_before = initialize(self.kernel.mlm, ids, free, self.spec.init, self.generator)
        return self.kernel.init(start, free), rows_before

    def __enter__(self) -> Chains:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.run_log is not None:
            self.run_log.close()
            self.run_log = None

    def energies(self, state=None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(E_local, E_raw)`` ``[B]`` of ``state`` (default: the current one): MH keeps them in its state,
        the other kernels' states are scored with one pass."""
        return self._scored(self.state if state is None else state)[:2]

    def _scored(self, state) -> tuple[torch.Tensor, torch.Tensor, int]:
        """``(E_local, E_raw, rows forwarded to score them)``."""
        if getattr(state, "e_local", None) is not None:
            return state.e_local, state.e_raw, 0
        logits, rows = site_logits(self.mlm, state.ids, state.scored)
        return (*energies_from_logits(logits, state.ids, state.scored), rows)

    def epochs(self) -> Iterator[EpochRecord]:
        """Step to the end of the run, one record per epoch."""
        spec, generator = self.spec, self.generator
        bs, tt = spec.schedules()
        B = self.state.ids.shape[0]
        while self.state.epoch < spec.total_epochs:
            state, e, t0 = self.state, self.state.epoch, time.perf_counter()
            k_e = block_size_at(bs, e)
            tau_e = math.nan if tt is None else temperature_at(tt, e)
            counts = torch.zeros(3, B, dtype=torch.long)  # proposed, accepted, novel
            while True:
                state, info = self.kernel.step(state, generator)
                counts += torch.stack([info.active, info.accepted, info.novel])
                if info.end_of_epoch:
                    break
            energies: tuple[list | None, list | None] = (None, None)
            calls = getattr(state, "calls", None)
            if spec.records_energies:
                t_local, t_raw, rows = self._scored(state)
                energies = (t_local.tolist(), t_raw.tolist())
                if spec.independent_draws and calls is not None:  # the draw's cost counts the pass it asked for
                    self.rows_before += rows
                    calls = calls + state.scored.any(-1).long()
            ident = None if self.ref is None else reference_identity(state.ids, self.ref, state.free).tolist()
            kept = e >= spec.burn_in and (e - spec.burn_in + 1) % spec.thin == 0
            drawn = [getattr(state, "log_prob", None), getattr(state, "rounds", None), calls]
            n_prop, n_acc, n_nov = counts.tolist()
            rec = EpochRecord(
                e,
                kept,
                tau_e,
                k_e,
                n_prop,
                n_acc,
                n_nov,
                *energies,
                ident,
                state.ids.tolist(),
                self.rows_before + state.forward_rows,
                time.perf_counter() - t0,
                generator_state_hex(generator),
                *(None if x is None else x.tolist() for x in drawn),
            )
            self.state = state
            self.records.append(rec)
            if self.run_log is not None:
                self.run_log.append_lines([rec.to_json()])
            yield rec


def _reference(reference, ids: torch.Tensor) -> torch.Tensor | None:
    if reference is None:
        return None
    try:
        if isinstance(reference, (str, bytes)):
            raise TypeError
        ref = torch.as_tensor(reference, dtype=torch.long)
    except (TypeError, ValueError, RuntimeError):  # text, a ragged list: torch's own message names neither
        raise MLMProbError(
            f"reference must be token ids [L] or [B, L] (mlm.encode([...]).input_ids), got "
            f"{type(reference).__name__} {reference!r:.40}"
        ) from None
    if ref.shape not in (ids.shape, ids.shape[1:]):
        raise MLMProbError(f"reference must have shape [L] or [B, L] = {tuple(ids.shape)}, got {tuple(ref.shape)}")
    return ref


def result_from_records(records: list[EpochRecord], free: torch.Tensor, spec: SamplerSpec) -> SampleResult:
    """Assemble a ``SampleResult`` from epoch records (a finished or resumed run of ``spec``)."""
    burn_in, method, energy = spec.burn_in, spec.method, spec.energy
    f64 = torch.float64

    def col(name: str, dtype=f64) -> torch.Tensor:
        return torch.tensor([getattr(r, name) for r in records], dtype=dtype)

    prop, acc, nov = col("proposals"), col("accepted"), col("novel")
    post = slice(burn_in, None)
    n_post = float(prop[post].sum())
    kept = [r for r in records if r.kept]
    kept_idx = torch.tensor([r.epoch for r in kept], dtype=torch.long)
    e_local = e_raw = None
    ess = rhat = math.nan
    if records[0].e_local is not None:
        e_local, e_raw = col("e_local"), col("e_raw")
        target = (e_local if energy == "local" else e_raw)[kept_idx].T  # [B, S]
        ess, rhat = effective_sample_size(target), split_rhat(target)
    ident = None if records[0].identity is None else col("identity")
    drawn = {}
    if records[0].rounds is not None:
        drawn = dict(log_prob=col("log_prob"), rounds=col("rounds", torch.long), calls=col("calls", torch.long))
    return (DrawResult if drawn else SampleResult)(
        samples=torch.tensor([r.ids for r in kept], dtype=torch.long),
        kept_epochs=kept_idx,
        final_ids=torch.tensor(records[-1].ids, dtype=torch.long),
        free=free,
        energy_local=e_local,
        energy_raw=e_raw,
        accept=acc / prop.clamp(min=1),
        novel=nov / prop.clamp(min=1),
        identity=ident,
        target_temperature=col("target_temperature"),
        block_size=col("block_size", torch.long),
        seconds=col("seconds"),
        accept_rate=float(acc[post].sum()) / n_post if n_post else math.nan,
        novel_rate=float(nov[post].sum()) / n_post if n_post else math.nan,
        ess=ess,
        rhat=rhat,
        forward_rows=records[-1].forward_rows,
        proposals=int(prop.sum()),
        burn_in=burn_in,
        method=method,
        energy_kind=energy,
        proposal_counts=prop.long(),
        **drawn,
    )

"""``sample``: many MH, degenerate-Gibbs, ancestral or speculative chains in one batch (a driver stepping a
kernel), with burn-in, thinning, per-epoch diagnostics, a resumable JSONL record and a typed result."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ..energy import Positions, check_input_ids, energies_from_logits
from ..errors import MLMProbError
from ..likelihood.orders import OrderSpec
from ..models.protocol import MaskedLM
from .ancestral import Ancestral
from .diagnostics import effective_sample_size, reference_identity, split_rhat
from .forward import site_logits
from .init import initialize, resolve_free
from .io import EpochRecord, RunLog, generator_state_hex, set_generator_state
from .kernels import DegenerateGibbs, MetropolisHastings
from .proposals import ProposalConfig
from .speculative import DEFAULT_DRAFT_K, Speculative
from .schedules import ScheduleLike, as_schedule, block_size_at, schedule_text, temperature_at
from ..models.reader import name_of

METHODS = ("mh", "gibbs", "ancestral", "speculative")
EXACT_DRAWS = ("ancestral", "speculative")  # every epoch an independent draw of p_sigma: no initialisation


@dataclass(frozen=True)
class SampleResult:
    """Outcome of ``sample``. Epoch axes count every epoch (burn-in included); chain axes ``B``.

    - ``samples`` ``[S, B, L]``: chain states at the end of each kept epoch (``kept_epochs`` ``[S]``);
    - ``final_ids`` ``[B, L]``; ``free`` bool ``[B, L]``;
    - ``energy_local``, ``energy_raw`` ``[E, B]`` (float64): energies of the states at the end of each
      epoch, whatever the target; ``energy`` is the target's trace;
    - ``accept``, ``novel`` ``[E, B]``: per-epoch, per-chain rates; ``accept_rate``, ``novel_rate``:
      over the epochs after burn-in;
    - ``identity`` ``[E, B]`` or None: fraction of free positions equal to the reference;
    - ``ess``, ``rhat``: of the target-energy trace over the kept epochs, across chains;
    - ``forward_rows``: model rows forwarded by the kernel (initialisation included);
    - ``target_temperature`` ``[E]``, ``block_size`` ``[E]``, ``seconds`` ``[E]``;
    - ``log_prob`` ``[E, B]`` (float64; ``method="ancestral"`` or ``"speculative"``, else None): the
      log-probability of each epoch's draw along its order;
    - ``rounds``, ``calls`` ``[E, B]`` (long; ancestral and speculative draws, else None): the sequential
      rounds of each chain's draw and the model calls they made one after the other (ancestral: one per
      step; speculative: a draft pass and a verification batch per round); ``proposal_counts`` ``[E, B]``:
      the proposals behind ``accept`` (speculative: the drafts put to the acceptance test).
    """

    samples: torch.Tensor
    kept_epochs: torch.Tensor
    final_ids: torch.Tensor
    free: torch.Tensor
    energy_local: torch.Tensor
    energy_raw: torch.Tensor
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
    log_prob: torch.Tensor | None = None
    rounds: torch.Tensor | None = None
    calls: torch.Tensor | None = None
    proposal_counts: torch.Tensor | None = None

    @property
    def energy(self) -> torch.Tensor:
        """Trace ``[E, B]`` of the target energy."""
        return self.energy_local if self.energy_kind == "local" else self.energy_raw

    @property
    def proposals_per_second(self) -> float:
        t = float(self.seconds.sum())
        return self.proposals / t if t > 0 else math.nan


def _model_name(mlm) -> str:
    return name_of(mlm)


def _run_config(mlm, method: str, energy: str, bs, proposal: ProposalConfig, tt, order, burn_in: int, thin: int,
                init: str, score_all: bool, kernel) -> dict:
    """The configuration a run file stores (and a resumed run must match); ``kernel``: its steps' sizes."""
    config = {"model": _model_name(mlm), "method": method, "energy": energy, "block_size": schedule_text(bs),
              "proposal_temperature": proposal.temperature, "top_p": proposal.top_p,
              "target_temperature": schedule_text(tt), "order": order, "burn_in": burn_in, "thin": thin,
              "init": init, "score_all": score_all}
    if method == "ancestral":  # keys only this method has: older MCMC run files still resume
        config.update(order=order if isinstance(order, str) else torch.as_tensor(order).tolist(),
                      tokens_per_step=kernel.tokens_per_step)
    if method == "speculative":
        config.update(order=order if isinstance(order, str) else torch.as_tensor(order).tolist(),
                      draft_k=kernel.draft_k)
    return config


def sample(
    mlm: MaskedLM,
    init_ids,
    *,
    method: str = "mh",
    energy: str = "local",
    epochs: int,
    burn_in: int = 0,
    block_size: ScheduleLike = 1,
    proposal_temperature: float = 1.0,
    top_p: float = 1.0,
    target_temperature: ScheduleLike = 1.0,
    order: OrderSpec = "random",
    positions: Positions = None,
    generator: torch.Generator | None = None,
    init: str = "given",
    thin: int = 1,
    score_all: bool = False,
    reference=None,
    jsonl: str | Path | None = None,
    progress: bool = False,
    tokens_per_step: int = 1,
    computed_with: dict | None = None,
    draft_k: int | None = None,  # method="speculative" only
) -> SampleResult:
    """Run ``B`` chains (one per row of ``init_ids`` ``[B, L]``) for ``burn_in + epochs`` epochs.

    ``method="mh"`` targets ``p(x) ∝ exp(-E(x)/tau)``, ``E`` = ``E_local`` or ``E_raw`` (``energy``)
    summed over the free positions (``score_all``: every non-special position); ``method="gibbs"``
    is the degenerate (always-accept) sampler. One epoch is one sweep over each chain's free
    positions in ``order`` (``"random"`` or ``"l2r"``), in blocks of ``block_size``. ``block_size``
    and ``target_temperature`` take schedules (``LinearBlockSize``, ``LinearAnneal``). Proposals are
    the MLM conditionals at ``proposal_temperature`` (0: greedy) and nucleus ``top_p``.
    ``method="ancestral"`` draws, every epoch, an independent exact sample of the chain-rule distribution
    ``p_sigma`` of ``mlmprob.loglik`` (``order``: ``"l2r"``, ``"r2l"``, given orders, or ``"random"``: a fresh
    order per chain and epoch, an exact sample of the mixture over orders), ``tokens_per_step`` positions per step
    (parallel decoding for more than 1: approximate); ``log_prob``: each draw's log-probability along its order.
    ``"speculative"``: the same exact draws in fewer sequential model calls (``draft_k`` drafts a round, default 4).
    ``init``: ``"given"``, ``"greedy"`` (all-mask warm start) or ``"random"`` (MCMC only). States at
    the end of every ``thin``-th epoch after burn-in are kept (the last epoch always is when ``thin``
    divides ``epochs``). ``reference`` (``[L]`` or ``[B, L]``) adds the identity metric. ``jsonl``: a
    run file written as the run goes; if it exists with the same configuration the run resumes after
    its last complete epoch (``generator`` is then reset to the stored state). ``computed_with``: what
    else the run file records and a resumed run must match, which the sampler cannot see (the seed that
    made ``generator``, the dtype: see :mod:`mlmprob.runtime.provenance`).

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))
    >>> r = sample(m, torch.zeros(5, 3, dtype=torch.long), epochs=4, burn_in=2,
    ...            generator=torch.Generator().manual_seed(0))
    >>> tuple(r.samples.shape), tuple(r.energy.shape), 0 <= r.accept_rate <= 1
    ((4, 5, 3), (6, 5), True)
    >>> a = sample(m, torch.zeros(5, 3, dtype=torch.long), method="ancestral", epochs=2,
    ...            generator=torch.Generator().manual_seed(0))
    >>> tuple(a.log_prob.shape), torch.allclose(a.log_prob[-1], m.log_prob(a.final_ids))
    ((2, 5), True)
    """
    _check_counts(method, epochs, burn_in, thin)
    ids = check_input_ids(mlm, init_ids)
    free = resolve_free(mlm, ids, positions)
    if generator is None:
        generator = torch.Generator()
        generator.seed()
    proposal = ProposalConfig(proposal_temperature, top_p)
    bs, tt = as_schedule(block_size, "block_size"), as_schedule(target_temperature, "target_temperature")
    kernel = _kernel(mlm, method, energy, bs, proposal, tt, order, score_all, tokens_per_step, draft_k)
    ref = _reference(reference, ids)
    config = _run_config(mlm, method, energy, bs, proposal, tt, order, burn_in, thin, init, score_all, kernel)
    run_log = None if jsonl is None else RunLog(jsonl, config, ids, free, computed_with)
    try:
        state, records, rows_before = _start(kernel, run_log, config, ids, free, init, generator)
        run = _Run(kernel, mlm, method, energy, bs, tt, burn_in, thin, ref, run_log,
                   rows_before - state.forward_rows)  # the kernel counts from its own init
        _run_epochs(run, state, records, burn_in + epochs, generator, progress)
    finally:
        if run_log is not None:
            run_log.close()
    return result_from_records(records[:burn_in + epochs], free, burn_in, method, energy)


def _start(kernel, run_log: RunLog | None, config: dict, ids: torch.Tensor, free: torch.Tensor, init: str,
           generator: torch.Generator):
    """``(first state, records already written, rows forwarded before the kernel's)``: a fresh start
    (initialisation), or the state after the last complete epoch of the run file (resume)."""
    records: list[EpochRecord] = [] if run_log is None else list(run_log.records)
    if records:
        set_generator_state(generator, records[-1].generator_state)
        state = kernel.init(torch.tensor(records[-1].ids, dtype=torch.long), free, epoch=len(records))
        return state, records, records[-1].forward_rows
    start, rows_before = (ids, 0) if config["method"] in EXACT_DRAWS else \
        initialize(kernel.mlm, ids, free, init, generator)
    return kernel.init(start, free), records, rows_before


def _check_counts(method: str, epochs, burn_in, thin) -> None:
    if method not in METHODS:
        raise MLMProbError(f"method must be one of {METHODS}, got {method!r}")
    if not isinstance(epochs, int) or epochs < 1:
        raise MLMProbError(f"epochs must be a positive integer, got {epochs!r}")
    if not isinstance(burn_in, int) or burn_in < 0:
        raise MLMProbError(f"burn_in must be a non-negative integer, got {burn_in!r}")
    if not isinstance(thin, int) or not 1 <= thin <= epochs:
        raise MLMProbError(f"thin must be an integer in 1..epochs ({epochs}), got {thin!r}")


def _kernel(mlm, method, energy, bs, proposal, tt, order, score_all, tokens_per_step, draft_k=None):
    """The kernel of ``method`` with its fixed parts bound."""
    if method != "ancestral" and tokens_per_step != 1:
        raise MLMProbError(f"tokens_per_step is for method='ancestral' (block_size sets MH/Gibbs blocks, "
                           f"draft_k the speculative drafts), got {tokens_per_step!r}")
    if method != "speculative" and draft_k is not None:
        raise MLMProbError(f"draft_k is for method='speculative', got {draft_k!r} with method={method!r}")
    if method in ("gibbs", "ancestral", "speculative") and energy not in ("local", "raw"):
        raise MLMProbError(f"energy must be 'local' or 'raw', got {energy!r}")
    if method == "mh":
        return MetropolisHastings(mlm, energy, bs, proposal, tt, order, score_all)
    if method == "gibbs":
        return DegenerateGibbs(mlm, bs, proposal, order, score_all)
    if method == "speculative":
        return Speculative(mlm, order, DEFAULT_DRAFT_K if draft_k is None else draft_k, proposal, score_all)
    return Ancestral(mlm, order, tokens_per_step, proposal, score_all)


def _reference(reference, ids: torch.Tensor) -> torch.Tensor | None:
    if reference is None:
        return None
    ref = torch.as_tensor(reference, dtype=torch.long)
    if ref.shape not in (ids.shape, ids.shape[1:]):
        raise MLMProbError(f"reference must have shape [L] or [B, L] = {tuple(ids.shape)}, got {tuple(ref.shape)}")
    return ref


@dataclass(frozen=True)
class _Run:
    """The fixed parts of one ``sample`` run that the epoch loop needs."""

    kernel: object
    mlm: MaskedLM
    method: str
    energy: str
    bs: object
    tt: object
    burn_in: int
    thin: int
    ref: torch.Tensor | None
    run_log: RunLog | None
    rows_before: int


def _run_epochs(run: _Run, state, records: list[EpochRecord], total: int, generator: torch.Generator,
                progress: bool) -> None:
    """Step the kernel epoch by epoch up to ``total`` epochs, appending (and writing) one record each."""
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=total, initial=min(len(records), total), desc=f"{run.method} sampling", unit="epoch")
    B = state.ids.shape[0]
    while state.epoch < total:
        e, t0 = state.epoch, time.perf_counter()
        k_e = block_size_at(run.bs, e)
        tau_e = temperature_at(run.tt, e) if run.method == "mh" else math.nan
        n_prop = torch.zeros(B, dtype=torch.long)
        n_acc, n_nov = n_prop.clone(), n_prop.clone()
        while True:
            state, info = run.kernel.step(state, generator)
            n_prop += info.active
            n_acc += info.accepted
            n_nov += info.novel
            if info.end_of_epoch:
                break
        if run.method == "mh":
            e_local, e_raw = state.e_local, state.e_raw
        else:
            logits, _ = site_logits(run.mlm, state.ids, state.scored)
            e_local, e_raw = energies_from_logits(logits, state.ids, state.scored)
        ident = None if run.ref is None else reference_identity(state.ids, run.ref, state.free).tolist()
        log_prob = getattr(state, "log_prob", None)
        rounds, calls = getattr(state, "rounds", None), getattr(state, "calls", None)
        rec = EpochRecord(e, e >= run.burn_in and (e - run.burn_in + 1) % run.thin == 0, tau_e, k_e,
                          n_prop.tolist(), n_acc.tolist(), n_nov.tolist(), e_local.tolist(), e_raw.tolist(), ident,
                          state.ids.tolist(), run.rows_before + state.forward_rows, time.perf_counter() - t0,
                          generator_state_hex(generator), None if log_prob is None else log_prob.tolist(),
                          None if rounds is None else rounds.tolist(), None if calls is None else calls.tolist())
        records.append(rec)
        if run.run_log is not None:
            run.run_log.append(rec)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(acc=f"{sum(rec.accepted) / max(sum(rec.proposals), 1):.3f}",
                            E=f"{sum(rec.e_local if run.energy == 'local' else rec.e_raw) / B:.2f}")
    if bar is not None:
        bar.close()


def result_from_records(records: list[EpochRecord], free: torch.Tensor, burn_in: int, method: str,
                        energy: str) -> SampleResult:
    """Assemble a ``SampleResult`` from epoch records (a finished or resumed run)."""
    f64 = torch.float64
    prop = torch.tensor([r.proposals for r in records], dtype=f64)
    acc = torch.tensor([r.accepted for r in records], dtype=f64)
    nov = torch.tensor([r.novel for r in records], dtype=f64)
    post = slice(burn_in, None)
    n_post = float(prop[post].sum())
    kept = [r for r in records if r.kept]
    e_local = torch.tensor([r.e_local for r in records], dtype=f64)
    e_raw = torch.tensor([r.e_raw for r in records], dtype=f64)
    kept_idx = torch.tensor([r.epoch for r in kept], dtype=torch.long)
    target = (e_local if energy == "local" else e_raw)[kept_idx].T      # [B, S]
    ident = None if records[0].identity is None else torch.tensor([r.identity for r in records], dtype=f64)
    rounds = calls = None
    if method == "ancestral":    # one model call per step
        rounds = calls = prop.long()
    elif records[0].rounds is not None:
        rounds = torch.tensor([r.rounds for r in records], dtype=torch.long)
        calls = torch.tensor([r.calls for r in records], dtype=torch.long)
    return SampleResult(
        samples=torch.tensor([r.ids for r in kept], dtype=torch.long),
        kept_epochs=kept_idx,
        final_ids=torch.tensor(records[-1].ids, dtype=torch.long),
        free=free,
        energy_local=e_local,
        energy_raw=e_raw,
        accept=acc / prop.clamp(min=1),
        novel=nov / prop.clamp(min=1),
        identity=ident,
        target_temperature=torch.tensor([r.target_temperature for r in records], dtype=f64),
        block_size=torch.tensor([r.block_size for r in records], dtype=torch.long),
        seconds=torch.tensor([r.seconds for r in records], dtype=f64),
        accept_rate=float(acc[post].sum()) / n_post if n_post else math.nan,
        novel_rate=float(nov[post].sum()) / n_post if n_post else math.nan,
        ess=effective_sample_size(target),
        rhat=split_rhat(target),
        forward_rows=records[-1].forward_rows,
        proposals=int(prop.sum()),
        burn_in=burn_in,
        method=method,
        energy_kind=energy,
        log_prob=None if records[0].log_prob is None else torch.tensor([r.log_prob for r in records], dtype=f64),
        rounds=rounds,
        calls=calls,
        proposal_counts=prop.long(),
    )

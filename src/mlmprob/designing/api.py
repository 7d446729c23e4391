"""``design(terms, parent, spec=None, **overrides)``: sample or optimise variants of a parent under a product of
experts and hard constraints."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import torch

from ..alphabet import AMINO_ACIDS
from ..errors import MLMProbError
from ..runtime.seeds import check_generator
from ..sampling.registry import MAX_RUN_BYTES
from .constraints import Constraints, mutant_string
from .kernels import DesignInfo, DesignState, swap_step
from .spec import DesignSpec
from .terms import Hamming, Target


@dataclass
class DesignResult:
    """One row per chain (``rows``: its final sequence, its mutations from the parent as a ProteinGym mutant string,
    every term's energy, the weighted total, its temperature, its acceptance rate and the best sequence it visited
    in ``C``), ``names`` the terms, and ``stats``: per temperature the proposal, constraint-exit and acceptance
    rates (and the swap rates of replica exchange), the model rows read and the oracle calls."""

    names: tuple[str, ...]
    parent: str
    rows: list[dict]
    stats: dict = field(default_factory=dict)

    def samples(self) -> list[str]:
        """The final sequences of the chains at the target temperature (the lowest rung)."""
        t = min(r["temperature"] for r in self.rows)
        return [r["sequence"] for r in self.rows if r["temperature"] == t]


def build_target(terms, parent: str, spec: DesignSpec, alphabet: str = AMINO_ACIDS) -> Target:
    """The target of ``terms`` (a masked LM, a term, or a sequence of them) and the spec's Hamming weight and
    constraints around ``parent``."""
    terms = list(terms) if isinstance(terms, (list, tuple)) else [terms]
    if spec.hamming:
        terms.append(Hamming(spec.hamming))
    if not isinstance(parent, str):
        raise MLMProbError(f"the parent must be one residue string, got {type(parent).__name__}")
    parent = parent.strip()
    return Target(terms, partial(Constraints.build, parent, **spec.constraint_keywords()), parent, alphabet)


def design(
    mlm_or_experts,
    inputs: str,
    spec: DesignSpec | None = None,
    *,
    generator: torch.Generator | None = None,
    on_step: Callable[[int, DesignState, DesignInfo], None] | None = None,
    progress: bool = False,
    **overrides,
) -> DesignResult:
    """Run ``spec.method`` on ``p(x) ∝ exp(-Σ_k w_k E_k(x)/τ) · 1[x ∈ C]`` around the parent ``inputs``.

    ``mlm_or_experts``: a masked LM (its ``E_local``, weight 1), or a sequence of terms: masked LMs,
    :class:`~mlmprob.designing.Expert` (``kind="raw"`` for ``E_raw``, a weight, a name),
    :class:`~mlmprob.designing.Oracle` or a plain callable (a batch of residue strings -> one number each; higher is
    better), and :class:`~mlmprob.designing.Hamming`. ``spec`` (:class:`~mlmprob.designing.DesignSpec`) with
    ``overrides`` by field name. ``on_step(t, state, info)`` is called after each step; ``progress``: a bar on stderr
    (:class:`StepMeter`); the rows depend on neither. Chains beyond one group's memory (:func:`group_size`: about
    6,000 on a VH) run in groups on the one generator, ``on_step`` once per group and step."""
    spec = DesignSpec.of(spec, **overrides)
    if generator is None:
        generator = torch.Generator()
        generator.seed()
    check_generator(generator)
    target = build_target(mlm_or_experts, inputs, spec)
    return run_design(target, spec, generator, on_step, progress)


def run_design(
    target: Target,
    spec: DesignSpec,
    generator: torch.Generator,
    on_step: Callable | None = None,
    progress: bool | StepMeter = False,
) -> DesignResult:
    """The chains of ``spec`` on ``target`` from its parent, stepped ``spec.steps`` times, in groups of at most
    :func:`group_size` chains (with all their rungs) one after the other on the one generator, into one batch's
    layout (rung-major); ``progress``: True for a bar on stderr of ``chains x steps`` steps, or a :class:`StepMeter`
    that outlives the call."""
    meter = StepMeter(target, total=spec.chains * spec.steps) if progress is True else progress or None
    try:
        ladder = spec.temperatures_used()
        R, C, L, A = len(ladder), spec.chains, len(target.parent), len(target.alphabet)
        G = min(C, group_size(R, L, A))
        check_batch(G, R, L, A)
        X, inside = torch.empty(R * C, L, dtype=torch.long), torch.empty(R * C, dtype=torch.bool)
        E = torch.empty(R * C, len(target.names), dtype=torch.float64)
        U, tau, best_U = (torch.empty(R * C, dtype=torch.float64) for _ in range(3))
        best_X = torch.empty_like(X)
        counts = {k: torch.zeros(R * C, dtype=torch.long) for k in _COUNTS}
        swaps = torch.zeros(2, max(R - 1, 0), dtype=torch.long)
        for c0 in range(0, C, G):
            n = min(G, C - c0)
            s, cs, sw, bx, bu = _run_group(target, spec, generator, on_step, meter, n)
            at = (torch.arange(R)[:, None] * C + torch.arange(c0, c0 + n)[None, :]).reshape(-1)
            X[at], E[at], U[at], tau[at], inside[at] = s.X, s.E.to(E.dtype), s.U.to(U.dtype), s.tau, s.inside
            best_X[at], best_U[at] = bx, bu.to(U.dtype)
            for k in counts:
                counts[k][at] = cs[k]
            swaps += sw
        state = DesignState(X, E, U, inside, None, tau)
        rows = _rows(target, state, counts, best_X, best_U)
        return DesignResult(target.names, target.parent, rows, _stats(target, ladder, C, counts, swaps))
    finally:
        if progress is True and meter is not None:
            meter.close()


_COUNTS = ("changed", "left", "accepted", "screened", "moved")


def _run_group(target: Target, spec: DesignSpec, generator, on_step, meter: StepMeter | None, C: int):
    """``C`` chains (at every rung) stepped ``spec.steps`` times: the final state, the per-chain counts, the swap
    counts and each chain's best state in ``C``."""
    kernel = spec.kernel(target)
    ladder = spec.temperatures_used()
    R = len(ladder)
    taus = torch.tensor(ladder, dtype=torch.float64).repeat_interleave(C)
    state = kernel.init(target.parent_ids.expand(R * C, -1).clone(), taus)
    counts = {k: torch.zeros(R * C, dtype=torch.long) for k in _COUNTS}
    swaps = torch.zeros(2, max(R - 1, 0), dtype=torch.long)
    best_U = torch.where(state.inside, state.U, torch.full_like(state.U, float("inf")))
    best_X = state.X.clone()
    for t in range(spec.steps):
        if spec.method == "anneal":
            state = replace(state, tau=torch.full_like(state.tau, spec.temperature_at(t)))
        state, info = kernel.step(state, generator)
        for k in counts:
            if getattr(info, k) is not None:
                counts[k] += getattr(info, k).long()
        _keep_best(state, best_U, best_X)
        if R > 1 and (t + 1) % spec.swap_every == 0:
            state, tried, took = swap_step(state, R, ((t + 1) // spec.swap_every) % 2, generator)
            swaps[0] += tried
            swaps[1] += took
            _keep_best(state, best_U, best_X)  # a state swapped in is one the chain holds too
        if on_step is not None:
            on_step(t, state, info)
        if meter is not None:
            meter.step(info, C)
    return state, counts, swaps, best_X, best_U


class StepMeter:
    """The progress of design chains, after each step: ``advance(chains, acceptance=..., model_rows=...)``: a step
    of every chain (all rungs), the acceptance so far at the lowest rung and the model rows read since the meter was
    made. ``advance``: a runner's bar (``mlmprob design``: :meth:`mlmprob.runtime.job.State.advance`), by default a
    new bar on stderr of ``total`` steps, which :meth:`close` closes."""

    def __init__(self, target: Target, advance: Callable[..., None] | None = None, total: int | None = None):
        self.target, self.rows0, self.accepted, self.changed = target, target.model_rows, 0, 0
        self.bar, self.advance = None, advance or self._show
        if advance is None:
            from ..runtime.engine import progress_bar

            self.bar = progress_bar(total, "step", "design")

    def _show(self, steps: int, **shown) -> None:
        assert self.bar is not None
        self.bar.set_postfix(shown, refresh=False)
        self.bar.update(steps)

    def step(self, info: DesignInfo, chains: int) -> None:
        self.accepted += int(info.accepted[:chains].sum())
        self.changed += int(info.changed[:chains].sum())
        rate = self.accepted / self.changed if self.changed else 0.0
        self.advance(chains, acceptance=f"{rate:.2f}", model_rows=self.target.model_rows - self.rows0)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def batch_bytes(chains: int, length: int, letters: int) -> int:
    """About how many bytes ``chains`` chains (every rung's) of a ``length``-residue parent over ``letters``
    residues hold at once, on the high side: per chain and residue six float64 rows of the letters (proposal rows,
    copies, an expert's reads) and 512 bytes of indices and energies."""
    return chains * length * (48 * letters + 512)


#: The most memory one group of chains may keep at once (:func:`batch_bytes`). A constant, never the machine's
#: memory, so a run's rows are a function of its seed and settings alone.
GROUP_BYTES = 1 << 30


def group_size(rungs: int, length: int, letters: int) -> int:
    """How many chains (each with its ``rungs``) one group holds: as many as fit :data:`GROUP_BYTES`, at least one."""
    return max(1, GROUP_BYTES // batch_bytes(rungs, length, letters))


def check_batch(chains: int, rungs: int, length: int, letters: int) -> None:
    """Refuse, before anything is allocated, a batch (one group: :func:`group_size`) of chains over
    :data:`mlmprob.sampling.registry.MAX_RUN_BYTES` or the memory available (``/proc/meminfo``, where known)."""
    need = batch_bytes(chains * rungs, length, letters)
    if need < 32 << 20:  # small: no need to ask the system
        return
    from ..runtime import capacity

    available = capacity.available_memory()
    limit, what = MAX_RUN_BYTES, f"the {MAX_RUN_BYTES >> 30} GiB one design call may"
    if available is not None and available < limit:
        limit, what = available, f"the {_size(available)} of memory available"
    if need > limit:
        rungs_text = f" x {rungs} temperatures" if rungs > 1 else ""
        raise MLMProbError(
            f"{chains:,} chains{rungs_text} of a {length}-residue parent in one batch would keep about {_size(need)} "
            f"in memory, more than {what}: run fewer chains per call (each call's chains are independent), or "
            "mlmprob design, which runs one chain at a time"
        )


def _size(n: int) -> str:
    return f"{n / (1 << 30):,.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):,.0f} MiB"


def _keep_best(state: DesignState, best_U: torch.Tensor, best_X: torch.Tensor) -> None:
    """Record in place, per chain, the state in ``C`` of lowest total energy held so far."""
    better = state.inside & (state.U < best_U)
    best_U[better], best_X[better] = state.U[better], state.X[better]


def _rows(target: Target, state: DesignState, counts: dict, best_X, best_U) -> list[dict]:
    seqs, best = target.decode(state.X), target.decode(best_X)
    out = []
    for b, s in enumerate(seqs):
        moved = int(counts["changed"][b])
        found = bool(torch.isfinite(best_U[b]))
        out.append(
            {
                "chain": b,
                "temperature": float(state.tau[b]),
                "sequence": s,
                "mutant": mutant_string(target.parent, s),
                "mutations": sum(a != c for a, c in zip(target.parent, s, strict=True)),
                "energies": {n: float(e) for n, e in zip(target.names, state.E[b], strict=True)},
                "total": float(state.U[b]),
                "in_constraints": bool(state.inside[b]),
                "acceptance": int(counts["accepted"][b]) / moved if moved else 0.0,
                "best_sequence": best[b] if found else None,
                "best_mutant": mutant_string(target.parent, best[b]) if found else None,
                "best_total": float(best_U[b]) if found else None,
            }
        )
    return out


def _stats(target: Target, ladder: Sequence[float], C: int, counts: dict, swaps: torch.Tensor) -> dict:
    rungs = []
    for r, tau in enumerate(ladder):
        sl = slice(r * C, (r + 1) * C)
        changed, left, took, screened, moved = (int(counts[k][sl].sum()) for k in _COUNTS)
        entry = {
            "temperature": tau,
            "proposals_moved": changed,
            "left_constraints": left / changed if changed else 0.0,
            "acceptance": took / changed if changed else 0.0,
            "residues_moved": moved,
        }
        if screened:
            entry["screened"] = screened / changed
        if r < len(ladder) - 1:
            tried = int(swaps[0][r])
            entry["swap_rate"] = int(swaps[1][r]) / tried if tried else 0.0
        rungs.append(entry)
    return {"temperatures": rungs, "model_rows": target.model_rows, "oracle_calls": target.oracle_calls}

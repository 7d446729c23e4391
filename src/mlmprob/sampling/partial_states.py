"""The exact output laws of decoders on a small language, every *partial* state enumerated: a row of ``{0..V-1,
mask}**T`` (the mask digit ``V``; indexed by its base-``V + 1`` number, position 0 most significant, as ``LookupMLM``
indexes its table). A *rule* lists the moves of a decoder step (:class:`Moves`) from the states and their rows ``lp``
(``log q(x_t = v | state)``, read from a table, :func:`partial_log_probs`, or a function); :func:`propagate` pushes
the distribution through its steps, :func:`to_law` gives the law over the ``V**T`` sequences. Rules here: ``l2r``,
``random_order`` and ``parallel(k)`` (``Ancestral``'s ``tokens_per_step``); the parallel decoders' are in
``sampling.decoder_exact``."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..errors import MLMProbError
from ..models.exact import all_sequences

RowReader = Callable[[torch.Tensor], torch.Tensor]


def partial_states(V: int, T: int) -> torch.Tensor:
    """Every partial state ``[(V + 1)**T, T]`` (digit ``V`` = mask) in index order."""
    return all_sequences(V + 1, T)


def _weights(base: int, T: int) -> torch.Tensor:
    return base ** torch.arange(T - 1, -1, -1)


def state_index(states: torch.Tensor, V: int) -> torch.Tensor:
    """The index of each partial state ``[..., T]`` (base ``V + 1``)."""
    return (torch.as_tensor(states, dtype=torch.long) * _weights(V + 1, states.shape[-1])).sum(-1)


def partial_log_probs(tables: dict[int, torch.Tensor], V: int, T: int) -> torch.Tensor:
    """``lp`` ``[(V + 1)**T, T, V]`` (float64) from ``tables`` ``{mask bits: [V**T, T]}`` (``tab[x, t] = log q(x_t |
    x with the positions of the set bits masked)``, as ``experiments.ground_truth_chain_eval`` makes them); a point
    mass on the token at an unmasked position."""
    ps = partial_states(V, T)
    lp = torch.full((len(ps), T, V), -math.inf, dtype=torch.float64)
    full = all_sequences(V, T)
    for bits, tab in tables.items():
        M = [t for t in range(T) if bits >> t & 1]
        part = full.clone()
        part[:, M] = V
        idx = state_index(part, V)
        for t in M:
            lp[idx, t, full[:, t]] = tab[:, t]
    r, c = (ps < V).nonzero(as_tuple=True)
    lp[r, c, ps[r, c]] = 0.0
    return lp


def row_reader(lp, V: int) -> RowReader:
    """A reader from ``lp``: a reader already, or a table ``[(V + 1)**T, T, V]`` indexed by the states."""
    return lp if callable(lp) else lambda states: lp[state_index(states, V)]


@dataclass(frozen=True)
class Step:
    """What a rule sees: ``states`` ``[n, T]``, ``lp`` ``[n, T, V]`` (one read at each), ``step`` (0-based)."""

    states: torch.Tensor
    lp: torch.Tensor
    step: int
    V: int
    T: int

    @property
    def masked(self) -> torch.Tensor:
        return self.states == self.V


@dataclass(frozen=True)
class Moves:
    """Moves from ``Step.states[src]`` with probability ``weight`` (a state's sum to 1): ``remask`` positions masked,
    masked ``reveal`` positions filled with ``tokens`` ``[m, T]`` or (None) drawn independently from ``lp`` at the
    state (:func:`draw`). ``calls``, ``rows`` ``[n]`` (default one each): what the step costs at each state."""

    src: torch.Tensor
    weight: torch.Tensor
    remask: torch.Tensor
    reveal: torch.Tensor
    tokens: torch.Tensor | None = None
    calls: torch.Tensor | None = None
    rows: torch.Tensor | None = None


def draw(mv: Moves, lp: torch.Tensor, V: int) -> Moves:
    """The moves with ``tokens`` None spelled out: every token combination at the revealed positions, weighted by
    the product of their rows in ``lp`` (``[n, T, V]``, indexed by ``src``; zero-probability combinations dropped)."""
    if mv.tokens is not None:
        return mv
    T = mv.reveal.shape[1]
    bits = (mv.reveal.long() << torch.arange(T)).sum(1)
    parts = []
    for b in bits.unique().tolist():
        sel = (bits == b).nonzero()[:, 0]
        pos = [t for t in range(T) if b >> t & 1]
        combos = all_sequences(V, len(pos)) if pos else torch.zeros(1, 0, dtype=torch.long)
        lpc = torch.zeros(len(sel), len(combos), dtype=torch.float64)
        for i, t in enumerate(pos):
            lpc = lpc + lp[mv.src[sel], t][:, combos[:, i]]
        w = mv.weight[sel, None] * lpc.exp()
        tok = torch.zeros(len(sel), len(combos), T, dtype=torch.long)
        tok[:, :, pos] = combos
        keep = w.reshape(-1) > 0
        repeated = [_repeat(x[sel], len(combos), keep) for x in (mv.src, mv.remask, mv.reveal)]
        parts.append((*repeated, w.reshape(-1)[keep], tok.reshape(-1, T)[keep]))
    src, remask, reveal, weight, tokens = (torch.cat(x) for x in zip(*parts, strict=True))
    return Moves(src, weight, remask, reveal, tokens, calls=mv.calls, rows=mv.rows)


def _repeat(x: torch.Tensor, n: int, keep: torch.Tensor) -> torch.Tensor:
    """Each row of ``x`` repeated ``n`` times (row-major, as ``[rows, n]`` flattened), then ``keep``'s rows."""
    return x[:, None].expand(-1, n, *x.shape[1:]).reshape(-1, *x.shape[1:])[keep]


@dataclass(frozen=True)
class ExactLaw:
    """``probs`` ``[V**T]`` (float64) of every full sequence in lexicographic order (``models.exact.all_sequences``);
    expected sequential model ``calls``, forward ``rows`` and ``steps`` per draw."""

    probs: torch.Tensor
    calls: float
    rows: float
    steps: float

    @property
    def log_probs(self) -> torch.Tensor:
        return self.probs.log()


Rule = Callable[[Step], Moves]


@dataclass(frozen=True)
class Pushed:
    """The ``mass`` over partial states, expected ``calls``, ``rows``, ``steps`` (from states with masks) and the
    steps the longest path ``taken``."""

    mass: torch.Tensor
    calls: float
    rows: float
    steps: float
    taken: int


def propagate(rule: Rule, lp, V: int, T: int, mass: torch.Tensor, max_steps: int, chunk: int = 4096) -> Pushed:
    """``mass`` pushed through at most ``max_steps`` steps of ``rule`` reading ``lp`` (a table or a reader; ``chunk``
    states a call); complete states stop."""
    read = row_reader(lp, V)
    ps = partial_states(V, T)
    complete = (ps < V).all(1)
    cost = torch.zeros(3, dtype=torch.float64)  # calls, rows, steps
    taken = 0
    for s in range(max_steps):
        act = (mass > 0) & ~complete
        if not act.any():
            break
        new = mass.masked_fill(act, 0.0)
        for idx in act.nonzero()[:, 0].split(chunk):
            states, m = ps[idx], mass[idx]
            rows_lp = read(states)
            mv = draw(rule(Step(states, rows_lp, s, V, T)), rows_lp, V)
            cost += torch.stack([m.sum() if c is None else (m * c).sum() for c in (mv.calls, mv.rows, None)])
            st = states[mv.src].clone()
            if (mv.reveal & (st != V)).any():
                raise MLMProbError("a rule revealed a position that is not masked")
            st[mv.remask] = V
            assert mv.tokens is not None  # draw() fills the tokens in
            st = torch.where(mv.reveal, mv.tokens, st)
            new.index_add_(0, state_index(st, V), m[mv.src] * mv.weight)
        mass, taken = new, taken + 1
    calls, rows, steps = (float(c) for c in cost)
    return Pushed(mass, calls, rows, steps, taken)


def start_mass(V: int, T: int, ids: torch.Tensor | None = None, free: torch.Tensor | None = None) -> torch.Tensor:
    """The point mass on the start state: the ``free`` positions (default all) masked, the others ``ids``."""
    free = torch.ones(T, dtype=torch.bool) if free is None else torch.as_tensor(free, dtype=torch.bool)
    ids = torch.zeros(T, dtype=torch.long) if ids is None else torch.as_tensor(ids, dtype=torch.long)
    mass = torch.zeros((V + 1) ** T, dtype=torch.float64)
    mass[state_index(torch.where(free, V, ids), V)] = 1.0
    return mass


def to_law(pushed: Pushed, V: int, T: int, tol: float = 1e-9) -> ExactLaw:
    """The law over complete sequences of the final mass; refuses lost mass or mass left on masks."""
    mass, ps = pushed.mass, partial_states(V, T)
    complete = (ps < V).all(1)
    if abs(float(mass.sum()) - 1.0) > tol:
        raise MLMProbError(f"the rule's moves do not sum to 1 (total mass {float(mass.sum())})")
    if float(mass[~complete].sum()) > tol:
        raise MLMProbError(
            f"mass {float(mass[~complete].sum()):.3g} left on states with masks after {pushed.taken} steps"
        )
    law = torch.zeros(V**T, dtype=torch.float64)
    law[(ps[complete] * _weights(V, T)).sum(-1)] = mass[complete]
    return ExactLaw(law, pushed.calls, pushed.rows, pushed.steps)


def exact_law(rule: Rule, lp, V: int, T: int) -> ExactLaw:
    """The law of ``rule`` (reading ``lp``) run from the all-mask state until every state is complete (at most
    ``4 T`` steps)."""
    return to_law(propagate(rule, lp, V, T, start_mass(V, T), 4 * T), V, T)


def remask_all(mass: torch.Tensor, V: int, T: int, sigma: float, free: torch.Tensor | None = None) -> torch.Tensor:
    """Every ``free`` position (default all) masked again independently with probability ``sigma``."""
    fp = list(range(T)) if free is None else torch.as_tensor(free, dtype=torch.bool).nonzero()[:, 0].tolist()
    ps = partial_states(V, T)
    idx = (mass > 0).nonzero()[:, 0]
    new = torch.zeros_like(mass)
    for R in range(1 << len(fp)):
        pos = [t for i, t in enumerate(fp) if R >> i & 1]
        p = sigma ** len(pos) * (1 - sigma) ** (len(fp) - len(pos))
        if p > 0:
            st = ps[idx].clone()
            st[:, pos] = V
            new.index_add_(0, state_index(st, V), mass[idx] * p)
    return new


def l2r(st: Step) -> Moves:
    """Ancestral sampling left to right: the first masked position from its conditional."""
    n = len(st.states)
    first = torch.nn.functional.one_hot(st.masked.long().argmax(1), st.T).bool()
    return Moves(torch.arange(n), torch.ones(n, dtype=torch.float64), torch.zeros_like(first), first)


def random_order(st: Step) -> Moves:
    """A uniformly random masked position from its conditional: the mixture over all orders."""
    return parallel(1)(st)


def parallel(k: int) -> Rule:
    """``k`` uniformly random masked positions (all, if fewer are left), each from its conditional at the state
    (one pass)."""

    def rule(st: Step) -> Moves:
        bits = (st.masked.long() << torch.arange(st.T)).sum(1)
        parts = []  # (src, weight, reveal) of the states with one mask pattern
        for b in bits.unique().tolist():
            rows = (bits == b).nonzero()[:, 0]
            M = [t for t in range(st.T) if b >> t & 1]
            subs = list(itertools.combinations(M, min(k, len(M))))
            sub = torch.zeros(len(subs), st.T, dtype=torch.bool)
            for i, c in enumerate(subs):
                sub[i, list(c)] = True
            w = torch.full((len(rows) * len(subs),), 1.0 / len(subs), dtype=torch.float64)
            parts.append((rows.repeat_interleave(len(subs)), w, sub.repeat(len(rows), 1)))
        src, weight, reveal = (torch.cat(x) for x in zip(*parts, strict=True))
        return Moves(src, weight, torch.zeros_like(reveal), reveal)

    return rule

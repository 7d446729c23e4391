"""Exact output laws of decoders on a small language: every *partial* state enumerated.

A decoder of a masked LM moves through partial states ``{0..V-1, mask}**T`` (the mask is the digit
``V``; a state's index is its base-``V + 1`` number, position 0 the most significant digit, as
``LookupMLM`` indexes its table). One step of a decoder reads the model once at the current state
(``lp``: the conditionals ``log q(x_t = v | state)`` at every masked ``t``; a point mass on the current
token at an unmasked ``t``) and moves to a new state: some positions remasked, some revealed with
tokens. A *rule* lists these moves with their probabilities (:class:`Moves`); :func:`exact_law` pushes
the whole distribution over partial states through the rule's steps and returns the decoder's exact
output distribution over the ``V**T`` sequences and its expected number of sequential model calls per
sample (one per step taken from a state that still has masks).

Rules here (each a function ``Step -> Moves``): ``l2r`` (ancestral left to right: ``p_l2r``),
``random_order`` (one uniformly random masked position a step: the mixture of ``p_sigma`` over all
orders), ``parallel(k)`` (``k`` uniformly random masked positions a step, drawn independently from one
pass: ``tokens_per_step``) and ``plan_rule`` (the positions with the best ``confidence`` / ``margin`` /
``entropy`` score revealed along the plan of ``sampling.unmasking.Unmasking``: MaskGIT / LLaDA / Dream,
schedules, semi-autoregressive blocks); :func:`unmasking_law` adds its ReMDM remasking steps. The rules
mirror the kernels' (``sampling.decoders``: the same scores, ties to the lowest position, the same plan);
the tests check them against the kernels' Monte Carlo and against ``sampling.decoder_exact``.

>>> import torch
>>> from mlmprob import LookupMLM
>>> from mlmprob.experiments.ground_truth_chain_eval import conditional_tables
>>> m = LookupMLM(2, 3, seed=0)
>>> lp = partial_log_probs(conditional_tables(m, 2, 3, lambda x: x, 0), 2, 3)
>>> law = exact_law(random_order, lp, 2, 3)
>>> round(float(law.log_probs.exp().sum()), 12), law.calls
(1.0, 3.0)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable

import torch

from ..errors import MLMProbError
from ..models.exact import all_sequences

SCORES = ("confidence", "margin", "entropy")


def partial_states(V: int, T: int) -> torch.Tensor:
    """Every partial state ``[(V + 1)**T, T]`` (digit ``V`` = mask) in index order."""
    return all_sequences(V + 1, T)


def _weights(base: int, T: int) -> torch.Tensor:
    return base ** torch.arange(T - 1, -1, -1)


def partial_log_probs(tables: dict[int, torch.Tensor], V: int, T: int) -> torch.Tensor:
    """``lp`` ``[(V + 1)**T, T, V]`` (float64) from ``ground_truth_chain_eval.conditional_tables``: at a
    masked position of a partial state the model's conditional given the state; at an unmasked one a
    point mass on its token (log 0 = ``-inf`` elsewhere)."""
    ps = partial_states(V, T)
    lp = torch.full((len(ps), T, V), -math.inf, dtype=torch.float64)
    full = all_sequences(V, T)
    w = _weights(V + 1, T)
    for bits, tab in tables.items():
        M = [t for t in range(T) if bits >> t & 1]
        part = full.clone()
        part[:, M] = V
        idx = (part * w).sum(-1)
        for t in M:
            lp[idx, t, full[:, t]] = tab[:, t]
    r, t = (ps < V).nonzero(as_tuple=True)
    lp[r, t, ps[r, t]] = 0.0
    return lp


@dataclass(frozen=True)
class Step:
    """What a rule sees: ``states`` ``[n, T]`` (digit ``V`` = mask), ``lp`` ``[n, T, V]`` (one model
    read at each state), ``step`` (0-based), ``V``, ``T``."""

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
    """Moves from ``Step.states[src]`` with probability ``weight``: ``remask`` positions masked,
    ``reveal`` positions filled with ``tokens`` (``[m, T]``), or, when ``tokens`` is None, with tokens
    drawn independently from ``lp`` at the state (one pass; :func:`draw`). Reveal only masked
    positions; a state's weights sum to 1."""

    src: torch.Tensor
    weight: torch.Tensor
    remask: torch.Tensor
    reveal: torch.Tensor
    tokens: torch.Tensor | None = None


def draw(mv: Moves, lp: torch.Tensor, V: int) -> Moves:
    """The moves with ``tokens`` None spelled out: every token combination at the revealed positions,
    weighted by the product of their conditionals (zero-probability combinations dropped)."""
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
        rep = lambda x: x[:, None].expand(-1, len(combos), *x.shape[1:]).reshape(-1, *x.shape[1:])[keep]  # noqa: E731
        parts.append(Moves(rep(mv.src[sel]), w.reshape(-1)[keep], rep(mv.remask[sel]), rep(mv.reveal[sel]),
                           tok.reshape(-1, T)[keep]))
    return Moves(*(torch.cat([getattr(p, f) for p in parts]) for f in ("src", "weight", "remask", "reveal",
                                                                        "tokens")))


@dataclass(frozen=True)
class Law:
    """``log_probs`` ``[V**T]`` (float64, base-``V`` order of ``all_sequences``); ``calls``: expected
    sequential model calls per sample; ``steps``: the steps the longest path took."""

    log_probs: torch.Tensor
    calls: float
    steps: int


Rule = Callable[[Step], Moves]


def propagate(rule: Rule, lp: torch.Tensor, V: int, T: int, mass: torch.Tensor, max_steps: int) -> tuple[torch.Tensor, float, int]:
    """``(mass, calls, steps taken)``: ``mass`` over partial states pushed through at most ``max_steps`` steps
    of ``rule`` (complete states stop; a model call is counted per step per state that moves)."""
    ps = partial_states(V, T)
    w = _weights(V + 1, T)
    complete = (ps < V).all(1)
    calls, taken = 0.0, 0
    for s in range(max_steps):
        act = (mass > 0) & ~complete
        if not act.any():
            break
        idx = act.nonzero()[:, 0]
        calls += float(mass[idx].sum())
        mv = draw(rule(Step(ps[idx], lp[idx], s, V, T)), lp[idx], V)
        st = ps[idx][mv.src].clone()
        if (mv.reveal & (st != V)).any():
            raise MLMProbError("a rule revealed a position that is not masked")
        st[mv.remask] = V
        st = torch.where(mv.reveal, mv.tokens, st)
        new = mass.clone()
        new[idx] = 0.0
        new.index_add_(0, (st * w).sum(-1), mass[idx][mv.src] * mv.weight)
        mass, taken = new, taken + 1
    return mass, calls, taken


def start_mass(V: int, T: int) -> torch.Tensor:
    """The point mass on the all-mask state."""
    mass = torch.zeros((V + 1) ** T, dtype=torch.float64)
    mass[-1] = 1.0
    return mass


def to_law(mass: torch.Tensor, V: int, T: int, calls: float, steps: int, tol: float = 1e-9) -> Law:
    """The law over complete sequences of a final ``mass``; refuses lost mass or mass left on masks."""
    ps = partial_states(V, T)
    complete = (ps < V).all(1)
    if abs(float(mass.sum()) - 1.0) > tol:
        raise MLMProbError(f"the rule's moves do not sum to 1 (total mass {float(mass.sum())})")
    if float(mass[~complete].sum()) > tol:
        raise MLMProbError(f"mass {float(mass[~complete].sum()):.3g} left on states with masks after {steps} steps")
    law = torch.zeros(V ** T, dtype=torch.float64)
    law[(ps[complete] * _weights(V, T)).sum(-1)] = mass[complete]
    return Law(law.log(), calls, steps)


def exact_law(rule: Rule, lp: torch.Tensor, V: int, T: int) -> Law:
    """The law of ``rule`` run from the all-mask state until every state is complete (at most ``4 T`` steps)."""
    mass, calls, taken = propagate(rule, lp, V, T, start_mass(V, T), 4 * T)
    return to_law(mass, V, T, calls, taken)


def remask_all(mass: torch.Tensor, V: int, T: int, sigma: float) -> torch.Tensor:
    """Every position masked again independently with probability ``sigma`` (states with masks keep them)."""
    ps = partial_states(V, T)
    w = _weights(V + 1, T)
    idx = (mass > 0).nonzero()[:, 0]
    new = torch.zeros_like(mass)
    for R in range(1 << T):
        pos = [t for t in range(T) if R >> t & 1]
        p = sigma ** len(pos) * (1 - sigma) ** (T - len(pos))
        if p > 0:
            st = ps[idx].clone()
            st[:, pos] = V
            new.index_add_(0, (st * w).sum(-1), mass[idx] * p)
    return new


def unmasking_law(decoder, lp: torch.Tensor, V: int, T: int) -> Law:
    """The law of ``sampling.unmasking.Unmasking`` ``decoder`` (its settings; every position free): its plan
    (``decoder.plan``: the window and count of every step) with its score, then ``remask_steps`` ReMDM
    steps, each masking every position with probability ``remask`` and redrawing the masked ones from one
    pass (no call when nothing was masked). Mirrors the kernel's rules, so the law is the kernel's."""
    windows, counts = decoder.plan(torch.ones(1, T, dtype=torch.bool))
    rule = plan_rule(decoder.score, windows[:, 0], counts[:, 0])
    mass, calls, taken = propagate(rule, lp, V, T, start_mass(V, T), len(windows))
    for _ in range(decoder.remask_steps):
        mass, c, _ = propagate(parallel(T), lp, V, T, remask_all(mass, V, T, decoder.remask), 1)
        calls, taken = calls + c, taken + 1
    return to_law(mass, V, T, calls, taken)


# -- rules ----------------------------------------------------------------------------------------

def _one_hot(pos: torch.Tensor, T: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(pos, T).bool()


def l2r(st: Step) -> Moves:
    """Ancestral sampling left to right: the first masked position from its conditional."""
    n = len(st.states)
    pos = st.masked.long().argmax(1)
    return Moves(torch.arange(n), torch.ones(n, dtype=torch.float64), torch.zeros(n, st.T, dtype=torch.bool),
                 _one_hot(pos, st.T))


def random_order(st: Step) -> Moves:
    """A uniformly random masked position from its conditional: the mixture over all orders."""
    return parallel(1)(st)


def parallel(k: int) -> Rule:
    """``k`` uniformly random masked positions (all, if fewer are left), each from its conditional at
    the current state, independently (one pass)."""
    def rule(st: Step) -> Moves:
        bits = (st.masked.long() << torch.arange(st.T)).sum(1)
        src, weight, reveal = [], [], []
        for b in bits.unique().tolist():
            rows = (bits == b).nonzero()[:, 0]
            M = [t for t in range(st.T) if b >> t & 1]
            subs = list(itertools.combinations(M, min(k, len(M))))
            sub = torch.zeros(len(subs), st.T, dtype=torch.bool)
            for i, c in enumerate(subs):
                sub[i, list(c)] = True
            src.append(rows.repeat_interleave(len(subs)))
            reveal.append(sub.repeat(len(rows), 1))
            weight.append(torch.full((len(rows) * len(subs),), 1.0 / len(subs), dtype=torch.float64))
        src = torch.cat(src)
        return Moves(src, torch.cat(weight), torch.zeros(len(src), st.T, dtype=torch.bool), torch.cat(reveal))
    return rule


def _top(score: torch.Tensor, allowed: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """Bool ``[m, T]``: the ``n`` (per row) allowed positions of highest score, ties to the left."""
    key = score.masked_fill(~allowed, -math.inf)
    order = key.sort(dim=1, descending=True, stable=True).indices
    rank = order.argsort(1)
    return allowed & (rank < n[:, None])


def _score(kind: str, lp: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """``[m, T]`` score of each position (higher = decoded first): ``confidence``, the probability of the
    token drawn there; ``margin``, top-1 minus top-2 probability; ``entropy``, minus the entropy."""
    p = lp.exp()
    if kind == "confidence":
        return p.gather(2, tokens[:, :, None])[:, :, 0]
    if kind == "margin":
        top = p.topk(2, dim=2).values
        return top[:, :, 0] - top[:, :, 1]
    if kind == "entropy":
        return (p * lp).nan_to_num(0.0).sum(2)
    raise MLMProbError(f"score must be one of {SCORES}, got {kind!r}")


def _ranked_moves(st: Step, kind: str, n: torch.Tensor, allowed: torch.Tensor) -> Moves:
    """Draw a token at every masked position from one pass, keep the ``n`` best ``allowed`` ones by
    ``kind`` (scored at the drawn tokens)."""
    m = len(st.states)
    mv = draw(Moves(torch.arange(m), torch.ones(m, dtype=torch.float64), torch.zeros(m, st.T, dtype=torch.bool),
                    st.masked), st.lp, st.V)
    keep = _top(_score(kind, st.lp[mv.src], mv.tokens), allowed[mv.src], n[mv.src])
    return Moves(mv.src, mv.weight, mv.remask, keep, mv.tokens)


def plan_rule(kind: str, windows: torch.Tensor, counts: torch.Tensor) -> Rule:
    """MaskGIT / LLaDA / Dream decoding along a plan (``sampling.decoders.unmask_plan``): at step ``s`` every
    masked position gets a token drawn from its conditional (one pass), and the ``counts[s]`` masked
    positions of ``windows[s]`` (bool ``[T]``) with the best ``kind`` score keep theirs."""
    def rule(st: Step) -> Moves:
        n = torch.full((len(st.states),), int(counts[st.step]))
        return _ranked_moves(st, kind, n, st.masked & windows[st.step][None, :])
    return rule

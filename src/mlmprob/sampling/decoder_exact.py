"""The exact output law of the parallel decoders (``Unmasking``, ``Adaptive``) on a tiny model: their rules for the
partial-state engine (``sampling.partial_states``), built from the kernels' own selection functions
(``sampling.decoders``), so the enumerated law is the kernels' law. ``logprobs(partial [N, L]) -> [N, L, V]``
(float64, the mask symbol ``V``) is a table (``partial_states.partial_log_probs``) or a function
(:func:`model_logprobs`). With ``"confidence"`` every candidate draw is enumerated (the selection looks at them),
else only the revealed values. Costs grow as ``(V + 1)^L`` states times ``V^k``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from ..batching import read_logits
from ..models.alphabet import allowed_ids
from .adaptive import Adaptive, pair_choice
from .decoders import dependence_matrix, score_config, scores, select_adaptive, select_top
from .options import ProposalConfig
from .partial_states import (
    ExactLaw,
    Moves,
    Pushed,
    RowReader,
    Rule,
    Step,
    draw,
    parallel,
    propagate,
    remask_all,
    row_reader,
    start_mass,
    to_law,
)
from .proposals import proposal_log_probs

LogProbs = Callable[[torch.Tensor], torch.Tensor]


def model_logprobs(mlm, *, wrap=None, offset: int = 0, V: int | None = None) -> LogProbs:
    """``logprobs`` of a masked LM (its conditionals over its alphabet at temperature 1), with the conventions
    of ``experiments.ground_truth_chain_eval``: symbol ``v`` is model id ``v + offset``; ``wrap`` (e.g.
    ``training.data.wrap_symbols``) turns symbol rows into model rows (adding the offset itself) with the ``L`` symbols
    in the middle; ``V`` (default: the model's vocabulary size minus ``offset``) is the mask symbol. The rows are
    renormalised over the ``V`` symbols. Results are cached per partial state."""
    V = mlm.vocab_size - offset if V is None else V
    allowed = allowed_ids(mlm)
    cache: dict[tuple[int, ...], torch.Tensor] = {}

    def logprobs(partial: torch.Tensor) -> torch.Tensor:
        partial = torch.as_tensor(partial, dtype=torch.long)
        todo = sorted({tuple(r) for r in partial.tolist()} - cache.keys())
        if todo:
            sym = torch.tensor(todo, dtype=torch.long)
            masked = sym == V
            base = sym.masked_fill(masked, 0)
            ids = base + offset if wrap is None else wrap(base)
            N, L = sym.shape
            shift = (ids.shape[1] - L) // 2
            window = ids[:, shift : shift + L]
            window[masked] = mlm.mask_id
            rr = torch.arange(N).repeat_interleave(L)
            cc = torch.arange(L).repeat(N) + shift
            lq = proposal_log_probs(read_logits(mlm, ids, rr, cc).float(), allowed)[:, offset : offset + V]
            lq = (lq - torch.logsumexp(lq, -1, keepdim=True)).view(N, L, V)
            cache.update(zip(todo, lq, strict=True))
        return torch.stack([cache[tuple(r)] for r in partial.tolist()])

    return logprobs


def _readers(logprobs, V: int, proposal: ProposalConfig) -> tuple[RowReader, RowReader | None]:
    """``(proposal rows, score rows)`` readers from the model's rows (the second None at temperature > 0)."""
    read = row_reader(logprobs, V)

    def through(config: ProposalConfig, states: torch.Tensor) -> torch.Tensor:
        base = read(states)
        return proposal_log_probs(base.reshape(-1, base.shape[-1]), None, config).view(base.shape)

    return partial(through, proposal), (None if proposal.temperature > 0 else partial(through, score_config(proposal)))


def _select(st: Step, slq: torch.Tensor, kind: str, eligible: torch.Tensor, pick, calls=None, rows=None) -> Moves:
    """A candidate drawn at every ``eligible`` position from ``st.lp``, those revealed that ``pick(score [m, T], src
    [m]) -> bool [m, T]`` selects by the ``kind`` scores of the rows ``slq``."""
    n, T, V = slq.shape
    src, one, none = torch.arange(n), torch.ones(n, dtype=torch.float64), torch.zeros(n, T, dtype=torch.bool)
    if kind != "confidence":  # the selection does not look at the draws: only the revealed are drawn
        sc = scores(slq.reshape(-1, V), torch.zeros(n * T, dtype=torch.long), kind).view(n, T)
        return Moves(src, one, none, pick(sc, src), calls=calls, rows=rows)
    mv = draw(Moves(src, one, none, eligible), st.lp, V)
    assert mv.tokens is not None  # draw() fills the tokens in
    sc = scores(slq[mv.src].reshape(-1, V), mv.tokens.reshape(-1), kind).view(-1, T)
    return Moves(mv.src, mv.weight, mv.remask, pick(sc, mv.src), mv.tokens, calls, rows)


def plan_rule(kind: str, windows: torch.Tensor, counts: torch.Tensor, score_read: RowReader | None = None) -> Rule:
    """``Unmasking``'s steps along its plan (``windows`` ``[S, T]``, ``counts`` ``[S]``): a candidate at every masked
    position of ``windows[s]``, the ``counts[s]`` best by ``kind`` (of the step's rows, or ``score_read``'s) kept."""

    def rule(st: Step) -> Moves:
        eligible = st.masked & windows[st.step][None, :]
        n = torch.full((len(st.states),), int(counts[st.step]))
        slq = st.lp if score_read is None else score_read(st.states)
        return _select(st, slq, kind, eligible, lambda sc, src: select_top(sc, eligible[src], n[src]))

    return rule


def _dependence(st: Step, top_k: int | None, read: RowReader) -> tuple[torch.Tensor, torch.Tensor]:
    """``(D [n, T, T], pair rows [n])`` of each state, as ``Adaptive`` measures them (``decoders.dependence_matrix``
    of the states with one masked position ``j`` revealed at ``v``)."""
    n, T, V = st.lp.shape
    M = st.masked
    chosen, weight = (x.view(n, T, V) for x in pair_choice(st.lp.reshape(-1, V), top_k))
    if top_k is None:  # the kernel reads every allowed value (here: every symbol)
        chosen = torch.ones_like(chosen)
    chosen = chosen & (M & (M.sum(1) >= 2)[:, None])[:, :, None]
    b, j, v = chosen.nonzero(as_tuple=True)
    pair = st.states[b].clone()
    pair[torch.arange(len(b)), j] = v
    given = read(pair) if len(b) else st.lp[:0]
    e, i = (M[b] & (torch.arange(T)[None, :] != j[:, None])).nonzero(as_tuple=True)
    D = dependence_matrix(n, T, b[e], i, j[e], weight[b[e], j[e], v[e]], given[e, i], st.lp[b[e], i])
    return D, chosen.sum((1, 2)).double()


def adaptive_rule(decoder: Adaptive, read: RowReader, score_read: RowReader | None = None) -> Rule:
    """``Adaptive``'s step: the pair rows (``read``: proposal rows), the dependence ``D``, a candidate at every
    masked position, the greedy set of ``decoders.select_adaptive`` revealed; costs ``1 + 1{pair_top_k, two
    masked}`` calls and ``1 +`` the pair rows."""

    def rule(st: Step) -> Moves:
        M = st.masked
        D, n_pair = _dependence(st, decoder.pair_top_k, read)
        calls = 1.0 + (M.sum(1) >= 2).double() * (decoder.pair_top_k is not None)
        slq = st.lp if score_read is None else score_read(st.states)

        def pick(sc, src):
            return select_adaptive(sc, M[src], D[src], decoder.threshold, decoder.max_tokens)

        return _select(st, slq, decoder.score, M, pick, calls, 1.0 + n_pair)

    return rule


def unmasking_law(decoder, logprobs, V: int, L: int, *, ids=None, free=None) -> ExactLaw:
    """The law of ``Unmasking`` ``decoder``: its plan (``decoder.plan``) with its score, then ``remask_steps``
    ReMDM steps, each masking every free position with probability ``remask`` and redrawing the masked ones
    from one pass (no call when nothing was masked); ``steps`` is the plan's length plus ``remask_steps``."""
    free = torch.ones(L, dtype=torch.bool) if free is None else torch.as_tensor(free, dtype=torch.bool)
    mass = start_mass(V, L, ids, free)
    read, score_read = _readers(logprobs, V, decoder.proposal)
    windows, counts = decoder.plan(free[None])
    p = propagate(plan_rule(decoder.score, windows[:, 0], counts[:, 0], score_read), read, V, L, mass, len(windows))
    calls, rows = p.calls, p.rows
    for _ in range(decoder.remask_steps):
        p = propagate(parallel(L), read, V, L, remask_all(p.mass, V, L, decoder.remask, free), 1)
        calls, rows = calls + p.calls, rows + p.rows
    steps = len(windows) + decoder.remask_steps
    return to_law(Pushed(p.mass, calls, rows, steps, steps), V, L)


def adaptive_law(decoder: Adaptive, logprobs, V: int, L: int, *, ids=None, free=None) -> ExactLaw:
    """The law of ``Adaptive`` ``decoder`` (expected calls, forward rows with the pair rows, and steps)."""
    read, score_read = _readers(logprobs, V, decoder.proposal)
    rule = adaptive_rule(decoder, read, score_read)
    return to_law(propagate(rule, read, V, L, start_mass(V, L, ids, free), L + 1), V, L)


def exact_output_distribution(decoder, logprobs: LogProbs, V: int, L: int, *, ids=None, free=None) -> ExactLaw:
    """The exact law of one draw of ``decoder`` (an ``Unmasking`` or ``Adaptive``; its settings are read, its
    model is not: ``logprobs`` is) over the ``V**L`` sequences; ``free`` (bool ``[L]``, default all) are drawn,
    the others keep ``ids``."""
    law = adaptive_law if isinstance(decoder, Adaptive) else unmasking_law
    return law(decoder, logprobs, V, L, ids=ids, free=free)

"""The exact output law of the parallel decoders (``sampling.unmasking.Unmasking``, ``sampling.adaptive.Adaptive``)
on a tiny model, by propagating the distribution over partial states step by step.

``exact_output_distribution(decoder, logprobs, V, L)`` follows one chain: a partial state is a row of symbols
``0..V-1`` with ``V`` for a masked position. At every step it asks ``logprobs`` for the model's conditionals at
the states it holds, turns them into the decoder's proposal (``proposals.proposal_log_probs``: temperature,
nucleus; and the rows its scores read, ``decoders.score_config``) as the kernels do, enumerates the candidate draws of each state (every combination of values at the
positions the step draws, with their probabilities), asks the decoders' own selection rules
(``sampling.decoders``: ``scores``, ``select_top``, ``select_adaptive``, ``dependence_matrix``,
``unmask_plan``) which positions are revealed, and moves the weight to the resulting states. With a score of
the state alone (``"margin"``, ``"entropy"``) the selection does not look at the draws, so only the revealed
positions' values are enumerated (the discarded candidates sum out). Remasking steps enumerate the masked
subset (each free position with probability ``remask``) and the redraws.

``logprobs(partial [N, L]) -> [N, L, V]`` (float64 log-probabilities, normalised over the ``V`` symbols; only
the masked positions are used) is the model's conditionals at temperature 1: a table of a trained model's
conditionals, or :func:`model_logprobs` of a masked LM, read through the forward primitive (with ``wrap`` and
``offset`` for a model whose ids are not the symbols, as in ``experiments.ground_truth_chain_eval``). Costs grow as ``(V + 1)^L`` states times
``V^L`` draws: seconds for ``V = 5``, ``L = 6`` (measured on a CPU core).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

import torch

from ..batching import read_logits
from ..models.alphabet import allowed_ids
from .adaptive import Adaptive, pair_choice
from .decoders import dependence_matrix, score_config, scores, select_adaptive, select_top
from .proposals import proposal_log_probs

LogProbs = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class ExactLaw:
    """``probs`` ``[V**L]`` (float64): the probability of every full sequence, in lexicographic order
    (``models.exact.all_sequences``); ``calls``, ``rows``: expected sequential model calls and forward rows per
    draw; ``steps``: expected steps."""

    probs: torch.Tensor
    calls: float
    rows: float
    steps: float


def model_logprobs(mlm, *, wrap=None, offset: int = 0, V: int | None = None) -> LogProbs:
    """``logprobs`` of a masked LM (its conditionals over its alphabet at temperature 1), with the conventions of ``experiments.ground_truth_chain_eval``: symbol ``v``
    is model id ``v + offset``; ``wrap`` (e.g. ``training.data.wrap_symbols``) turns symbol rows into model rows
    (adding the offset itself) with the ``L`` symbols in the middle; ``V`` (default: the model's vocabulary size
    minus ``offset``) is the mask symbol. The rows are renormalised over the ``V`` symbols. Results are cached
    per partial state.

    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> model_logprobs(m)(torch.tensor([[2, 1]]))[0, 0].exp()               # p(x1 | x2 = 1)
    tensor([0.3333, 0.6667], dtype=torch.float64)
    """
    V = mlm.vocab_size - offset if V is None else V
    allowed, cache = allowed_ids(mlm), {}

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
            window = ids[:, shift:shift + L]
            window[masked] = mlm.mask_id
            rr = torch.arange(N).repeat_interleave(L)
            cc = torch.arange(L).repeat(N) + shift
            lq = proposal_log_probs(read_logits(mlm, ids, rr, cc).float(), allowed)[:, offset:offset + V]
            lq = (lq - torch.logsumexp(lq, -1, keepdim=True)).view(N, L, V)
            cache.update(zip(todo, lq))
        return torch.stack([cache[tuple(r)] for r in partial.tolist()])

    return logprobs


def _fills(state: tuple, positions: list[int], lq: torch.Tensor):
    """``(new state, probability)`` of every draw of values at ``positions`` (``lq`` ``[L, V]``)."""
    supports = [[(v, float(lq[p, v].exp())) for v in range(lq.shape[1]) if lq[p, v] > float("-inf")]
                for p in positions]
    for combo in itertools.product(*supports):
        s, w = list(state), 1.0
        for p, (v, pv) in zip(positions, combo):
            s[p], w = v, w * pv
        yield tuple(s), w


def _draw_step(state, lq, slq, eligible: list[int], reveal_of, score: str, V: int):
    """The weight of each next state after one step that draws at ``eligible`` and reveals ``reveal_of(score
    [C, L], cand [C, L], eligible [C, L]) -> bool [C, L]``."""
    L = len(state)
    out = defaultdict(float)
    el = torch.zeros(1, L, dtype=torch.bool)
    el[0, eligible] = True
    if score != "confidence":           # the selection does not look at the draws
        sc = torch.zeros(1, L, dtype=torch.float64)
        sc[0, eligible] = scores(slq[eligible], torch.zeros(len(eligible), dtype=torch.long), score)
        reveal = reveal_of(sc, None, el)[0].nonzero(as_tuple=True)[0].tolist()
        for s, w in _fills(state, reveal, lq):
            out[s] += w
        return out
    combos = list(_fills(state, eligible, lq))
    cand = torch.tensor([s for s, _ in combos], dtype=torch.long)
    sc = torch.zeros(len(combos), L, dtype=torch.float64)
    flat = slq[eligible].repeat(len(combos), 1)
    sc[:, eligible] = scores(flat, cand[:, eligible].reshape(-1), score).view(len(combos), -1)
    reveal = reveal_of(sc, cand, el.expand(len(combos), L))
    for (s, w), r in zip(combos, reveal):
        out[tuple(v if r[p] else (V if p in eligible else state[p]) for p, v in enumerate(s))] += w
    return out


def _unmasking(decoder, logprobs, V, start, free, out_steps):
    windows, counts = decoder.plan(free[None])
    dist, calls, rows = {start: 1.0}, 0.0, 0.0
    for s in range(windows.shape[0]):
        c = int(counts[s, 0])
        states = list(dist)
        lqs, slqs = logprobs(torch.tensor(states))
        new = defaultdict(float)
        for st, lq, slq in zip(states, lqs, slqs):
            eligible = [p for p in range(len(st)) if windows[s, 0, p] and st[p] == V]
            step = _draw_step(st, lq, slq, eligible,
                              lambda sc, cand, el: select_top(sc, el, torch.full((len(sc),), c)), decoder.score, V)
            for ns, w in step.items():
                new[ns] += dist[st] * w
        dist, calls, rows = new, calls + 1, rows + 1
    sigma, fp = decoder.remask, [p for p in range(len(start)) if free[p]]
    for _ in range(decoder.remask_steps):
        new = defaultdict(float)
        for st, w in dist.items():
            for k in range(len(fp) + 1):
                for subset in itertools.combinations(fp, k):
                    pw = w * sigma ** k * (1 - sigma) ** (len(fp) - k)
                    if pw == 0:
                        continue
                    if k == 0:
                        new[st] += pw
                        continue
                    calls, rows = calls + pw, rows + pw
                    masked = tuple(V if p in subset else v for p, v in enumerate(st))
                    for ns, q in _fills(masked, list(subset), logprobs(torch.tensor([masked]))[0][0]):
                        new[ns] += pw * q
        dist = new
    out_steps.append(windows.shape[0] + decoder.remask_steps)
    return dist, calls, rows


def _adaptive(decoder, logprobs, V, start, free, out_steps):
    dist, done = {start: 1.0}, {}
    calls = rows = steps = 0.0
    while dist:
        new = defaultdict(float)
        for st, w in dist.items():
            M = [p for p in range(len(st)) if free[p] and st[p] == V]
            if not M:
                done[st] = done.get(st, 0.0) + w
                continue
            lq, slq = (x[0] for x in logprobs(torch.tensor([st])))
            D, n_pair = _pair_dependence(decoder, logprobs, st, M, lq, V)
            calls += w * (1 + (decoder.pair_top_k is not None and len(M) >= 2))
            rows, steps = rows + w * (1 + n_pair), steps + w

            def reveal_of(sc, cand, el):
                return select_adaptive(sc, el, D.expand(len(sc), -1, -1), decoder.threshold, decoder.max_tokens)

            for ns, q in _draw_step(st, lq, slq, M, reveal_of, decoder.score, V).items():
                new[ns] += w * q
        dist = new
    out_steps.append(steps)
    return done, calls, rows


def _pair_dependence(decoder, logprobs, st, M, lq, V):
    """``(D [1, L, L], pair rows)`` of one state, as ``Adaptive`` measures it."""
    L = len(st)
    if len(M) < 2:
        return torch.zeros(1, L, L, dtype=torch.float64), 0
    chosen, weight = pair_choice(lq[M], decoder.pair_top_k)
    if decoder.pair_top_k is None:      # the kernel reads every allowed value (here: every symbol)
        chosen = torch.ones_like(chosen)
    b, i, j, wt, given, base = [], [], [], [], [], []
    rows = [(jk, jp, v) for jk, jp in enumerate(M) for v in range(V) if chosen[jk, v]]
    lqs = logprobs(torch.tensor([tuple(v if p == jp else x for p, x in enumerate(st)) for _, jp, v in rows]))[0]
    for (jk, jp, v), lr in zip(rows, lqs):
        for ip in M:
            if ip != jp:
                b.append(0), i.append(ip), j.append(jp), wt.append(float(weight[jk, v]))
                given.append(lr[ip]), base.append(lq[ip])
    t = lambda x: torch.tensor(x, dtype=torch.long)  # noqa: E731
    D = dependence_matrix(1, L, t(b), t(i), t(j), torch.tensor(wt, dtype=torch.float64),
                          torch.stack(given), torch.stack(base))
    return D, len(rows)


def _through(logprobs: LogProbs, proposal):
    """``states -> (proposal rows, score rows)``, each ``[N, L, V]``, from the model's conditionals."""

    def both(states):
        base = logprobs(states)
        flat = base.reshape(-1, base.shape[-1])
        q = proposal_log_probs(flat, None, proposal).view(base.shape)
        s = q if proposal.temperature > 0 else proposal_log_probs(flat, None, score_config(proposal)).view(base.shape)
        return q, s

    return both


def exact_output_distribution(decoder, logprobs: LogProbs, V: int, L: int, *, ids=None, free=None) -> ExactLaw:
    """The exact law of one draw of ``decoder`` (an ``Unmasking`` or ``Adaptive``; its settings are read, its
    model is not: ``logprobs`` is) over the ``V**L`` sequences; ``free`` (bool ``[L]``, default all) are drawn,
    the others keep ``ids``.

    >>> from mlmprob import ExactMLM
    >>> from mlmprob.sampling.unmasking import Unmasking
    >>> m = ExactMLM(torch.randn(2, 2, 2, generator=torch.Generator().manual_seed(0)))
    >>> law = exact_output_distribution(Unmasking(m, score="entropy", steps=3), model_logprobs(m), 2, 3)
    >>> torch.allclose(law.probs, m.log_joint.flatten().exp()), law.calls   # one position per step: the joint
    (True, 3.0)
    """
    free = torch.ones(L, dtype=torch.bool) if free is None else torch.as_tensor(free, dtype=torch.bool)
    ids = torch.zeros(L, dtype=torch.long) if ids is None else torch.as_tensor(ids, dtype=torch.long)
    start = tuple(V if f else int(x) for f, x in zip(free.tolist(), ids.tolist()))
    run = _adaptive if isinstance(decoder, Adaptive) else _unmasking
    steps: list = []
    dist, calls, rows = run(decoder, _through(logprobs, decoder.proposal), V, start, free, steps)
    probs = torch.zeros(V ** L, dtype=torch.float64)
    for st, w in dist.items():
        probs[sum(v * V ** (L - 1 - t) for t, v in enumerate(st))] += w
    return ExactLaw(probs, float(calls), float(rows), float(steps[0]))

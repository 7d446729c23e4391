"""``loglik``: the chain-rule log-likelihood of the scored positions under an MLM, for one or many orders. For an
order ``sigma`` of the scored positions ``S`` (the context ``C`` observed),

    log p_sigma(x_S | x_C) = sum_k log q_{sigma_k}(x_{sigma_k} | x_C, x_{sigma_<k})   (sigma_>=k masked)

each conditional normalised over the model's proposal alphabet (the mass left outside is reported). Over ``K``
orders, ``mixture`` is the log of ``mean_sigma p_sigma`` and ``elbo`` the mean of ``log p_sigma``, a lower bound."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..batching import iter_masked_logits
from ..energies import Positions, as_input_ids, resolve_positions, row_sum
from ..errors import PositionsError
from ..models.alphabet import allowed_ids
from ..models.protocol import MaskedLM
from ..models.reader import reader_of
from ..runtime.seeds import check_generator, seeded_generator
from .orders import OrderPlan, plan_orders
from .spec import LoglikSpec

DEDUPE_CELLS = 1 << 22  # copies x length up to which identical copies (shared prefixes) are forwarded once


@dataclass(frozen=True)
class LogLik:
    """Chain-rule log-likelihoods of a batch ``[B, L]`` under ``K`` orders (float64).

    - ``per_order`` ``[B, K]``: ``log p_sigma(x_S | x_C)``; NaN for ``k >= n_orders[b]`` (a row whose every order
      was enumerated may have fewer than ``K``);
    - ``step_log_prob`` ``[B, K, n]``: the terms of each order, step by step (0 at padding);
    - ``orders`` long ``[B, K, n]``: the positions in the order they were revealed (``-1`` padding);
    - ``n_orders`` long ``[B]``; ``exact`` bool ``[B]``: the orders are all the distinct orders;
    - ``log_inside`` ``[B, K]``: the sum over the steps of the log of the mass inside the proposal alphabet
      (``per_order + log_inside`` is the chain over the whole vocabulary);
    - ``outside_mass`` ``[B, K]``: the mean over the steps of the mass outside the alphabet;
    - ``positions`` bool ``[B, L]``: the scored positions ``S``.
    """

    per_order: torch.Tensor
    step_log_prob: torch.Tensor
    orders: torch.Tensor
    n_orders: torch.Tensor
    exact: torch.Tensor
    log_inside: torch.Tensor
    outside_mass: torch.Tensor
    positions: torch.Tensor

    @property
    def valid(self) -> torch.Tensor:
        """Bool ``[B, K]``: the orders each row has."""
        return torch.arange(self.per_order.shape[1])[None, :] < self.n_orders[:, None]

    @property
    def mixture(self) -> torch.Tensor:
        """``log mean_sigma p_sigma(x_S | x_C)`` ``[B]``."""
        lp = self.per_order.masked_fill(~self.valid, float("-inf"))
        return torch.logsumexp(lp, -1) - self.n_orders.double().log()

    @property
    def elbo(self) -> torch.Tensor:
        """``mean_sigma log p_sigma(x_S | x_C)`` ``[B]`` (at most ``mixture``)."""
        return self.per_order.masked_fill(~self.valid, 0.0).sum(-1) / self.n_orders.double()

    @property
    def n_tokens(self) -> torch.Tensor:
        return self.positions.sum(-1)


def _check_word_ids(word_ids, ids: torch.Tensor) -> torch.Tensor | None:
    if word_ids is None:
        return None
    w = torch.as_tensor(word_ids)
    if w.dtype.is_floating_point or w.dtype == torch.bool or tuple(w.shape) != tuple(ids.shape):
        raise PositionsError(
            f"word_ids must be integers of the shape of input_ids {tuple(ids.shape)}, "
            f"got dtype {w.dtype}, shape {tuple(w.shape)}"
        )
    return w.long()


def _check_alphabet(ids: torch.Tensor, sel: torch.Tensor, allowed: torch.Tensor) -> None:
    bad = sel & ~allowed[ids.clamp(0, len(allowed) - 1)]
    if bad.any():
        b, t = bad.nonzero()[0].tolist()
        raise PositionsError(
            f"position {t} of sequence {b} holds token id {int(ids[b, t])}, outside the model's "
            "proposal alphabet: its chain-rule probability is 0 (leave it out of positions)"
        )


def _copies(plan: OrderPlan, L: int):
    """One copy per step: ``(rows, cols, extra_mask [N, L], (b, k, j))`` with the later steps masked."""
    b, k, j = (plan.orders >= 0).nonzero(as_tuple=True)
    cols = plan.orders[b, k, j]
    B, K, n = plan.orders.shape
    rank = torch.full((B, K, L + 1), n, dtype=torch.int32)  # step at which a position is revealed
    rank.view(-1, L + 1).scatter_(
        1,
        torch.where(plan.orders >= 0, plan.orders, L).view(B * K, n),
        torch.arange(n, dtype=torch.int32).expand(B * K, n).contiguous(),
    )
    extra = torch.empty(len(b), L, dtype=torch.bool)
    for lo in range(0, len(b), 4096):
        s = slice(lo, lo + 4096)
        extra[s] = (rank[b[s], k[s], :L] > j[s, None]) & (rank[b[s], k[s], :L] < n)
    return b, cols, extra, (b, k, j)


def _dedupe(rows, cols, extra):
    """Identical copies (same row, position and mask) once: ``(rows, cols, extra, inverse)``."""
    N, L = extra.shape
    if N * (L + 2) > DEDUPE_CELLS:
        return rows, cols, extra, torch.arange(N)
    key = torch.cat([rows[:, None], cols[:, None], extra.long()], 1)
    uniq, inverse = torch.unique(key, dim=0, return_inverse=True)
    return uniq[:, 0], uniq[:, 1], uniq[:, 2:].bool(), inverse


def read_steps(
    mlm: MaskedLM, ids: torch.Tensor, rows, cols, extra, allowed: torch.Tensor, progress
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log q(x at col | copy) normalised over allowed, log of the mass inside allowed)``, ``[N]`` each."""
    dev = reader_of(mlm).device
    acc = torch.float64 if dev.type == "cpu" else torch.float32
    lp, lin = torch.zeros(2, len(rows), dtype=torch.float64, device=dev)
    targets = ids.to(dev)[rows.to(dev), cols.to(dev)]
    al = allowed.to(dev)
    everything = bool(allowed.all())
    for idx, logits in iter_masked_logits(mlm, ids, rows, cols, extra_mask=extra, progress=progress, on_device=True):
        x = logits.to(acc)
        z_in = torch.logsumexp(x if everything else x.masked_fill(~al, float("-inf")), -1)
        lp[idx] = (x.gather(1, targets[idx, None])[:, 0] - z_in).double()
        lin[idx] = 0.0 if everything else (z_in - torch.logsumexp(x, -1)).double()
    return lp.cpu(), lin.cpu()


def loglik(
    mlm: MaskedLM,
    input_ids,
    positions: Positions = None,
    spec: LoglikSpec | None = None,
    *,
    generator: torch.Generator | None = None,
    word_ids=None,
    progress: Callable[[int], None] | None = None,
    **overrides,
) -> LogLik:
    """Chain-rule log-likelihoods of ``x_S`` given the rest, for the orders the settings ask for.

    ``input_ids`` and ``positions`` as in ``mlmprob.pll`` (token ids ``[B, L]`` or text; default positions: every
    non-special position; a subset gives their conditional log-likelihood given the others). The settings: ``spec``,
    a :class:`~mlmprob.likelihood.spec.LoglikSpec` (default ``LoglikSpec()``), its fields overridden by keyword:
    ``order`` (default ``"random"``): ``"l2r"``, ``"r2l"``, ``"random"`` (``n_orders``, default 8, uniform orders
    drawn row after row; all the orders of a row when there are at most ``n_orders``), or explicit orders of the
    scored positions (one order, ``K`` orders shared by the batch, or ``[B, K, n]``); random orders come from
    ``generator``, else from one seeded by ``seed`` (``runtime.seeds`` stream ``"loglik"``). ``word_ids`` (``[B, L]``,
    -1 for special tokens) reveals a word's pieces in one step, read left to right. ``progress`` gets the copies done;
    ``per_order`` is the records' setting (every order's value is in ``per_order`` here).

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> r = loglik(m, torch.tensor([[1, 1]]), n_orders=2)   # both orders: exact
    >>> r.per_order.exp(), round(float(r.mixture.exp()), 4), r.exact.tolist()
    (tensor([[0.4000, 0.4000]], dtype=torch.float64), 0.4, [True])
    >>> loglik(m, torch.tensor([[1, 1]]), spec=LoglikSpec(order="r2l")).per_order.exp()
    tensor([[0.4000]], dtype=torch.float64)
    """
    spec = LoglikSpec.of(spec, **overrides)
    generator = check_generator(generator) if generator is not None else seeded_generator(spec.seed, "stream", "loglik")
    ids = as_input_ids(mlm, input_ids)
    sel = resolve_positions(mlm, ids, positions)
    words = _check_word_ids(word_ids, ids)
    allowed = allowed_ids(mlm)
    _check_alphabet(ids, sel, allowed)
    plan = plan_orders(sel, words, spec.order, spec.n_orders, generator)
    rows, cols, extra, (b, k, j) = _copies(plan, ids.shape[1])
    rows, cols, extra, inverse = _dedupe(rows, cols, extra)
    lp, lin = read_steps(mlm, ids, rows, cols, extra, allowed, progress)
    steps, inside = torch.zeros(2, *plan.orders.shape, dtype=torch.float64)
    steps[b, k, j], inside[b, k, j] = lp[inverse], lin[inverse]
    valid = torch.arange(plan.orders.shape[1])[None, :] < plan.n_orders[:, None]
    nan = torch.tensor(math.nan, dtype=torch.float64)
    n_steps = (plan.orders >= 0).sum(-1).clamp(min=1)
    return LogLik(
        per_order=torch.where(valid, row_sum(steps), nan),
        step_log_prob=steps,
        orders=plan.orders,
        n_orders=plan.n_orders,
        exact=plan.exact,
        log_inside=torch.where(valid, row_sum(inside), nan),
        outside_mass=torch.where(valid, -torch.expm1(inside).sum(-1) / n_steps, nan),
        positions=sel,
    )

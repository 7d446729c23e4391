"""All the MLM conditionals one pair of positions needs, from one batched set of forward passes.

For a pair ``(a, b)`` and candidates ``V' = (v_1..v_K)``: copy ``0`` has ``a`` and ``b`` masked (the MLM's pair
"joint", eq. 1); copies ``1..K`` mask ``a`` with ``b = v_j``; copies ``K+1..2K`` mask ``b`` with ``a = v_i``: ``2K + 1``
rows, reused by every construction and metric. Tables: rows index ``x_a``, columns ``x_b``. Conditionals are
normalised over ``V'``; the mass outside it is kept (``outside_mass``)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import torch

from ..batching import iter_read_logits, read_logits
from ..energies import as_row
from ..errors import MLMProbError, PositionsError
from ..models.protocol import MaskedLM
from ..models.reader import reader_of


@dataclass(frozen=True)
class PairConditionals:
    """Logits of the ``2K + 1`` masked copies of one pair, restricted to the candidates ``V'`` (float64, CPU).

    ``logit_a[i, j]`` is the raw logit of ``x_a = v_i`` with ``a`` masked and ``x_b = v_j``; ``logit_b[i, j]`` that
    of ``x_b = v_j`` with ``b`` masked and ``x_a = v_i``; ``marg_logit_a[i]`` / ``marg_logit_b[j]`` the logits with
    both masked. ``lse_full_*``: each copy's log-normaliser over the whole output vocabulary; ``mask_logit_*``: the
    mask token's logit as an output (same copies), or None when the output vocabulary lacks it."""

    a: int
    b: int
    candidates: torch.Tensor  # [K] token ids of V'
    gold: tuple[int, int]  # token ids at (a, b) in the input (may be the mask id)
    logit_a: torch.Tensor  # [K, K]
    logit_b: torch.Tensor  # [K, K]
    marg_logit_a: torch.Tensor  # [K]
    marg_logit_b: torch.Tensor  # [K]
    lse_full_a: torch.Tensor  # [K]   per column j (copy a masked, b = v_j)
    lse_full_b: torch.Tensor  # [K]   per row i (copy b masked, a = v_i)
    lse_full_marg: torch.Tensor  # [2]   (at a, at b) in the both-masked copy
    mask_id: int
    mask_logit_a: torch.Tensor | None = None  # [K]   mask-token logit at a, copy b = v_j
    mask_logit_b: torch.Tensor | None = None  # [K]   mask-token logit at b, copy a = v_i
    mask_logit_marg: torch.Tensor | None = None  # [2]   in the both-masked copy, at (a, b)
    n_forward: int = 0  # forward rows used (2K + 1)
    n_calls: int = 0  # batched model calls

    @property
    def size(self) -> int:
        return int(self.candidates.numel())

    @cached_property
    def index_of(self) -> dict[int, int]:
        """Token id -> index in ``V'``."""
        return {int(t): i for i, t in enumerate(self.candidates.tolist())}

    @property
    def gold_index(self) -> tuple[int, int] | None:
        """Indices of the gold tokens in ``V'``, or None when either is not a candidate."""
        ia, ib = self.index_of.get(self.gold[0]), self.index_of.get(self.gold[1])
        return None if ia is None or ib is None else (ia, ib)

    @cached_property
    def cond_a(self) -> torch.Tensor:
        """``[K, K]``: ``log q_a(v_i | x_b = v_j)``; ``logsumexp`` over dim 0 is 0."""
        return self.logit_a - torch.logsumexp(self.logit_a, 0, keepdim=True)

    @cached_property
    def cond_b(self) -> torch.Tensor:
        """``[K, K]``: ``log q_b(v_j | x_a = v_i)``; ``logsumexp`` over dim 1 is 0."""
        return self.logit_b - torch.logsumexp(self.logit_b, 1, keepdim=True)

    @cached_property
    def marg_a(self) -> torch.Tensor:
        """``[K]``: ``log q_a(v_i | a, b masked)``."""
        return torch.log_softmax(self.marg_logit_a, 0)

    @cached_property
    def marg_b(self) -> torch.Tensor:
        """``[K]``: ``log q_b(v_j | a, b masked)``."""
        return torch.log_softmax(self.marg_logit_b, 0)

    @cached_property
    def outside_mass(self) -> dict[str, float]:
        """Softmax mass outside ``V'`` (full output vocabulary): mean over the unary copies and in
        the both-masked copy. Zero when ``V'`` is the whole output vocabulary."""
        in_a = torch.logsumexp(self.logit_a, 0) - self.lse_full_a
        in_b = torch.logsumexp(self.logit_b, 1) - self.lse_full_b
        in_m = torch.stack([torch.logsumexp(self.marg_logit_a, 0), torch.logsumexp(self.marg_logit_b, 0)])
        in_m = in_m - self.lse_full_marg
        out = lambda t: float((-torch.expm1(t.clamp(max=0.0))).mean())  # noqa: E731
        return {"unary": 0.5 * (out(in_a) + out(in_b)), "marginal": out(in_m)}


def check_pair(mlm: MaskedLM, input_ids, a: int, b: int) -> tuple[torch.Tensor, int, int]:
    """Validate one pair: returns ``(ids [L'] without right padding, a, b)``; the tokens at ``a`` and ``b`` are
    ignored (they may hold the mask)."""
    mlm = reader_of(mlm)
    ids = as_row(input_ids)
    for name, p in (("a", a), ("b", b)):
        if isinstance(p, bool) or not hasattr(p, "__index__"):  # 3.5 was read as 3, "3" as 3
            raise PositionsError(f"{name} must be a token index (an int, 0-based, special tokens counted), got {p!r}")
    a, b = operator.index(a), operator.index(b)
    probe = ids.clone()
    L = len(ids)
    for p in (a, b):
        if not -L <= p < L:
            raise PositionsError(f"position {p} is outside a sequence of length {L}")
    a, b = a % L, b % L
    if a == b:
        raise PositionsError(f"a pair needs two different positions, got a = b = {a}")
    probe[[a, b]] = mlm.mask_id
    if bool(mlm.foreign(probe).any()):
        raise MLMProbError(
            f"token ids must lie in {mlm.id_range()} for this model, got {int(probe.min())}..{int(probe.max())}"
        )
    length = int(mlm.lengths(probe[None])[0])
    if max(a, b) >= length:
        raise PositionsError(f"position {max(a, b)} is padding (sequence length {length})")
    special = mlm.special_at(ids)
    for p in (a, b):  # the joint of a [CLS] slot is no residue's (the pairs drawn by the CLI are never there)
        if special[p]:
            raise PositionsError(f"position {p} holds the special token {int(ids[p])}; a pair needs residue positions")
    return ids[:length], a, b


def resolve_candidates(mlm: MaskedLM, candidates=None) -> torch.Tensor:
    """The candidate vocabulary ``V'`` as a LongTensor of distinct ids: ``candidates`` if given, else
    the model's ``proposal_ids`` (e.g. the 20 residues), else the whole output vocabulary."""
    if candidates is None:
        c = reader_of(mlm).proposal_ids
        return torch.arange(mlm.vocab_size) if c is None else c
    try:
        c = torch.as_tensor(candidates)
    except (TypeError, ValueError, RuntimeError):  # a string, a list of letters: torch's message names neither
        raise MLMProbError(
            f"candidates must be a non-empty 1-D list of token ids, got {type(candidates).__name__} {candidates!r:.40}"
        ) from None
    if c.dtype.is_floating_point or c.dtype == torch.bool or c.dim() != 1 or c.numel() == 0:
        raise MLMProbError(
            f"candidates must be a non-empty 1-D list of token ids, got shape {tuple(c.shape)}, dtype {c.dtype}"
        )
    c = c.long()
    if c.min() < 0 or c.max() >= mlm.vocab_size:
        raise MLMProbError(
            f"candidate ids must lie in the output vocabulary 0..{mlm.vocab_size - 1}, "
            f"got {int(c.min())}..{int(c.max())}"
        )
    if len(torch.unique(c)) != len(c):
        raise MLMProbError("candidates contain repeated token ids")
    return c


def _pair_copies(base: torch.Tensor, cands: torch.Tensor, a: int, b: int):
    """The ``2K + 1`` masked copies of pair ``(a, b)``, all one record (the pair): 0 both masked, 1..K ``b =
    v_1..v_K``, K+1..2K ``a = v_1..v_K``; and where each is read (``read_row``, ``read_col``): copy ``q`` at its
    masked position, then the both-masked copy again at ``b``."""
    K = len(cands)
    x = base.expand(2 * K + 1, len(base)).clone()
    x[1 : K + 1, b] = cands
    x[K + 1 :, a] = cands
    read_row = torch.cat([torch.arange(2 * K + 1), torch.zeros(1, dtype=torch.long)])
    return x, read_row, torch.tensor([a] * (K + 1) + [b] * (K + 1))


def pair_conditionals(mlm: MaskedLM, input_ids, a: int, b: int, candidates=None) -> PairConditionals:
    """Run the ``2K + 1`` masked copies of pair ``(a, b)`` in batches and keep what the joints need.

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> pc = pair_conditionals(m, torch.tensor([0, 0]), 0, 1)
    >>> pc.n_forward, pc.size
    (5, 2)
    >>> pc.cond_a.exp()          # column j: p(x_a | x_b = j)
    tensor([[0.2500, 0.3333],
            [0.7500, 0.6667]], dtype=torch.float64)
    """
    ids, a, b = check_pair(mlm, input_ids, a, b)
    cands = resolve_candidates(mlm, candidates)
    K, N = len(cands), 2 * len(cands) + 1
    base = ids.clone()
    base[[a, b]] = mlm.mask_id
    sel = torch.empty(N + 1, K, dtype=torch.float64)
    lse = torch.empty(N + 1, dtype=torch.float64)
    msk = torch.empty(N + 1, dtype=torch.float64) if 0 <= mlm.mask_id < mlm.vocab_size else None
    n_calls = 0
    for q, out in iter_read_logits(mlm, *_pair_copies(base, cands, a, b)):
        out = out.double()
        n_calls += 1
        lse[q] = torch.logsumexp(out, -1)
        sel[q] = out[:, cands]
        if msk is not None:
            msk[q] = out[:, mlm.mask_id]
    A, B, M = slice(1, K + 1), slice(K + 1, N), [0, N]  # the copies read at a (b = v_j), at b (a = v_i), both masked
    return PairConditionals(
        a=a,
        b=b,
        candidates=cands,
        gold=(int(ids[a]), int(ids[b])),
        logit_a=sel[A].T.contiguous(),
        logit_b=sel[B],
        marg_logit_a=sel[0],
        marg_logit_b=sel[N],
        lse_full_a=lse[A],
        lse_full_b=lse[B],
        lse_full_marg=lse[M],
        mask_id=int(mlm.mask_id),
        mask_logit_a=None if msk is None else msk[A],
        mask_logit_b=None if msk is None else msk[B],
        mask_logit_marg=None if msk is None else msk[M],
        n_forward=N,
        n_calls=n_calls,
    )


def topk_candidates(
    mlm: MaskedLM, input_ids, a: int, b: int, k: int, within: Sequence[int] | torch.Tensor | None = None
) -> torch.Tensor:
    """An explicit approximation for large vocabularies: the ``k`` ids with the highest ``max(q_a(v | a, b
    masked), q_b(v | a, b masked))`` (one forward pass), searched within ``within`` (default: the model's proposal
    ids or the whole vocabulary), sorted by id. The gold tokens are not added (outside: probability 0).

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> topk_candidates(m, torch.tensor([0, 0]), 0, 1, k=1).tolist()
    [1]
    """
    ids, a, b = check_pair(mlm, input_ids, a, b)
    pool = resolve_candidates(mlm, within)
    if k < 1:
        raise MLMProbError(f"top-k needs k >= 1, got {k}")
    if k >= len(pool):
        return pool.sort().values
    x = ids.clone()[None]
    x[0, [a, b]] = mlm.mask_id
    out = read_logits(mlm, x, torch.tensor([0, 0]), torch.tensor([a, b])).double()
    lp = torch.log_softmax(out, -1)[:, pool].max(0).values
    return pool[lp.topk(k).indices].sort().values

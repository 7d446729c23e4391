"""``score_variants``: variant-effect scores of a masked LM, every method from shared forward rows.

``w`` is the wild type, ``m`` a variant, ``S`` its sorted sites, ``log q_i(v | x)`` normalised over the whole output
vocabulary; higher = more likely than the wild type (docs/guides/variants.md). Each method sums
``log q_i(m_i | c) - log q_i(w_i | c)`` over ``S`` in its context ``c``:

- ``wt_marginals``: the unmasked wild type (1 row); ``masked_marginals``: ``w`` with ``i`` masked (one row per site,
  shared by every variant); ``masked_marginals_all``: ``w`` with all of ``S`` masked (1 row per variant);
  ``masked_marginals_mt``: ``m`` with ``i`` masked; ``mutant_marginals``: ``m`` unmasked;
- ``pll_delta``: ``PLL(m) - PLL(w)`` (``L`` rows per variant);
- ``hcb``: the Hammersley-Clifford-Besag path, context ``c_j`` with ``s_1..s_{j-1}`` mutant and ``s_j`` masked
  (``log p(m) / p(w)`` for conditionals of a joint);
- ``ag``: double mutants only (NaN otherwise, or when a token is not a candidate): the Arnold-Gokhale pair joint's
  log-ratio (``2K + 1`` rows per distinct pair);
- ``epistasis``: ``hcb - masked_marginals`` (0 for single mutants);
- ``chain``: the chain rule's log-ratio under the mixture of orders of the sites (:mod:`mlmprob.variants.chain`).

Rows are deduplicated by content across variants and methods (``rows.RowTable``)."""

from __future__ import annotations

import operator
from collections.abc import Sequence

import torch

from ..energies import as_row, token_scores
from ..errors import MLMProbError
from ..joints.conditionals import pair_conditionals
from ..joints.constructions import ag_joint
from ..models.protocol import MaskedLM
from ..models.reader import reader_of
from ..positions import TOKENS, default_mask
from .chain import chain_scores, plan_chain
from .rows import ForwardCache, RowTable
from .spec import VariantsSpec

PLL_CHUNK_TOKENS = 1 << 20  # mutant rows re-scored together by pll_delta (tokens)

Variant = tuple[tuple[int, int], ...]


def check_wild_type(mlm: MaskedLM, wild_type) -> torch.Tensor:
    """A 1-D LongTensor without right padding; ids in the vocabulary, no mask token."""
    mlm = reader_of(mlm)
    ids = as_row(wild_type, "wild_type")
    if bool(mlm.foreign(ids).any()):
        raise MLMProbError(f"wild_type token ids must lie in {mlm.id_range()}, got {int(ids.min())}..{int(ids.max())}")
    ids = ids[: int(mlm.lengths(ids[None])[0])]
    if (ids == mlm.mask_id).any():
        raise MLMProbError(f"wild_type holds the mask token at position {int((ids == mlm.mask_id).nonzero()[0])}")
    n = mlm.max_length
    if n is not None and len(ids) > n:
        raise MLMProbError(f"wild_type has {len(ids)} tokens; the model accepts at most {n}")
    return ids


def check_variants(mlm: MaskedLM, wild_type: torch.Tensor, mutants) -> list[Variant]:
    """Each variant as ``((position, token), ...)`` sorted by position, validated against the wild type."""
    free = default_mask(mlm, wild_type[None], TOKENS)[0].tolist()
    bad_tokens = reader_of(mlm).special_ids | {mlm.mask_id}
    out = []
    for n, v in enumerate(mutants):
        try:
            if any(isinstance(x, (bool, str, bytes, float)) for pair in v for x in pair):
                raise TypeError  # 3.5 was read as position 3, "3" as 3
            pairs = [(operator.index(p), operator.index(t)) for p, t in v]
        except (TypeError, ValueError):
            raise MLMProbError(f"variant {n} must be a list of (position, token_id) pairs, got {v!r}") from None
        if not pairs:
            raise MLMProbError(f"variant {n} has no mutation")
        seen = set()
        for p, t in pairs:
            if not 0 <= p < len(wild_type):
                raise MLMProbError(f"variant {n}: position {p} is outside the wild type (length {len(wild_type)})")
            if not free[p]:
                raise MLMProbError(f"variant {n}: position {p} holds a special token and cannot be mutated")
            if p in seen:
                raise MLMProbError(f"variant {n}: position {p} is mutated twice")
            seen.add(p)
            if not 0 <= t < mlm.vocab_size or t in bad_tokens:
                raise MLMProbError(f"variant {n}: token {t} at position {p} is not a token a sequence may hold")
        out.append(tuple(sorted(pairs)))
    return out


# each method read from RowTable rows -> the changes of the copy whose row scores site ``i`` (the ``j``-th of the
# sites ``S``) of variant ``v``
_CHANGES = {
    "wt_marginals": lambda S, j, i, v, mut, mask: (),
    "masked_marginals": lambda S, j, i, v, mut, mask: ((i, mask),),
    "masked_marginals_all": lambda S, j, i, v, mut, mask: [(s, mask) for s in S],
    "masked_marginals_mt": lambda S, j, i, v, mut, mask: [(s, mask if s == i else mut[s]) for s in S],
    "mutant_marginals": lambda S, j, i, v, mut, mask: v,
    "hcb": lambda S, j, i, v, mut, mask: [(s, mut[s]) for s in S[:j]] + [(i, mask)],
}


def _terms(table: RowTable, method: str, w: list[int], v: Variant, mask: int) -> list[tuple[int, float]]:
    """``(request, sign)`` pairs whose signed sum is ``method``'s score (one of :data:`_CHANGES`) of variant ``v``."""
    S = [p for p, _ in v]
    mut = dict(v)
    terms: list[tuple[int, float]] = []
    for j, i in enumerate(S):
        c = _CHANGES[method](S, j, i, v, mut, mask)
        terms.append((table.request(c, i, mut[i]), 1.0))
        terms.append((table.request(c, i, w[i]), -1.0))
    return terms


def _ag_scores(mlm: MaskedLM, wt: torch.Tensor, variants: list[Variant]) -> torch.Tensor:
    out = torch.full((len(variants),), float("nan"), dtype=torch.float64)
    joints: dict[tuple[int, int], tuple[torch.Tensor, dict[int, int]]] = {}
    for n, v in enumerate(variants):
        if len(v) != 2:
            continue
        (a, ma), (b, mb) = v
        if (a, b) not in joints:
            pc = pair_conditionals(mlm, wt, a, b)
            joints[(a, b)] = (ag_joint(pc).log_joint, pc.index_of)
        lj, idx = joints[(a, b)]
        cells = [idx.get(t) for t in (ma, mb, int(wt[a]), int(wt[b]))]
        if None not in cells:
            out[n] = lj[cells[0], cells[1]] - lj[cells[2], cells[3]]
    return out


def _pll_delta(
    mlm: MaskedLM, wt: torch.Tensor, variants: list[Variant], table: RowTable, mask: int
) -> tuple[torch.Tensor, list[int]]:
    """``PLL(m)`` for every variant (re-scored in chunks) and the requests summing to ``PLL(w)``."""
    positions = default_mask(mlm, wt[None], TOKENS)[0].nonzero()[:, 0].tolist()
    wt_terms = [table.request(((t, mask),), t, int(wt[t])) for t in positions]
    pll_m = torch.empty(len(variants), dtype=torch.float64)
    chunk = max(1, PLL_CHUNK_TOKENS // len(wt))
    for lo in range(0, len(variants), chunk):
        part = variants[lo : lo + chunk]
        x = wt.expand(len(part), len(wt)).clone()
        for k, v in enumerate(part):
            for p, t in v:
                x[k, p] = t
        pll_m[lo : lo + len(part)] = token_scores(mlm, x).pll
    return pll_m, wt_terms


def score_variants(
    mlm: MaskedLM,
    wild_type,
    mutants: Sequence[Sequence[tuple[int, int]]],
    spec: VariantsSpec | None = None,
    *,
    cache: ForwardCache | None = None,
    **overrides,
) -> dict[str, torch.Tensor]:
    """Scores of every variant by every method the settings ask for (see the module doc): ``{method: float64
    tensor [len(mutants)]}``, in the order asked. The settings: ``spec``, a :class:`~mlmprob.variants.spec.VariantsSpec`
    (default: the four default methods), its fields overridden by keyword: ``methods`` (None: all of ``METHODS``;
    ``chain`` on request), ``chain_orders`` and ``chain_seed`` (``variants.chain.site_orders``); ``offset`` is unused.

    ``wild_type``: token ids ``[L]`` (right padding is dropped); ``mutants``: variants, each a list of ``(position,
    token_id)``, positions indexing ``wild_type`` (special tokens count), distinct, never at a special token.
    ``cache`` (a ``ForwardCache``) keeps the wild-type rows across calls for one model and wild type (chunks).

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[[0.1, 0.2], [0.3, 0.4]], [[0.5, 0.6], [0.7, 0.8]]])))
    >>> s = score_variants(m, torch.tensor([0, 0, 0]), [[(0, 1)], [(0, 1), (2, 1)]], methods=["hcb", "epistasis"])
    >>> round(float(s["hcb"][1]), 4), round(float(torch.log(torch.tensor(0.6 / 0.1))), 4)  # log p(m)/p(w)
    (1.7918, 1.7918)
    >>> s["epistasis"][0].item()
    0.0
    """
    spec = VariantsSpec.of(spec, **overrides)
    methods, n_orders, seed = spec.methods, spec.chain_orders, spec.chain_seed
    wt = check_wild_type(mlm, wild_type)
    variants = check_variants(mlm, wt, mutants)
    if not variants:
        return {m: torch.empty(0, dtype=torch.float64) for m in methods}
    mask = int(mlm.mask_id)
    table = RowTable(mlm, wt)
    w = wt.tolist()
    needed = set(methods) | ({"hcb", "masked_marginals"} if "epistasis" in methods else set())
    row_methods = [m for m in _CHANGES if m in needed]
    plan = {
        m: [(n, req, sign) for n, v in enumerate(variants) for req, sign in _terms(table, m, w, v, mask)]
        for m in row_methods
    }
    chain_plan = plan_chain(table, w, variants, mask, n_orders, seed) if "chain" in methods else None
    pll_m = wt_terms = None
    if "pll_delta" in methods:
        pll_m, wt_terms = _pll_delta(mlm, wt, variants, table, mask)
    values = table.run(cache)
    scores: dict[str, torch.Tensor] = {}
    for m, terms in plan.items():
        s = torch.zeros(len(variants), dtype=torch.float64)
        if terms:
            idx, req, sign = (torch.tensor(c) for c in zip(*terms, strict=True))
            s.index_add_(0, idx, values[req] * sign.double())
        scores[m] = s
    if "epistasis" in methods:
        scores["epistasis"] = scores["hcb"] - scores["masked_marginals"]
    if pll_m is not None:
        scores["pll_delta"] = pll_m - values[torch.tensor(wt_terms, dtype=torch.long)].sum()
    if chain_plan is not None:
        scores["chain"] = chain_scores(values, chain_plan)
    if "ag" in methods:
        scores["ag"] = _ag_scores(mlm, wt, variants)
    return {m: scores[m] for m in methods}

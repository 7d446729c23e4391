"""Forward rows written as edits of one wild type, forwarded once per distinct content, batched.

Every variant score is a signed sum of terms ``log q_c(v | row)`` (float64, over the whole vocabulary) on rows that
are the wild type with a few positions changed. A row is named by its *edit*, the sorted ``(position, token)``
pairs where it differs from the wild type. ``RowTable`` forwards each distinct row once (each row a record of its
own, logits only at the read positions); ``ForwardCache`` keeps the wild type's and the single-masked rows (at most
``L + 1``) across chunks of one wild type."""

from __future__ import annotations

from collections.abc import Iterable

import torch

from ..batching import iter_read_logits
from ..errors import MLMProbError
from ..models.protocol import MaskedLM

Edit = tuple[tuple[int, int], ...]


class ForwardCache:
    """Full-vocabulary log-probabilities read from the wild-type rows (``edit`` empty, or one masked position), for
    one model and one wild type (pass it to every ``score_variants`` call on that pair); at most ``2 L`` vectors."""

    def __init__(self):
        self.wild_type: torch.Tensor | None = None
        self.model_id: int | None = None
        self.reads: dict[tuple[Edit, int], torch.Tensor] = {}

    def bind(self, mlm: MaskedLM, wild_type: torch.Tensor) -> None:
        if self.wild_type is None:
            self.wild_type, self.model_id = wild_type.clone(), id(mlm)
        elif id(mlm) != self.model_id or not torch.equal(self.wild_type, wild_type):
            raise MLMProbError("this ForwardCache belongs to another model or wild type; use one cache per pair")

    @staticmethod
    def keeps(edit: Edit, mask_id: int) -> bool:
        return len(edit) == 0 or (len(edit) == 1 and edit[0][1] == mask_id)


class RowTable:
    """Requested terms ``log q_col(token | wild type + edit)``; ``run`` computes them all."""

    def __init__(self, mlm: MaskedLM, wild_type: torch.Tensor):
        self.mlm, self.wt = mlm, wild_type
        self._wt_list = wild_type.tolist()
        self._rows: dict[Edit, int] = {}  # each distinct row's index, in order
        self._reads: dict[tuple[int, int], int] = {}  # each distinct (row, col) read's index, in order
        self._req_read: list[int] = []
        self._req_token: list[int] = []
        self.n_forward = 0  # rows forwarded by run()

    def edit(self, changes: Iterable[tuple[int, int]]) -> Edit:
        """The canonical name of the wild type with ``changes`` applied (wild-type tokens dropped)."""
        return tuple(sorted((p, t) for p, t in changes if self._wt_list[p] != t))

    def request(self, changes: Iterable[tuple[int, int]], col: int, token: int) -> int:
        """Index of the term ``log q_col(token | wild type with changes)`` in ``run()``'s output."""
        row = self._rows.setdefault(self.edit(changes), len(self._rows))
        self._req_read.append(self._reads.setdefault((row, col), len(self._reads)))
        self._req_token.append(token)
        return len(self._req_read) - 1

    @property
    def edits(self) -> tuple[Edit, ...]:
        """The distinct rows requested so far, by edit."""
        return tuple(self._rows)

    def run(self, cache: ForwardCache | None = None) -> torch.Tensor:
        """All requested terms, ``[n_requests]`` float64."""
        mlm, mask_id = self.mlm, self.mlm.mask_id
        out = torch.full((len(self._req_read),), float("nan"), dtype=torch.float64)
        if not self._req_read:
            return out
        if cache is not None:
            cache.bind(mlm, self.wt)
            if () in self._rows:  # read the unmasked wild type everywhere, once: later chunks need no row
                for col in range(len(self.wt)):
                    self._reads.setdefault((self._rows[()], col), len(self._reads))
        edits, pairs = list(self._rows), list(self._reads)  # by row index, by read index
        req_read, req_token = torch.tensor(self._req_read), torch.tensor(self._req_token)
        read_row, read_col = torch.tensor([r for r, _ in pairs]), torch.tensor([c for _, c in pairs])
        Q, L = len(read_row), len(self.wt)
        by_read = torch.argsort(req_read, stable=True)  # requests grouped by their read
        bounds = torch.searchsorted(req_read[by_read], torch.arange(Q + 1))
        slot = torch.empty(Q, dtype=torch.long)

        def fill(reads: torch.Tensor, lp: torch.Tensor) -> None:
            """Write the requests of ``reads`` (read indices), whose log-probabilities are ``lp``."""
            slot[reads] = torch.arange(len(reads))
            counts = bounds[reads + 1] - bounds[reads]
            first = torch.repeat_interleave(bounds[reads] - (counts.cumsum(0) - counts), counts)
            reqs = by_read[first + torch.arange(int(counts.sum()))]
            out[reqs] = lp[slot[req_read[reqs]], req_token[reqs]]

        need = torch.ones(Q, dtype=torch.bool)
        if cache is not None:
            hits, cached = [], []
            for k, (r, c) in enumerate(pairs):
                hit = cache.reads.get((edits[r], c))
                if hit is not None:
                    need[k] = False
                    hits.append(k)
                    cached.append(hit)
            if hits:
                fill(torch.tensor(hits), torch.stack(cached))
        reads = need.nonzero()[:, 0]
        rows = torch.unique(read_row[reads])  # rows with a read left to compute, sorted
        if len(rows) == 0:
            return out
        local = torch.full((len(edits),), -1, dtype=torch.long)
        local[rows] = torch.arange(len(rows))
        ids = self.wt.expand(len(rows), L).clone()
        for i, r in enumerate(rows.tolist()):
            for p, t in edits[r]:
                ids[i, p] = t
        # each distinct row is a record of its own: its logits never depend on the variants beside it
        groups = torch.arange(len(rows))
        for q, logits in iter_read_logits(mlm, ids, local[read_row[reads]], read_col[reads], groups=groups):
            done = reads[q]
            lp = logits.double()
            lp = lp - torch.logsumexp(lp, -1, keepdim=True)
            fill(done, lp)
            if cache is not None:
                for k, qq in enumerate(done.tolist()):
                    key = (edits[pairs[qq][0]], pairs[qq][1])
                    if ForwardCache.keeps(key[0], mask_id):
                        cache.reads[key] = lp[k].clone()
        self.n_forward += len(rows)
        return out

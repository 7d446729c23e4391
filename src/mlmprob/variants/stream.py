"""``VariantsJob``: scores chunks of variant rows of one wild type, the API behind ``mlmprob variants`` (picklable).

A wild type longer than the model's ``W`` residues is read, per variant, in the window of ``W`` residues centred on its
sites, ``start = clamp((first site + last site) // 2 - W // 2, 0, L - W)`` (0-based, named in the ``window`` column); a
variant whose sites span more than ``W`` residues is an error naming its row (or skipped with ``skip_invalid``)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..alphabet import AMINO_ACIDS
from ..errors import MLMProbError
from ..models.spec import ModelJob
from ..runtime.job import State
from .api import score_variants
from .mutations import Mutation, letter_ids, residue_positions
from .rows import ForwardCache
from .spec import DEFAULT_METHODS, SATURATE_METHODS, VariantsSpec  # noqa: F401 - the defaults, where the CLI reads them
from .units import VariantUnit, mutant_label, variant_of

MAX_WINDOWS = 32  # wild-type windows (token ids + ForwardCache) a worker keeps


def window_start(sites: Sequence[int], length: int, window: int | None) -> int:
    """0-based first residue of the window scoring a variant with these (0-based) sites."""
    if window is None or length <= window or not sites:
        return 0
    lo, hi = min(sites), max(sites)
    if hi - lo + 1 > window:
        raise MLMProbError(f"its mutated sites span {hi - lo + 1} residues; the model's window holds {window}")
    return min(max(0, (lo + hi) // 2 - window // 2), length - window)


class VariantsState(State):
    """What a worker keeps: the model's reader, the letters' token ids, and per window its ids and ForwardCache."""

    def __init__(self, mlm, wild_type: str):
        super().__init__(mlm)
        self.wild_type = wild_type
        self.to_id = letter_ids(mlm, AMINO_ACIDS)
        n = self.mlm.max_length
        self.window = None if n is None else n - (len(residue_positions(mlm, "A")[0]) - 1)
        if self.window is not None and self.window < 1:
            raise MLMProbError(f"the model's window ({n} tokens) holds no residue")
        self._windows: OrderedDict[int, tuple[torch.Tensor, torch.Tensor, ForwardCache]] = OrderedDict()
        self.get(0)  # the whole wild type (or its first window) and its cache, built once per worker

    def get(self, start: int) -> tuple[torch.Tensor, torch.Tensor, ForwardCache]:
        """``(token ids, token position of each residue, ForwardCache)`` of the window at ``start``."""
        hit = self._windows.get(start)
        if hit is None:
            span = self.wild_type if self.window is None else self.wild_type[start : start + self.window]
            ids, where = residue_positions(self.mlm, span)
            hit = self._windows[start] = (ids, where, ForwardCache())
            while len(self._windows) > MAX_WINDOWS:
                self._windows.popitem(last=False)
        self._windows.move_to_end(start)
        return hit


@dataclass(frozen=True)
class VariantsJob(ModelJob):
    """Everything a worker needs to score chunks of ``VariantUnit`` rows against ``wild_type`` (loaded by
    :class:`~mlmprob.models.spec.ModelJob`) with the settings ``spec`` (a
    :class:`~mlmprob.variants.spec.VariantsSpec`)."""

    wild_type: str
    spec: VariantsSpec = VariantsSpec()
    skip_invalid: bool = False

    def __post_init__(self):
        VariantsSpec.check(self.spec)

    def prepare(self, mlm) -> VariantsState:
        """A worker state around a loaded model: its reader with the run's budget and the wild type's first window."""
        return VariantsState(self.model_spec.reader(mlm), self.wild_type)

    def run(self, state: VariantsState, units: Sequence[VariantUnit]) -> tuple[list[dict], list[tuple[str, str]]]:
        """Score one chunk: result rows (in input order) and the ``(id, reason)`` of the rows skipped."""
        spec = self.spec
        skipped: list[tuple[str, str]] = []
        todo: list[tuple[VariantUnit, tuple[Mutation, ...], int]] = []
        for u in units:
            try:
                muts = variant_of(u, self.wild_type, spec.offset)
                try:
                    start = window_start([m.index for m in muts], len(self.wild_type), state.window)
                except MLMProbError as e:
                    raise MLMProbError(f"row {u.row} ({u.id!r}): {e}") from None
            except MLMProbError as e:
                if not self.skip_invalid:
                    raise
                skipped.append((u.id, str(e)))
                continue
            todo.append((u, muts, start))
        values: dict[int, dict[str, float]] = {}
        for start in dict.fromkeys(s for _, _, s in todo):
            ids, where, cache = state.get(start)
            group = [(k, muts) for k, (_, muts, s) in enumerate(todo) if s == start and muts]
            if not group:
                continue
            variants = [[(int(where[m.index - start]), state.to_id[m.mt]) for m in muts] for _, muts in group]
            scores = score_variants(state.mlm, ids, variants, spec, cache=cache)
            for j, (k, _) in enumerate(group):
                values[k] = {m: float(scores[m][j]) for m in spec.methods}
        wild = {m: float("nan") if m == "ag" else 0.0 for m in spec.methods}  # no mutation: every sum is empty
        rows = [
            {
                "id": u.id,
                "mutant": mutant_label(muts, spec.offset),
                "n_mutations": len(muts),
                "window": start + spec.offset,
                **values.get(k, wild),
            }
            for k, (u, muts, start) in enumerate(todo)
        ]
        return rows, skipped

"""Saturation mutagenesis: every single mutant of a wild type, scored by ``wt_marginals`` and ``masked_marginals`` in
``L + 1`` forward rows (the unmasked wild type, and one row per position with that position masked), as a ``positions
x candidates`` table, with CSV and heatmap writers."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import MLMProbError
from ..joints.conditionals import resolve_candidates
from ..models.protocol import MaskedLM
from ..models.reader import Reader, reader_of
from ..positions import TOKENS, default_mask
from .api import check_wild_type
from .rows import RowTable

SCORES = ("wt_marginals", "masked_marginals")


@dataclass(frozen=True)
class Saturation:
    """``wt_marginals[p, k]`` / ``masked_marginals[p, k]``: the score of the single mutant putting ``candidates[k]``
    at ``positions[p]`` (token indices, 0-based, special tokens counted). ``numbers``: the mutant strings' residue
    numbers (``offset`` + index among the non-special positions); ``sequence_numbers``: the 1-based residue numbers
    as ``--positions`` and the app count them (whatever ``offset``); ``letters`` / ``wt_letters``: the decoded
    tokens; ``n_forward``: the forward rows used."""

    positions: torch.Tensor
    numbers: torch.Tensor
    sequence_numbers: torch.Tensor
    wild_type: torch.Tensor
    candidates: torch.Tensor
    letters: tuple[str, ...]
    wt_letters: tuple[str, ...]
    wt_marginals: torch.Tensor
    masked_marginals: torch.Tensor
    n_forward: int

    def mutant(self, p: int, k: int) -> str:
        """``A23C``-style name of the mutant in cell ``(p, k)``."""
        return f"{self.wt_letters[p]}{int(self.numbers[p])}{self.letters[k]}"


def _label(mlm: Reader, token: int) -> str:
    text = mlm.decode([token]).strip() if mlm.has_text else ""
    return text or str(token)


def saturate(
    mlm: MaskedLM, wild_type, positions: Sequence[int] | None = None, candidates=None, *, offset: int = 1
) -> Saturation:
    """Score every single mutant at ``positions`` (default: every non-special position) to every token of
    ``candidates`` (default: the model's proposal ids, e.g. the 20 residues, else every non-special token).

    >>> import torch
    >>> from mlmprob import LookupMLM
    >>> m = LookupMLM(vocab_size=3, length=4)
    >>> s = saturate(m, torch.tensor([0, 1, 2, 0]))
    >>> s.masked_marginals.shape, s.n_forward, s.numbers.tolist()   # 4 masked rows + the wild type
    (torch.Size([4, 3]), 5, [1, 2, 3, 4])
    """
    mlm = reader_of(mlm)
    wt = check_wild_type(mlm, wild_type)
    free = default_mask(mlm, wt[None], TOKENS)[0]
    if positions is None:
        pos = free.nonzero()[:, 0]
    else:
        pos = torch.as_tensor(list(positions), dtype=torch.long)
        if pos.numel() == 0 or pos.dim() != 1:
            raise MLMProbError("positions must be a non-empty list of token positions")
        if pos.min() < 0 or pos.max() >= len(wt):
            raise MLMProbError(
                f"position {int(pos.max() if pos.max() >= len(wt) else pos.min())} is outside "
                f"the wild type (length {len(wt)})"
            )
        if not free[pos].all():
            raise MLMProbError(f"position {int(pos[~free[pos]][0])} holds a special token")
        if len(torch.unique(pos)) != len(pos):
            raise MLMProbError("positions repeat")
    if candidates is None and mlm.proposal_ids is None:
        bad = mlm.special_ids | {mlm.mask_id}
        cands = torch.tensor([v for v in range(mlm.vocab_size) if v not in bad], dtype=torch.long)
    else:
        cands = resolve_candidates(mlm, candidates)
    mask = int(mlm.mask_id)
    table = RowTable(mlm, wt)
    w = wt.tolist()
    reqs = [
        [(table.request((), p, c), table.request(((p, mask),), p, c)) for c in cands.tolist()] for p in pos.tolist()
    ]
    ref = [(table.request((), p, w[p]), table.request(((p, mask),), p, w[p])) for p in pos.tolist()]
    values = table.run()
    r, f = torch.tensor(reqs), torch.tensor(ref)  # [P, K, 2], [P, 2]
    scores = values[r] - values[f][:, None, :]
    index = torch.cumsum(free.long(), 0) - 1
    wt_tok = wt[pos]
    return Saturation(
        positions=pos,
        numbers=index[pos] + offset,
        sequence_numbers=index[pos] + 1,
        wild_type=wt_tok,
        candidates=cands,
        letters=tuple(_label(mlm, c) for c in cands.tolist()),
        wt_letters=tuple(_label(mlm, c) for c in wt_tok.tolist()),
        wt_marginals=scores[..., 0],
        masked_marginals=scores[..., 1],
        n_forward=table.n_forward,
    )


def write_csv(sat: Saturation, path: str | Path) -> Path:
    """One row per single mutant (wild-type tokens left out): ``mutant, position, residue, token_index, wt, mt,
    wt_marginals, masked_marginals``. ``position`` is the 1-based residue number in the wild type, as
    ``--positions`` and the app count it; ``residue`` the number of the mutant string (``--offset``: the same
    with the default 1); ``token_index`` the token index (0-based, special tokens counted, as
    ``saturate(positions=)`` takes it); see docs/positions.md."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["mutant", "position", "residue", "token_index", "wt", "mt", *SCORES])
        for p in range(len(sat.positions)):
            for k in range(len(sat.candidates)):
                if int(sat.candidates[k]) == int(sat.wild_type[p]):
                    continue
                where = [int(sat.sequence_numbers[p]), int(sat.numbers[p]), int(sat.positions[p])]
                scores = [repr(float(getattr(sat, s)[p, k])) for s in SCORES]
                out.writerow([sat.mutant(p, k), *where, sat.wt_letters[p], sat.letters[k], *scores])
    return path


def heatmap_figure(
    sat: Saturation, score: str = "masked_marginals", *, title: str | None = None, compact: bool = False
):
    """The saturation map as a matplotlib figure (closed; draw or save it): candidates down, residues across, red =
    more likely than the wild type, blue = less, dots on the wild-type cells. ``compact``: a page-sized figure (at
    most 16 inches wide) for the web app."""
    if score not in SCORES:
        raise MLMProbError(f"unknown saturation score {score!r}; use one of {', '.join(SCORES)}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = getattr(sat, score).T.numpy()  # [K, P]
    K, P = grid.shape
    span = float(abs(grid).max()) or 1.0
    width = min(max(6.0, (0.11 if compact else 0.16) * P + 1.5), 16.0 if compact else 60.0)
    fig, ax = plt.subplots(figsize=(width, 0.16 * K + 1.3 if compact else max(3.0, 0.2 * K + 1.2)))
    im = ax.imshow(grid, cmap="RdBu_r", vmin=-span, vmax=span, aspect="auto", interpolation="nearest")
    is_wt = (sat.candidates[:, None] == sat.wild_type[None, :]).nonzero().tolist()
    if is_wt:
        ky, px = zip(*is_wt, strict=True)
        ax.scatter(px, ky, s=4 if compact else 6, c="black", marker="o", linewidths=0)
    step = max(1, P // (50 if compact else 60))
    ax.set_xticks(range(0, P, step))
    ax.set_xticklabels(
        [f"{sat.wt_letters[p]}{int(sat.numbers[p])}" for p in range(0, P, step)], rotation=90, fontsize=6
    )
    ax.set_yticks(range(K))
    ax.set_yticklabels(sat.letters, fontsize=6 if compact else 7)
    if not compact:
        ax.set_xlabel("residue")
        ax.set_ylabel("mutant")
        ax.set_title(title or score)
    fig.colorbar(im, ax=ax, fraction=0.02, pad=0.01, label=score if compact else "log q(mt) - log q(wt)")
    if compact:
        fig.tight_layout()
    plt.close(fig)
    return fig


def write_heatmap(sat: Saturation, path: str | Path, score: str = "masked_marginals", title: str | None = None) -> Path:
    """A PNG heatmap (``heatmap_figure``) of one score of a saturation."""
    fig = heatmap_figure(sat, score, title=title)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path

"""Fitting the one-pass correction: the exact masked conditionals and unmasked hidden states of a calibration set
(:func:`collect`), then ``KL(q_exact || q_corrected)`` minimised by Adam on all but a held-out share of the
sequences (:func:`fit_correction`); the held-out KL before and after is stored with it."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ..batching import iter_masked_logits
from ..energies import check_input_ids, resolve_positions
from ..errors import MLMProbError
from ..models.reader import name_of, reader_of
from ..settings import check_count
from .correction import Correction, fingerprint
from .estimate import unmasked_hidden


@dataclass(frozen=True)
class CalibrationSet:
    """Per scored position: hidden ``[N, H]``, input embedding ``[N, H]``, exact log-probs ``[N, V]``, the
    token ``[N]`` and its sequence's index ``[N]``."""

    hidden: torch.Tensor
    emb: torch.Tensor
    target: torch.Tensor
    token: torch.Tensor
    seq: torch.Tensor


@dataclass(frozen=True)
class CalibrationResult:
    correction: Correction
    heldout_kl_before: float
    heldout_kl_after: float
    seconds: float


def collect(
    mlm, sequences: Sequence[str], *, chunk: int = 16, progress: Callable[[int], None] | None = None
) -> CalibrationSet:
    """Exact masked conditionals and unmasked hidden states of every scored position of ``sequences``."""
    mlm = reader_of(mlm)
    parts = []
    for start in range(0, len(sequences), chunk):
        ids = check_input_ids(mlm, mlm.encode(list(sequences[start : start + chunk])).input_ids)
        sel = resolve_positions(mlm, ids, None)
        rows, cols, hidden, emb = unmasked_hidden(mlm, ids, sel)
        target = torch.empty(len(rows), mlm.vocab_size)
        for idx, logits in iter_masked_logits(mlm, ids, rows, cols):
            target[idx] = torch.log_softmax(logits.float(), dim=-1)
        parts.append((hidden, emb, target, ids[rows, cols], rows + start))
        if progress is not None:
            progress(min(chunk, len(sequences) - start))
    return CalibrationSet(*(torch.cat(x) for x in zip(*parts, strict=True)))


def _kl(mlm, c: Correction, data: CalibrationSet, idx: torch.Tensor) -> torch.Tensor:
    logq = torch.log_softmax(mlm.head_logits(c.apply(data.hidden[idx], data.emb[idx])), dim=-1)
    p = data.target[idx]
    return (p.exp() * (p - logq)).sum(-1).mean()


#: The most Adam steps a fit may take (the default is 400): a larger number is a typing mistake that would run for
#: days before it said anything.
MAX_STEPS = 100_000


def check_steps(steps) -> int:
    """Refuse a number of fit steps outside ``1..MAX_STEPS`` (before any sequence is read)."""
    return check_count("steps", steps, MAX_STEPS, "each is an Adam step over a minibatch")


def fit_correction(
    mlm,
    data: CalibrationSet,
    *,
    steps: int = 400,
    lr: float = 2e-3,
    batch: int = 512,
    holdout: float = 0.2,
    weight_decay: float = 1e-4,
    generator: torch.Generator | None = None,
) -> tuple[Correction, float, float]:
    """Fit ``U, M, b`` by Adam on ``KL(exact || corrected)``; returns the correction and the held-out KL
    (mean nats per position) before and after. ``holdout`` is the share of *sequences* kept out."""
    check_steps(steps)
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    seqs = data.seq.unique()
    n_out = int(round(holdout * len(seqs))) if len(seqs) > 1 else 0
    out_seqs = seqs[torch.randperm(len(seqs), generator=g)[:n_out]]
    is_out = torch.isin(data.seq, out_seqs)
    train, test = (~is_out).nonzero()[:, 0], is_out.nonzero()[:, 0]
    if len(train) == 0:
        raise MLMProbError("no calibration positions left to fit on")
    H = data.hidden.shape[1]
    c = Correction.identity(H)
    for p in mlm.model.parameters():
        p.requires_grad_(False)
    for t in c.parameters():
        t.requires_grad_(True)
    opt = torch.optim.Adam(c.parameters(), lr=lr, weight_decay=weight_decay)
    check = test if len(test) else train
    with torch.no_grad():
        before = float(_kl(mlm, c, data, check))
    for step in range(steps):
        idx = train[torch.randint(len(train), (min(batch, len(train)),), generator=g)]
        with torch.enable_grad():
            loss = _kl(mlm, c, data, idx)
            opt.zero_grad()
            loss.backward()
        opt.step()
        for group in opt.param_groups:  # cosine decay
            group["lr"] = lr * 0.5 * (1 + math.cos(math.pi * (step + 1) / steps))
    for t in c.parameters():
        t.requires_grad_(False)
    with torch.no_grad():
        after = float(_kl(mlm, c, data, check))
    return c, before, after


def calibrate(
    mlm,
    sequences: Sequence[str],
    *,
    steps: int = 400,
    seed: int = 0,
    source: str = "",
    progress: Callable[[int], None] | None = None,
) -> CalibrationResult:
    """Fit the one-pass correction of ``mlm`` on ``sequences`` (of the user's domain), described in its info."""
    check_steps(steps)
    if not sequences:
        raise MLMProbError("calibrate needs at least one sequence")
    mlm = reader_of(mlm)
    t0 = time.perf_counter()
    data = collect(mlm, sequences, progress=progress)
    c, before, after = fit_correction(mlm, data, steps=steps, generator=torch.Generator().manual_seed(seed))
    c.info = {
        "model": name_of(mlm),
        "hidden_size": c.hidden_size,
        "vocab_size": int(mlm.vocab_size),
        "fingerprint": fingerprint(mlm),
        "dtype": str(mlm.dtype).replace("torch.", ""),
        "calibration": {
            "source": source,
            "sequences": len(sequences),
            "positions": int(len(data.seq)),
            "steps": steps,
            "seed": seed,
            "heldout_share": 0.2,
        },
        "heldout_kl_nats_per_position": {"unmasked": round(before, 5), "corrected": round(after, 5)},
        "form": "h' = h + h U + e(x) M + b; q = softmax(head(h'))",
    }
    return CalibrationResult(c, before, after, time.perf_counter() - t0)

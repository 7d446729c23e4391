"""Checked at load, not assumed: a short probe of the two shortcuts an ``HFMaskedLM`` takes.

1. **The head shortcut** (the LM head only at the read positions), against the plain model's full forward: a
   family that applies more after the head module (BART's ``final_logits_bias``, ...) reads full logits from then
   on (no head shortcut, no fused forward), said once on stderr.
2. **Padding**: a short row alone and padded beside a longer one; a family that ignores the attention mask (FNet,
   Funnel, ...) is marked ``pads_safely = False`` and never padded (:func:`mlmprob.models.forward.plan_groups`).

A model that still disagrees with its own plain forward is refused (``MLMProbError``)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import torch

from ..errors import MLMProbError

TOL = 1e-4  # float32 agreement; lower precisions are probed in float32 terms (see ``tolerance``)


@dataclass
class ProbeResult:
    """The largest logit difference of each check (None: not applicable) and what was changed (``notes``)."""

    architecture: str
    head: float | None = None
    padding: float | None = None
    notes: list[str] = field(default_factory=list)


def architecture(mlm) -> str:
    model = getattr(mlm, "model", None)
    return type(model).__name__ if model is not None else type(mlm).__name__


def tolerance(mlm) -> float:
    """Logit agreement expected in the model's dtype."""
    return TOL if getattr(mlm, "dtype", torch.float32) in (torch.float32, torch.float64) else 0.1


def probe_ids(mlm, n: int = 7) -> torch.Tensor:
    """A short row ``[1, L]`` laid out as real inputs: begin token, ``n`` ordinary ids spread over the vocabulary,
    end token."""
    hf = getattr(getattr(mlm, "tokenizer", None), "hf", None)
    special = set(mlm.special_ids) | {mlm.mask_id, mlm.pad_id}
    proposal = getattr(mlm, "proposal_ids", None)
    pool = proposal.tolist() if proposal is not None else [i for i in range(mlm.vocab_size) if i not in special]
    pool = [i for i in pool if i not in special] or [i for i in range(mlm.vocab_size) if i != mlm.mask_id]
    step = max(1, len(pool) // (n + 1))
    body = [pool[(k * step + 1) % len(pool)] for k in range(n)]
    begin = None if hf is None else (hf.cls_token_id if hf.cls_token_id is not None else hf.bos_token_id)
    end = None if hf is None else (hf.sep_token_id if hf.sep_token_id is not None else hf.eos_token_id)
    ends = [x for x in (begin, end) if x is not None]
    limit = getattr(mlm, "max_length", None)  # a model trained on short rows: a probe that fits it
    if limit is not None and len(body) + len(ends) > limit:
        body = body[: max(1, limit - len(ends))]
    ids = ([begin] if begin is not None else []) + body + ([end] if end is not None else [])
    return torch.tensor([ids], dtype=torch.long)


@torch.inference_mode()
def plain_logits(mlm, ids: torch.Tensor) -> torch.Tensor:
    """The plain transformers forward of one unpadded row ``[1, L]``: logits ``[L, V]`` (float32, CPU)."""
    return mlm.model(input_ids=ids.to(next(mlm.model.parameters()).device)).logits[0].float().cpu()


def _read(mlm, ids: torch.Tensor, row: int, cols) -> torch.Tensor:
    cols = torch.as_tensor(list(cols), dtype=torch.long)
    return mlm.logits_at(ids, torch.full_like(cols, row), cols).float()


def _head_gap(mlm, ids: torch.Tensor) -> float:
    masked = ids.clone()
    masked[0, ids.shape[1] // 2] = mlm.mask_id
    want = plain_logits(mlm, masked)[: ids.shape[1]]  # Perceiver decodes all its positions
    try:
        got = _read(mlm, masked, 0, range(ids.shape[1]))
    except Exception:  # noqa: BLE001 - a shortcut that cannot even run is a wrong shortcut
        return float("inf")
    return float((got - want).abs().max()) if got.shape == want.shape else float("inf")


def _padding_gap(mlm, ids: torch.Tensor) -> float | None:
    if mlm.pad_id is None or ids.shape[1] < 4:
        return None  # nothing to pad, or no row short enough to pad beside this one
    short = ids[:, : max(3, ids.shape[1] - 3)].clone()
    short[0, -1] = ids[0, -1]  # keep the end token
    short[0, 1] = mlm.mask_id
    batch = torch.full((2, ids.shape[1]), mlm.pad_id, dtype=torch.long)
    batch[0] = ids[0]
    batch[1, : short.shape[1]] = short[0]
    cols = range(short.shape[1])
    return float((_read(mlm, short, 0, cols) - _read(mlm, batch, 1, cols)).abs().max())


def check_at_load(mlm, *, quiet: bool = False) -> ProbeResult:
    """Probe ``mlm`` (an ``HFMaskedLM``, or a wrapper with one as ``inner``), fall back where a shortcut is
    wrong, and refuse (``MLMProbError``) a model that still disagrees. Returns what was measured (also kept
    as the model's ``probe``)."""
    inner = getattr(mlm, "inner", mlm)
    if getattr(inner, "model", None) is None or not hasattr(inner, "logits_at"):
        return ProbeResult(architecture(inner))
    arch, tol, ids = architecture(inner), tolerance(inner), probe_ids(inner)
    res = ProbeResult(arch)
    try:
        res.head = _head_gap(inner, ids)
        if res.head > tol and getattr(inner, "head_shortcut", False):
            inner.read_full_logits()
            res.notes.append(
                f"{arch}: its LM head module is not the whole head (logits differ by {res.head:.3g}); "
                "reading full logits"
            )
            res.head = _head_gap(inner, ids)
        if res.head > tol:
            raise MLMProbError(
                f"{arch}: mlmprob's reading of this model differs from its own forward by "
                f"{res.head:.3g} in the logits; refusing to run it wrong"
            )
        res.padding = _padding_gap(inner, ids)
        if res.padding is not None and res.padding > tol:
            inner.pads_safely = False
            res.notes.append(
                f"{arch}: padding a row changes its outputs (by {res.padding:.3g}: the attention "
                "mask is not honoured); rows are forwarded unpadded"
            )
    except MLMProbError:
        raise
    except Exception as e:  # noqa: BLE001 - a model that cannot run the probe cannot be trusted either
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise MLMProbError(f"{arch}: the load-time check of this model failed ({type(e).__name__}: {first})") from None
    inner.probe = res
    if not quiet:
        for note in res.notes:
            print(f"note: {note}", file=sys.stderr)
    return res


@torch.inference_mode()
def unpadded_logits(mlm, ids: torch.Tensor, forward) -> torch.Tensor:
    """``forward`` (ids ``[1, l]`` -> logits ``[1, l, V]``) of each row of ``ids`` alone, trimmed of its right
    padding; logits ``[B, L, V]`` (zero at padding). For models that do not honour the attention mask."""
    from .reader import reader_of

    lengths = reader_of(mlm).lengths(ids.cpu()).tolist()
    out = None
    for b, n in enumerate(lengths):
        part = forward(ids[b : b + 1, : max(n, 1)])
        if out is None:
            out = torch.zeros(ids.shape[0], ids.shape[1], part.shape[-1], dtype=part.dtype, device=part.device)
        out[b, : part.shape[1]] = part[0]
    assert out is not None  # ids has at least one row
    return out

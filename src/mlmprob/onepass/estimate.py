"""One-pass PLL: every masked conditional estimated from one unmasked pass per sequence, with the model's fitted
correction (``method="one_pass"``) or as is (``"unmasked"``: the token visible, biased high; for comparison)."""

from __future__ import annotations

import torch

from ..batching import DEFAULT_BATCH_TOKENS, read_logits
from ..energies import TokenScores, as_input_ids, resolve_positions
from ..errors import MLMProbError
from ..models.reader import Reader, reader_of
from .correction import find_correction
from .spec import METHODS, OnePassSpec  # noqa: F401 - METHODS: the package exports it from here


def reader(mlm, ids: torch.Tensor) -> Reader:
    """The reader whose ``hidden_at`` reads ``ids``: the model's, or that of the model inside a window when every
    row fits the window (longer rows would need windowed hidden states, not offered)."""
    r = reader_of(mlm)
    model = r.wrapped
    if r.window is not None and r.core is not model and "hidden_at" in r.missing_hidden:
        longest = int(r.lengths(ids).max()) if ids.numel() else 0
        if longest > r.window:
            raise MLMProbError(
                f"the one-pass PLL reads sequences of at most {r.window} tokens with this model; "
                f"got {longest} (use the exact PLL)"
            )
        model = r.core
    r = reader_of(model)  # hidden reads take the model's own forward budget (HiddenView)
    if r.missing_hidden:
        raise MLMProbError(
            f"the one-pass PLL needs a model wrapper with {', '.join(r.missing_hidden)} "
            f"(Hugging Face models loaded by load_mlm have them); {type(r.wrapped).__name__} has not"
        )
    return r


class HiddenView:
    """A model's reader seen through the forward primitive's eyes with its final hidden states as the "logits":
    ``logits_at`` is the model's ``hidden_at``, so hidden reads get the primitive's sub-batching, batch
    independence and out-of-memory handling."""

    def __init__(self, r: Reader):
        self.inner = r
        self.mask_id, self.pad_id, self.device = r.mask_id, r.pad_id, r.device
        self.batch_tokens = r.batch_tokens or DEFAULT_BATCH_TOKENS  # hidden reads: the model's budget
        self.vocab_size = int(r.model.config.hidden_size)

    def logits_at(self, input_ids, rows, cols):
        return self.inner.hidden_at(input_ids, rows, cols)

    def logits(self, input_ids):  # pragma: no cover - the primitive reads through logits_at
        raise MLMProbError("HiddenView reads hidden states through logits_at only")


def unmasked_hidden(mlm, ids: torch.Tensor, sel: torch.Tensor):
    """``(rows, cols, hidden [N, H], emb [N, H])`` at the selected positions of one unmasked pass per row
    (each row its own record: its reads never share a sub-batch with another row's)."""
    r = reader(mlm, ids)
    rows, cols = sel.nonzero(as_tuple=True)
    hidden = read_logits(HiddenView(r), ids, rows, cols, groups=torch.arange(ids.shape[0]))
    return rows, cols, hidden, r.input_embedding(ids[rows, cols])


def one_pass_token_scores(mlm, input_ids, positions=None, spec: OnePassSpec | None = None, **overrides) -> TokenScores:
    """Per-token estimates of ``log q_t(x_t | x with t masked)`` from one unmasked pass (``TokenScores``), with the
    settings ``spec`` (:class:`~mlmprob.onepass.spec.OnePassSpec`; keywords override its fields): ``method``
    ``"one_pass"`` or ``"unmasked"``; ``correction`` (a :class:`Correction` or a path) overrides the one found for
    the model."""
    spec = OnePassSpec.of(spec, **overrides)
    mlm = reader_of(mlm)
    ids = as_input_ids(mlm, input_ids)
    sel = resolve_positions(mlm, ids, positions)
    c = find_correction(mlm, spec.correction) if spec.method == "one_pass" else None
    lp = torch.zeros(ids.shape, dtype=torch.float64)
    raw = torch.zeros(ids.shape, dtype=torch.float64)
    if sel.any():
        rows, cols, hidden, emb = unmasked_hidden(mlm, ids, sel)
        with torch.inference_mode():
            h = hidden if c is None else c.apply(hidden, emb)
            logits = reader(mlm, ids).head_logits(h).double()
        tgt = logits.gather(1, ids[rows, cols][:, None])[:, 0]
        raw[rows, cols] = tgt
        lp[rows, cols] = tgt - torch.logsumexp(logits, dim=-1)
    return TokenScores(lp, raw, sel)

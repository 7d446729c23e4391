"""One-pass PLL: every masked conditional estimated from one unmasked forward pass (see ``correction``).

``method="one_pass"`` applies the model's fitted :class:`~mlmprob.onepass.correction.Correction`;
``method="unmasked"`` reads the unmasked pass as is (``log q(x_t | x)``, the token visible: biased high,
given for comparison). Both cost one forward pass per sequence instead of one per scored position.
"""

from __future__ import annotations

import torch

from ..batching import DEFAULT_BATCH_TOKENS, read_logits
from ..energies import TokenScores, check_input_ids, resolve_positions
from ..errors import MLMProbError
from ..models.protocol import lengths_of
from ..models.reader import reader_of
from .correction import find_correction
from .spec import METHODS, OnePassSpec  # noqa: F401 - METHODS: the package exports it from here


def _need(mlm, *names):
    missing = [n for n in names if not hasattr(type(mlm), n)]
    if missing:
        raise MLMProbError(
            f"the one-pass PLL needs a model wrapper with {', '.join(missing)} "
            f"(Hugging Face models loaded by load_mlm have them); {type(mlm).__name__} has not"
        )


def reader(mlm, ids: torch.Tensor):
    """The wrapper whose ``hidden_at`` reads ``ids``: ``mlm``, or the model inside a ``WindowedMLM`` when
    every row fits its window (longer rows would need windowed hidden states, not offered)."""
    r = reader_of(mlm)
    mlm = r.wrapped
    inner, window = r.core if r.core is not mlm else None, r.window
    if inner is not None and window is not None and not hasattr(type(mlm), "hidden_at"):
        longest = int(lengths_of(mlm, ids).max()) if ids.numel() else 0
        if longest > window:
            raise MLMProbError(
                f"the one-pass PLL reads sequences of at most {window} tokens with this model; "
                f"got {longest} (use the exact PLL)"
            )
        mlm = inner
    _need(mlm, "hidden_at", "head_logits", "input_embedding")
    return mlm


class HiddenView:
    """``mlm`` seen through the forward primitive's eyes with its final hidden states as the "logits":
    ``logits_at`` is the wrapper's ``hidden_at``, so hidden reads get the primitive's sub-batching, batch
    independence and out-of-memory handling."""

    def __init__(self, mlm):
        self.inner = mlm
        r = reader_of(mlm)
        self.mask_id, self.pad_id, self.device = r.mask_id, r.pad_id, r.device
        self.batch_tokens = r.batch_tokens or DEFAULT_BATCH_TOKENS  # hidden reads: the model's budget
        self.vocab_size = int(mlm.model.config.hidden_size)

    def logits_at(self, input_ids, rows, cols):
        return self.inner.hidden_at(input_ids, rows, cols)

    def logits(self, input_ids):  # pragma: no cover - the primitive reads through logits_at
        raise MLMProbError("HiddenView reads hidden states through logits_at only")


def unmasked_hidden(mlm, ids: torch.Tensor, sel: torch.Tensor):
    """``(rows, cols, hidden [N, H], emb [N, H])`` at the selected positions of one unmasked pass per row
    (each row its own record: its reads never share a sub-batch with another row's)."""
    mlm = reader(mlm, ids)
    rows, cols = sel.nonzero(as_tuple=True)
    hidden = read_logits(HiddenView(mlm), ids, rows, cols, groups=torch.arange(ids.shape[0]))
    return rows, cols, hidden, mlm.input_embedding(ids[rows, cols])


def one_pass_token_scores(mlm, input_ids, positions=None, spec: OnePassSpec | None = None, **overrides) -> TokenScores:
    """Per-token estimates of ``log q_t(x_t | x with t masked)`` from one unmasked pass (``TokenScores``), with the
    settings ``spec`` (:class:`~mlmprob.onepass.spec.OnePassSpec`; keywords override its fields): ``method``
    ``"one_pass"`` or ``"unmasked"``; ``correction`` (a :class:`Correction` or a path) overrides the one found for
    the model.
    """
    spec = OnePassSpec.of(spec, **overrides)
    ids = check_input_ids(mlm, input_ids)
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

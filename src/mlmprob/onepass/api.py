"""``mlmprob.pll``: exact PLL (:func:`mlmprob.energies.pll`) or, on request, its one-pass estimate."""

from __future__ import annotations

import torch

from ..energies import pll as exact_pll
from ..errors import MLMProbError
from .estimate import one_pass_token_scores
from .spec import OnePassSpec, PLLSpec


def pll(mlm, input_ids, positions=None, spec: PLLSpec | None = None, *, word_ids=None, **overrides) -> torch.Tensor:
    """Log pseudo-likelihood ``sum_t log q_t(x_t | x with t masked)`` per sequence, ``[B]`` (float64), with the
    settings ``spec`` (:class:`~mlmprob.onepass.spec.PLLSpec`; keywords override its fields). ``input_ids``: token ids
    ``[B, L]``, or a sequence or a list of sequences, encoded by the model's own tokenizer
    (:func:`~mlmprob.energies.as_input_ids`: ``mlmprob.pll(mlm, ["EVQLVESGG", "QVQLQESGP"])``).

    ``method="exact"`` (the default) runs one masked copy per position: see :func:`mlmprob.energies.pll`
    for ``positions`` and ``word_ids`` (the forward budget is the model reader's). ``method="one_pass"``
    estimates it from one unmasked pass with the model's fitted correction (shipped for the built-in models; ``mlmprob
    calibrate`` fits one for any other; ``correction`` names a file to use instead), and
    ``method="unmasked"`` reads the unmasked pass without correction. Both are estimates.

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> round(float(pll(m, torch.tensor([[1, 1]]))), 4)
    -0.9651
    >>> pll(m, torch.tensor([[1, 1]]), method="fast")
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: unknown PLL method 'fast'; use one of exact, one_pass, unmasked
    """
    spec = PLLSpec.of(spec, **overrides)
    return _PLL[spec.method](mlm, input_ids, positions, spec, word_ids)


def _exact(mlm, input_ids, positions, spec: PLLSpec, word_ids) -> torch.Tensor:
    return exact_pll(mlm, input_ids, positions, word_ids=word_ids)


def _estimate(mlm, input_ids, positions, spec: PLLSpec, word_ids) -> torch.Tensor:
    if word_ids is not None:
        raise MLMProbError(f"method {spec.method!r} has no whole-word variant; use method='exact'")
    return one_pass_token_scores(mlm, input_ids, positions, OnePassSpec(spec.method, spec.correction)).pll


_PLL = {"exact": _exact, "one_pass": _estimate, "unmasked": _estimate}  # method -> how it computes the PLL

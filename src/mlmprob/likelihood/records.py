"""``loglik`` columns for one text record (``mlmprob score --likelihood loglik``, the app). A record's random orders
come from ``seed`` and its sequence alone, so its values never depend on its neighbours, chunk, shard or worker."""

from __future__ import annotations

import math

import torch

from ..errors import NonFiniteError
from ..runtime.seeds import seeded_generator
from .chain import loglik
from .spec import LoglikSpec

LOGLIK_FIELDS = tuple(f"loglik_{k}" for k in ("mixture", "elbo", "per_token", "orders", "exact", "outside_mass"))


def record_generator(seed: int, sequence: str) -> torch.Generator:
    """The generator of one record's orders (``runtime.seeds``, purpose ``loglik``)."""
    return seeded_generator(seed, "loglik", sequence)


def loglik_columns(mlm, sequence: str, spec: LoglikSpec | None = None, *, whole_word: bool = False, **settings) -> dict:
    """``LOGLIK_FIELDS`` of one sequence (and ``loglik_per_order``, a list, with ``per_order``): ``loglik`` over every
    non-special position, ``loglik_per_token`` the mixture per token (its ``exp(-x)`` is a perplexity),
    ``loglik_outside_mass`` the mean mass outside the proposal alphabet. The settings: ``spec`` (a ``ScoreSpec``'s is
    its ``loglik_spec``), its fields changed by ``settings``; ``whole_word`` reveals a word's pieces together. The
    orders come from ``record_generator(spec.seed, sequence)``."""
    spec = LoglikSpec.of(spec, **settings)
    enc = mlm.encode([sequence])
    words = enc.word_ids if whole_word else None
    r = loglik(mlm, enc.input_ids, spec=spec, generator=record_generator(spec.seed, sequence), word_ids=words)
    mix, n = float(r.mixture[0]), int(r.n_tokens[0])
    if not math.isfinite(mix):
        raise NonFiniteError(f"its chain-rule log-likelihood is not finite ({mix}; a token with zero probability?)")
    k = int(r.n_orders[0])
    out: dict[str, object] = {
        "loglik_mixture": mix,
        "loglik_elbo": float(r.elbo[0]),
        "loglik_per_token": mix / n,
        "loglik_orders": k,
        "loglik_exact": bool(r.exact[0]),
        "loglik_outside_mass": float(r.outside_mass[0, :k].mean()),
    }
    if spec.per_order:
        out["loglik_per_order"] = r.per_order[0, :k].tolist()
    return out

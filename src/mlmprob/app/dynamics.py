"""The web app's Sample and Pair-joint computations: :func:`sample_steps` (the chains of ``mlmprob.sample``, one
snapshot per epoch) and :func:`pair_view` (the five pair joints of two positions, ``mlmprob.joints.evaluate_pair``)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from ..errors import MLMProbError
from ..joints.constructions import METHOD_LABELS
from ..sampling.options import INITS
from ..sampling.registry import ENERGIES
from ..settings import check_int, check_seed
from .compute import LIMITS, Limits, decode, encode_one, positions_or_cdr, word_tokens

# the joints in the order the app shows them, under their display names
JOINT_NAMES = {m: METHOD_LABELS[m] for m in ("mlm", "mrf", "mrf_logit", "hcb", "ag")}


# -- Sample ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SampleSnapshot:
    """The chains after ``epoch`` of ``epochs`` (0: the initial states): ``energy[e][c]``, the target energy
    (``energy_kind``) of chain ``c`` after epoch ``e``; ``accepted`` / ``proposed`` per epoch (summed over the chains);
    ``sequences``: the current states; ``free``: the sampled token positions."""

    epoch: int
    epochs: int
    energy_kind: str
    energy: tuple[tuple[float, ...], ...]
    accepted: tuple[int, ...]
    proposed: tuple[int, ...]
    sequences: tuple[str, ...]
    free: tuple[int, ...]
    method: str = "mh"

    @property
    def done(self) -> bool:
        return self.epoch >= self.epochs

    @property
    def accept_rate(self) -> float:
        """Accepted / proposed over every epoch so far (NaN before the first, and for methods with no
        accept step: degenerate Gibbs, ancestral draws and the parallel decoders)."""
        from ..sampling.spec import method_of

        n = sum(self.proposed) if method_of(self.method).accepts else 0
        return sum(self.accepted) / n if n else math.nan


def sample_steps(
    mlm,
    text: str,
    *,
    positions: str = "",
    energy: str = "local",
    epochs: int = 20,
    chains: int = 4,
    seed: int = 0,
    init: str = "given",
    method: str = "mh",
    score: str | None = None,
    steps: int | None = None,
    limits: Limits = LIMITS,
) -> Iterator[SampleSnapshot]:
    """Chains from ``text`` (``_`` / ``[MASK]``: masked tokens, free), sampling the 1-based residue/word ``positions``
    (``"3,5,10-12"`` or a CDR such as ``"H3"``; default: all), one snapshot per epoch, through the sampler's own epoch
    loop (:class:`mlmprob.sampling.api.Chains`): ``mlmprob.sample(..., method=method, energy=energy, epochs=epochs,
    burn_in=0, init=init, generator=seed)`` ends in the same states. The exact draws start from the given text whatever
    ``init`` says; ``unmask`` and ``adaptive`` take their ``score`` (default: the method's own) and ``unmask`` its
    ``steps`` per draw."""
    from ..infilling.stream import expand_gaps, mask_text
    from ..sampling.api import Chains
    from ..sampling.spec import SamplerSpec, method_of
    from ..sampling.stream import free_positions

    if energy not in ENERGIES:
        raise MLMProbError(f"energy must be 'local' or 'raw', got {energy!r}")
    if init not in INITS:
        raise MLMProbError(f"init must be one of {', '.join(INITS)}, got {init!r}")
    takes = method_of(method).spec.__dataclass_fields__  # one line for an unknown method
    epochs = check_int("epochs", epochs, 1, f"an integer in 1..{limits.max_epochs}", limits.max_epochs)
    chains = check_int("chains", chains, 1, f"an integer in 1..{limits.max_chains}", limits.max_chains)
    check_seed(seed)
    text = expand_gaps(str(text or "").strip(), mask_text(mlm))
    enc = encode_one(mlm, text, limits)
    want = positions_or_cdr(text, positions, "free positions") if str(positions or "").strip() else None
    free1 = free_positions(mlm, enc, 0, "the sequence", text, want)  # resolved once, as for the CLI
    ids = enc.input_ids[:1].repeat(chains, 1)
    free = free1[None].repeat(chains, 1)
    # the options this method takes (the app draws every method's energy trace: independent draws are scored)
    given: dict[str, Any] = {"init": init, "energies": True, "score": score or None}
    if steps:
        given["steps"] = check_int("steps", steps, 1, "an integer in 1..1000000", 10**6)
    extra = {k: v for k, v in given.items() if k in takes}
    spec = SamplerSpec(method=method, energy=energy, epochs=epochs, burn_in=0, **extra)
    run = Chains(mlm, spec, ids, free, torch.Generator().manual_seed(seed))
    trace = [tuple(run.energies()[0 if energy == "local" else 1].tolist())]
    accepted: list[int] = []
    proposed: list[int] = []
    free_pos = tuple(free[0].nonzero()[:, 0].tolist())

    def snap() -> SampleSnapshot:
        seqs = tuple(decode(mlm, row) for row in run.state.ids)
        return SampleSnapshot(
            run.state.epoch, epochs, energy, tuple(trace), tuple(accepted), tuple(proposed), seqs, free_pos, method
        )

    yield snap()
    for rec in run.epochs():
        energies = rec.e_local if energy == "local" else rec.e_raw
        assert energies is not None  # the app asks every method for its energies (energies=True)
        trace.append(tuple(energies))
        accepted.append(sum(rec.accepted))
        proposed.append(sum(rec.proposals))
        yield snap()


# -- Pair joint ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PairView:
    """The five joints of a pair of positions (``a``, ``b``: 1-based residue/word numbers): ``joints[method]``
    ``[len(labels_a), len(labels_b)]``, the joint's probabilities of the shown tokens (the top ones of the both-masked
    MLM conditionals: a table may sum to less than 1); ``akl`` / ``gkl`` per method; ``gold``: the tokens the sequence
    holds at ``a`` and ``b`` (G-KL is NaN when one is masked or not a candidate); ``n_candidates``: the candidate
    vocabulary ``K``; ``outside_mass``: the softmax mass outside it."""

    a: int
    b: int
    labels_a: tuple[str, ...]
    labels_b: tuple[str, ...]
    joints: dict[str, torch.Tensor]
    akl: dict[str, float]
    gkl: dict[str, float]
    gold: tuple[str, str]
    n_candidates: int
    outside_mass: float


def _one_token(enc, number: int, name: str) -> int:
    pos = word_tokens(enc, [number], name)
    if len(pos) != 1:
        raise MLMProbError(f"{name}: word {number} is {len(pos)} tokens; a pair joint needs one-token positions")
    return pos[0]


def pair_view(mlm, text: str, a, b, *, top: int = 10, limits: Limits = LIMITS) -> PairView:
    """MLM, MRF, MRF-logit, HCB and AG joints of positions ``a`` and ``b`` (1-based) from one set
    of ``2K + 1`` forward rows (``mlmprob.joints.evaluate_pair``; HCB pivot: the MLM joint's mode).
    Vocabularies larger than ``limits.max_pair_candidates`` are cut to their top tokens under
    the both-masked copy (``outside_mass`` says how much that drops)."""
    from ..infilling.stream import expand_gaps, mask_text
    from ..joints.conditionals import resolve_candidates
    from ..joints.evaluate import evaluate_pair

    a = check_int("position a", a, 1, "an integer in 1..1000000", 10**6)
    b = check_int("position b", b, 1, "an integer in 1..1000000", 10**6)
    top = check_int("tokens shown", top, 1, f"an integer in 1..{limits.max_pair_top}", limits.max_pair_top)
    if a == b:
        raise MLMProbError(f"a pair needs two different positions, got a = b = {a}")
    enc = encode_one(mlm, expand_gaps(str(text or "").strip(), mask_text(mlm)), limits)
    pa, pb = _one_token(enc, a, "position a"), _one_token(enc, b, "position b")
    ids = enc.input_ids[0, : int(enc.lengths[0])]
    k = len(resolve_candidates(mlm, None))
    top_k = limits.max_pair_candidates if k > limits.max_pair_candidates else None
    ev = evaluate_pair(mlm, ids, pa, pb, top_k=top_k)
    pc = ev.conditionals
    ia = pc.marg_a.argsort(descending=True)[:top]
    ib = pc.marg_b.argsort(descending=True)[:top]
    joints = {m: ev.joints[m].exp()[ia][:, ib] for m in JOINT_NAMES}
    la, lb = (tuple(decode(mlm, pc.candidates[i]) for i in idx.tolist()) for idx in (ia, ib))
    akl, gkl = {m: ev.metrics[m].akl for m in JOINT_NAMES}, {m: ev.metrics[m].gkl for m in JOINT_NAMES}
    gold = (decode(mlm, pc.gold[0]), decode(mlm, pc.gold[1]))
    return PairView(a, b, la, lb, joints, akl, gkl, gold, pc.size, float(pc.outside_mass["marginal"]))

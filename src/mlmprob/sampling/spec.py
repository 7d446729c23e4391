"""``SamplerSpec``: every setting of a sampling run in one frozen, typed object, validated once where it is made.

The Python API (:func:`~mlmprob.sampling.sample`), the CLI (``mlmprob sample``, both modes), the streamed
job (:class:`~mlmprob.sampling.stream.SampleJob`), the app and the experiments build one and pass it on.
It knows what the run file stores (:meth:`SamplerSpec.run_config`, compared on resume), what every result
row records (:meth:`SamplerSpec.settings`) and which kernel steps the chains (:meth:`SamplerSpec.kernel`).

Adding a sampler option takes (docs/architecture.md, "One spec per algorithm", *Adding an option*):

1. a field here (with ``metadata={"methods": (...)}`` when only some methods use it: it is then stored and
   written only for those, so older run files of the other methods still resume), and its check in
   ``__post_init__``;
2. where the kernel takes it (:meth:`SamplerSpec.kernel`);
3. its CLI flag in ``commands/sample.py`` under the field's name (``--my-option`` -> ``my_option``):
   :func:`mlmprob.commands.common.spec_of` picks it up by name.

>>> s = SamplerSpec(method="ancestral", epochs=3, order="l2r")
>>> s.settings()["order"], "tokens_per_step" in s.settings(), "draft_k" in s.settings()
('l2r', True, False)
>>> SamplerSpec(method="mh", draft_k=2)
Traceback (most recent call last):
...
mlmprob.errors.MLMProbError: draft_k is for method='speculative', got 2 with method='mh'
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

from ..errors import MLMProbError
from ..settings import Spec
from ..settings import check_int as _check_int
from .options import (
    DEFAULT_DRAFT_K,
    DEFAULT_STEPS,
    DEFAULT_THRESHOLD,
    INITS,
    ProposalConfig,
    check_adaptive,
    check_unmasking,
)
from .schedules import LinearAnneal, LinearBlockSize, ScheduleLike, as_schedule, schedule_text

if TYPE_CHECKING:
    from ..likelihood.orders import OrderSpec
# the kernels (and torch) are imported where a kernel is built: a spec and the command line's parser need neither

DECODERS = ("unmask", "adaptive")  # parallel decoders (sampling.unmasking, sampling.adaptive)
METHODS = ("mh", "gibbs", "ancestral", "speculative") + DECODERS
EXACT_DRAWS = ("ancestral", "speculative")  # every epoch an independent draw of p_sigma: no initialisation
DRAWS = EXACT_DRAWS + DECODERS  # every epoch an independent draw from all-masked: no initialisation or energy target
DEFAULT_SCORE = {"unmask": "confidence", "adaptive": "margin"}
ENERGIES = ("local", "raw")

#: The most memory the epoch records of one run may take: every epoch's chain states and statistics stay in memory
#: until the run ends (:meth:`SamplerSpec.check_size` refuses a larger run before any tensor is made).
MAX_RUN_BYTES = 16 << 30

# K, ("linear", START, END[, EPOCHS]) as ``mlmprob sample --block-size START:END[:EPOCHS]`` parses it, or a schedule
BlockLike = Union[int, tuple, ScheduleLike]


def _only(*methods: str) -> dict:
    return {"methods": methods}


@dataclass(frozen=True)
class SamplerSpec(Spec):
    """The settings of one sampling run (see :func:`~mlmprob.sampling.sample` for what each does).

    ``block_size``: ``K``, ``("linear", START, END[, EPOCHS])`` (EPOCHS defaults to every epoch) or a schedule;
    ``target_temperature``: a number (annealed by ``anneal`` per epoch down to ``temperature_floor`` when
    ``anneal > 0``) or a schedule."""

    method: str = "mh"
    energy: str = "local"
    epochs: int = 1
    burn_in: int = 0
    thin: int = 1
    block_size: BlockLike = 1
    proposal_temperature: float = 1.0
    top_p: float = 1.0
    target_temperature: ScheduleLike = 1.0
    anneal: float = 0.0
    temperature_floor: float = 0.05
    order: OrderSpec = "random"
    init: str = "given"
    score_all: bool = False
    tokens_per_step: int = field(default=1, metadata=_only("ancestral"))
    draft_k: int | None = field(default=None, metadata=_only("speculative"))
    score: str | None = field(default=None, metadata=_only(*DECODERS))  # None: DEFAULT_SCORE
    steps: int = field(default=DEFAULT_STEPS, metadata=_only("unmask"))
    schedule: str = field(default="linear", metadata=_only("unmask"))
    block_length: int | None = field(default=None, metadata=_only("unmask"))
    remask: float = field(default=0.0, metadata=_only("unmask"))
    remask_steps: int = field(default=0, metadata=_only("unmask"))
    threshold: float = field(default=DEFAULT_THRESHOLD, metadata=_only("adaptive"))
    max_tokens: int | None = field(default=None, metadata=_only("adaptive"))
    pair_top_k: int | None = field(default=None, metadata=_only("adaptive"))

    def __post_init__(self):
        if self.method not in METHODS:
            raise MLMProbError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.energy not in ENERGIES:
            raise MLMProbError(f"energy must be 'local' or 'raw', got {self.energy!r}")
        _check_int("epochs", self.epochs, 1, "a positive integer")
        _check_int("burn_in", self.burn_in, 0, "a non-negative integer")
        if isinstance(self.thin, bool) or not isinstance(self.thin, int) or not 1 <= self.thin <= self.epochs:
            raise MLMProbError(f"thin must be an integer in 1..epochs ({self.epochs}), got {self.thin!r}")
        if self.method != "ancestral" and self.tokens_per_step != 1:
            raise MLMProbError(
                f"tokens_per_step is for method='ancestral' (block_size sets MH/Gibbs blocks, "
                f"draft_k the speculative drafts), got {self.tokens_per_step!r}"
            )
        if self.method != "speculative" and self.draft_k is not None:
            raise MLMProbError(f"draft_k is for method='speculative', got {self.draft_k!r} with method={self.method!r}")
        if self.init not in INITS:
            raise MLMProbError(f"init must be one of {INITS}, got {self.init!r}")
        if not (self.anneal >= 0) or math.isinf(self.anneal):
            raise MLMProbError(f"anneal must be a finite number >= 0, got {self.anneal!r}")
        if self.anneal > 0 and callable(self.target_temperature):
            raise MLMProbError("give anneal with a number target_temperature, not with a schedule")
        if not callable(self.target_temperature):
            t = self.target_temperature
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0 or math.isinf(t):
                raise MLMProbError(f"target_temperature must be finite and > 0, got {t!r}")
        self.proposal  # ProposalConfig checks temperature and top_p
        self.schedules()  # block size and annealing schedules check their numbers
        self._check_decoder()

    # -- what the run is made of --------------------------------------------------------------------
    def run_bytes(self, chains: int, length: int = 1) -> int:
        """About how many bytes the epoch records of ``chains`` chains of ``length`` tokens take (on the high side:
        1 KiB an epoch, and per chain and epoch 48 bytes a token and 256 for its statistics).

        >>> SamplerSpec(epochs=10).run_bytes(2, 100)      # 10 epochs x (1024 + 2 x (4800 + 256))
        111360
        """
        return self.total_epochs * (1024 + chains * (48 * length + 256))

    def check_size(self, chains: int, length: int = 1) -> None:
        """Refuse a run whose epoch records would not fit :data:`MAX_RUN_BYTES` (``length`` 1, the least, when the
        sequences are not known yet): checked before the chains are made.

        >>> SamplerSpec(epochs=10 ** 9).check_size(1)
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: epochs 1,000,000,000 + burn_in 0 of 1 chains x 1 tokens would keep about 1,237 GiB of chain states in memory (every epoch's until the run ends), more than the 16 GiB a run may: sample fewer epochs or chains
        """
        need = self.run_bytes(chains, length)
        if need > MAX_RUN_BYTES:
            raise MLMProbError(
                f"epochs {self.epochs:,} + burn_in {self.burn_in:,} of {chains:,} chains x {length:,} "
                f"tokens would keep about {need / (1 << 30):,.0f} GiB of chain states in memory (every "
                f"epoch's until the run ends), more than the {MAX_RUN_BYTES >> 30} GiB a run may: sample "
                "fewer epochs or chains"
            )

    @property
    def proposal(self) -> ProposalConfig:
        return ProposalConfig(self.proposal_temperature, self.top_p)

    @property
    def total_epochs(self) -> int:
        return self.burn_in + self.epochs

    def _check_decoder(self) -> None:
        """The decoders' settings: refused with another method (changed from their defaults), checked with theirs.
        ``order`` is not used by the decoders (their scores choose it; the CLI refuses ``--order`` with them)."""
        for f in dataclasses.fields(self):
            methods, value = f.metadata.get("methods", ()), getattr(self, f.name)
            if methods and set(methods) <= set(DECODERS) and self.method not in methods and value != f.default:
                raise MLMProbError(
                    f"{f.name} is for method={' or '.join(map(repr, methods))}, got {value!r} with "
                    f"method={self.method!r}"
                )
        if self.method in DECODERS and self.block_size != 1:
            raise MLMProbError(
                f"block_size is for method='mh' or 'gibbs' (block_length sets {self.method}'s "
                f"semi-autoregressive blocks), got {self.block_size!r}"
            )
        if self.method == "unmask":
            check_unmasking(
                self.score_used, self.steps, self.schedule, self.block_length, self.remask, self.remask_steps
            )
        if self.method == "adaptive":
            check_adaptive(self.score_used, self.threshold, self.max_tokens, self.pair_top_k)

    @property
    def score_used(self) -> str | None:
        return DEFAULT_SCORE.get(self.method) if self.score is None else self.score

    @property
    def independent_draws(self) -> bool:
        """Whether every epoch is an independent draw from all-masked (no initial state, energy target or blocks)."""
        return self.method in DRAWS

    def schedules(self):
        """``(block_size, target_temperature)`` as callables ``epoch -> value``."""
        bs = self.block_size
        if isinstance(bs, tuple):
            if len(bs) not in (3, 4) or bs[0] != "linear":
                raise MLMProbError(f"block_size must be K, ('linear', START, END[, EPOCHS]) or a schedule, got {bs!r}")
            _, start, end, *n = bs
            bs = LinearBlockSize(start, end, n[0] if n else self.total_epochs)
        if not callable(bs) and (isinstance(bs, bool) or not isinstance(bs, int) or bs < 1):
            raise MLMProbError(
                f"block_size must be a positive integer K, ('linear', START, END[, EPOCHS]) or a schedule, got {bs!r}"
            )
        tt = self.target_temperature
        if self.anneal > 0:
            tt = LinearAnneal(tt, self.anneal, self.temperature_floor)
        else:
            LinearAnneal(1.0, 0.0, self.temperature_floor)  # the floor is checked either way
        return as_schedule(bs, "block_size"), as_schedule(tt, "target_temperature")

    def kernel(self, mlm):
        """The kernel of ``method`` with its fixed parts bound."""
        from .adaptive import Adaptive
        from .ancestral import Ancestral
        from .kernels import DegenerateGibbs, MetropolisHastings
        from .speculative import Speculative
        from .unmasking import Unmasking

        bs, tt = self.schedules()
        if self.method == "mh":
            return MetropolisHastings(mlm, self.energy, bs, self.proposal, tt, self.order, self.score_all)
        if self.method == "gibbs":
            return DegenerateGibbs(mlm, bs, self.proposal, self.order, self.score_all)
        if self.method == "speculative":
            return Speculative(mlm, self.order, self.draft_k_used, self.proposal, self.score_all)
        if self.method == "unmask":
            return Unmasking(
                mlm,
                self.score_used,
                self.steps,
                self.schedule,
                self.block_length,
                self.remask,
                self.remask_steps,
                self.proposal,
                self.score_all,
            )
        if self.method == "adaptive":
            return Adaptive(
                mlm, self.threshold, self.score_used, self.max_tokens, self.pair_top_k, self.proposal, self.score_all
            )
        return Ancestral(mlm, self.order, self.tokens_per_step, self.proposal, self.score_all)

    @property
    def draft_k_used(self) -> int:
        return DEFAULT_DRAFT_K if self.draft_k is None else self.draft_k

    # -- what is written down -----------------------------------------------------------------------
    def run_config(self, mlm) -> dict:
        """The configuration a run file stores (and a resumed run must match). ``epochs`` is not in it: a
        finished run resumes to more epochs."""
        from ..models.reader import name_of

        bs, tt = self.schedules()
        config = {
            "model": name_of(mlm),
            "method": self.method,
            "energy": self.energy,
            "block_size": schedule_text(bs),
            "proposal_temperature": self.proposal_temperature,
            "top_p": self.top_p,
            "target_temperature": schedule_text(tt),
            "order": self._order_json(),
            "burn_in": self.burn_in,
            "thin": self.thin,
            "init": self.init,
            "score_all": self.score_all,
        }
        config.update(self._method_fields())
        return config

    def settings(self, **around) -> dict:
        """The settings as plain JSON values, written into every streamed row and the output's config.
        ``around``: ``chains`` (written after ``energy``) and ``seed`` (after ``score_all``), the job's own."""
        out = {}
        for f in dataclasses.fields(self):
            if f.metadata.get("methods"):
                continue
            value = getattr(self, f.name)
            if f.name == "block_size":
                value = block_text(value)
            elif f.name == "target_temperature" and callable(value):
                value = schedule_text(value)
            elif f.name == "order":
                value = self._order_json()
            out[f.name] = value
            if f.name == "energy" and "chains" in around:
                out["chains"] = around["chains"]
            if f.name == "score_all" and "seed" in around:
                out["seed"] = around["seed"]
        out.update(self._method_fields())
        return out

    def _order_json(self):
        """``order`` as a JSON value: its name, or the given orders as lists."""
        if isinstance(self.order, str):
            return self.order
        import torch

        return torch.as_tensor(self.order).tolist()

    def _method_fields(self) -> dict:
        """The fields only some methods use (``metadata["methods"]``), for those methods (defaults filled in)."""
        out = {}
        for f in dataclasses.fields(self):
            if self.method in f.metadata.get("methods", ()):
                out[f.name] = {"draft_k": self.draft_k_used, "score": self.score_used}.get(
                    f.name, getattr(self, f.name)
                )
        return out


def block_text(block_size) -> str:
    """``block_size`` as ``--block-size`` writes it (a schedule object: its stable text).

    >>> block_text(2), block_text(("linear", 4, 1)), block_text(("linear", 4, 1, 3))
    ('2', '4:1', '4:1:3')
    """
    if isinstance(block_size, tuple):
        return ":".join(str(x) for x in block_size[1:])
    if callable(block_size):
        return schedule_text(block_size)
    return str(block_size)

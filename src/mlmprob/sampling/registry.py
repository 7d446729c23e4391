"""The sampling methods' registry (name -> spec class, kernel factory, what the results report) and ``SamplerSpec``,
the base of their specs: ``SamplerSpec(method=NAME, ...)`` is the method's own spec, refusing another method's option
in one line (:class:`NotForMethod`). The methods register in :mod:`.mcmc_methods` and :mod:`.draw_methods`; no torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module

from ..argtypes import nonnegative_int, positive_float, positive_int, probability
from ..errors import MLMProbError
from ..fields import option  # the methods' modules import it from here
from ..settings import Spec
from ..settings import check_int as _check_int
from .options import ProposalConfig, as_schedule

ENERGIES = ("local", "raw")

#: The most memory the chains of one run may take: every epoch's chain states and statistics stay in memory until the
#: run ends, and one epoch holds every chain's conditionals at once (:meth:`SamplerSpec.check_size` refuses a larger
#: run before any tensor is made).
MAX_RUN_BYTES = 16 << 30

#: The order of the settings in every stored row and run file; a method's own fields come after these, in their order.
COLUMNS = tuple(
    "method energy epochs burn_in thin block_size proposal_temperature top_p target_temperature anneal "
    "temperature_floor order init score_all".split()
)
LAST_COLUMNS = ("energies",)


def _gib(n: int) -> str:
    return f"{n / (1 << 30):,.0f}"


class NotForMethod(MLMProbError):
    """An option given to a method that does not take it: ``name`` (a field; ``value`` set when only that value is
    refused, as ``order='r2l'`` with MH), the ``takers`` (the methods that take it) and the ``method``."""

    def __init__(self, name: str, value, takers: tuple, method: str, value_only: bool = False, why: str = ""):
        self.name, self.value, self.takers = name, value, takers
        self.method, self.value_only, self.why = method, value_only, why
        what = f"{name} {value!r}" if value_only else name
        super().__init__(
            f"{what} is for method={' or '.join(map(repr, takers))}, got {value!r} with method={method!r}"
            + (f" ({why})" if why else "")
        )

    def cli(self) -> str:
        """The refusal as the command line words it (flags for fields)."""
        flag = "--" + self.name.replace("_", "-") + (f" {self.value}" if self.value_only else "")
        return (
            f"{flag} does not apply to --method {self.method}: {flag} is for --method {' or '.join(self.takers)} "
            f"(got --method {self.method}); leave it out" + (f" ({self.why})" if self.why else "")
        )


@dataclass(frozen=True)
class Method:
    """A registry entry: ``name``, ``spec`` class, ``kernel(mlm, spec)`` (returns an object with ``init(ids, free,
    epoch=0)`` and ``step(state, generator)``), ``help`` (for ``--method``) and what its results report: ``draws``
    (every epoch an independent draw from all-masked), ``rates`` (``"chain"``: MCMC acceptance and novelty,
    ``"drafts"``: the drafts' acceptance, None), ``no_accept`` (why it has no accept step; empty: it has one), ``costs``
    (rows carry a draw's cost) and ``summary(result, spec)`` (what ``summary.json`` adds)."""

    name: str
    spec: type[SamplerSpec]
    kernel: Callable
    help: str
    draws: bool = False
    rates: str | None = "chain"
    costs: bool = False
    no_accept: str = ""
    summary: Callable | None = None

    @property
    def accepts(self) -> bool:
        """Whether the method has an accept/reject step (MH's test, the drafts' test): what progress bars and trace
        plots show an acceptance rate for."""
        return self.rates is not None and not self.no_accept


REGISTRY: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add a sampling method (its name must be new); returns it."""
    if method.name in REGISTRY:
        raise MLMProbError(f"sampling method {method.name!r} is registered already")
    REGISTRY[method.name] = method
    return method


def method_of(name: str) -> Method:
    """The registry entry of ``name``, or one line naming the methods."""
    if name not in REGISTRY:
        raise MLMProbError(f"method must be one of {tuple(REGISTRY)}, got {name!r}")
    return REGISTRY[name]


def option_names() -> dict[str, tuple[str, ...]]:
    """Every sampler option (a field of some method's spec), in the order of the flags, with the methods taking it."""
    out: dict[str, list[str]] = {}
    for m in REGISTRY.values():
        for f in dataclasses.fields(m.spec):
            out.setdefault(f.name, []).append(m.name)
    return {k: tuple(v) for k, v in out.items()}


class _ByMethod(type):
    """``SamplerSpec(method=NAME, **fields)`` makes the spec of ``NAME``; any spec class refuses, in one line, a
    keyword that is no field of it (another method's option, or an unknown name)."""

    def __call__(cls, *args, **kw):
        if args:
            raise MLMProbError(f"{cls.__name__} takes keywords only (the settings by name)")
        method = kw.get("method", cls.__dataclass_fields__["method"].default)
        target = method_of(method).spec
        if not issubclass(target, cls):
            raise MLMProbError(f"{cls.__name__} is not the spec of method={method!r}; use SamplerSpec(method=...)")
        names = {f.name for f in dataclasses.fields(target)}
        for key, value in kw.items():
            if key not in names:
                takers = option_names().get(key)
                if takers is None:
                    raise MLMProbError(
                        f"unknown sampler option {key!r}; method={method!r} takes: {', '.join(sorted(names))}"
                    )
                raise NotForMethod(key, value, takers, method)
        return type.__call__(target, **kw)


@dataclass(frozen=True)
class SamplerSpec(Spec, metaclass=_ByMethod):
    """The fields every sampling method takes (see :func:`~mlmprob.sampling.sample` for what each does);
    ``SamplerSpec(method=NAME, ...)`` is the spec of method ``NAME`` (the registry's class)."""

    method: str = option("mh", "the sampling method")
    energy: str = option(
        "local",
        "target energy (mh; the energy trace of the others): E_local (= -PLL) or E_raw (minus the sum of raw logits)",
        choices=ENERGIES,
    )
    epochs: int = option(20, "epochs after burn-in", type=positive_int)
    burn_in: int = option(0, "epochs run first and not kept", type=nonnegative_int)
    thin: int = option(1, "keep every N-th epoch after burn-in", type=positive_int)
    score_all: bool = option(False, "energy over all positions, not only the free ones", action="store_true")

    def __post_init__(self):
        if self.energy not in ENERGIES:
            raise MLMProbError(f"energy must be 'local' or 'raw', got {self.energy!r}")
        _check_int("epochs", self.epochs, 1, "a positive integer")
        _check_int("burn_in", self.burn_in, 0, "a non-negative integer")
        _check_int("thin", self.thin, 1, f"an integer in 1..epochs ({self.epochs})", self.epochs)

    @classmethod
    def of(cls, spec=None, /, **overrides):
        """``sample``'s settings: ``spec`` (None: the defaults of ``overrides``' method) with ``overrides`` changing its
        fields by name; the method's spec refuses another method's option or an unknown name in one line."""
        if spec is None:
            return SamplerSpec(**overrides)
        return cls.check(spec).replace(**overrides) if overrides else cls.check(spec)

    def replace(self, **changes):
        """A copy with ``changes`` (validated again); another ``method`` keeps the fields set away from their
        defaults (refused if that method does not take them)."""
        return SamplerSpec(**{**self._given(), **changes})

    def _given(self) -> dict:
        """The fields whose values differ from the spec's defaults (and ``method``)."""
        out = {"method": self.method}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            plain = isinstance(value, (str, int, float, bool, type(None), tuple))
            if not plain or type(value) is not type(f.default) or value != f.default:
                out[f.name] = value
        return out

    # -- what the run is made of --------------------------------------------------------------------
    @property
    def info(self) -> Method:
        """The method's registry entry."""
        return method_of(self.method)

    def kernel(self, mlm):
        """The kernel of ``method`` with its settings bound (the registry's factory)."""
        return self.info.kernel(mlm, self)

    @property
    def independent_draws(self) -> bool:
        """Whether every epoch is an independent draw from all-masked (no initial state, energy target or blocks)."""
        return self.info.draws

    @property
    def records_energies(self) -> bool:
        """Whether every epoch's states are scored with ``E_local`` and ``E_raw`` (the MCMC methods always)."""
        return True

    def schedules(self):
        """``(block_size, target_temperature)`` as callables ``epoch -> value``; the target temperature is None
        for a method without a target."""
        return as_schedule(1, "block_size"), None

    def run_bytes(self, chains: int, length: int = 1, vocab: int = 0) -> int:
        """About how many bytes the chains of a run take (on the high side): the epoch records of ``chains`` chains
        of ``length`` tokens (1 KiB an epoch, and per chain and epoch 48 bytes a token and 256 for its statistics)
        plus :meth:`epoch_bytes`, what one epoch of every chain holds at once.

        >>> SamplerSpec(epochs=10, burn_in=0).run_bytes(2, 100)      # 10 x (1024 + 2 x (4800 + 256)) + 2 x 100 x 64
        124160
        """
        return self.total_epochs * (1024 + chains * (48 * length + 256)) + self.epoch_bytes(chains, length, vocab)

    @staticmethod
    def epoch_bytes(chains: int, length: int, vocab: int = 0) -> int:
        """What one epoch of ``chains`` chains of ``length`` tokens holds at once: 40 bytes a token and vocabulary entry
        (the MCMC kernels' single-site conditionals and their log-softmax) and 64 a token; ``vocab`` 0 when not known
        yet."""
        return chains * length * (40 * vocab + 64)

    def check_size(self, chains: int, length: int = 1, vocab: int = 0) -> None:
        """Refuse a run whose chains would not fit :data:`MAX_RUN_BYTES` (:meth:`run_bytes`; ``length`` 1, the least,
        and ``vocab`` 0 when the sequences or the model are not known yet): checked before the chains are made.

        >>> SamplerSpec(epochs=10 ** 9, burn_in=0).check_size(1)  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: epochs 1,000,000,000 + burn_in 0 of 1 chain would keep at least 1,237 GiB of
        chain states in memory (every epoch's until the run ends), more than the 16 GiB a run may: sample fewer
        epochs or chains
        >>> SamplerSpec(epochs=1, burn_in=0).check_size(10 ** 6, 34, 25)  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: epochs 1 + burn_in 0 of 1,000,000 chains x 34 tokens would keep about 35 GiB in
        memory (2 GiB of chain states, every epoch's until the run ends, and 34 GiB for one epoch of every chain at
        once over a vocabulary of 25), more than the 16 GiB a run may: sample fewer epochs or chains
        """
        need = self.run_bytes(chains, length, vocab)
        if need > MAX_RUN_BYTES:
            what = f"{chains:,} chain{'s' if chains != 1 else ''}"  # the tokens only once the sequences are known
            what, about = (f"{what} x {length:,} tokens", "about") if length > 1 else (what, "at least")
            epoch = self.epoch_bytes(chains, length, vocab)
            held = "of chain states in memory (every epoch's until the run ends)"
            if vocab:
                held = (
                    f"in memory ({_gib(need - epoch)} GiB of chain states, every epoch's until the run ends, and "
                    f"{_gib(epoch)} GiB for one epoch of every chain at once over a vocabulary of {vocab:,})"
                )
            raise MLMProbError(
                f"epochs {self.epochs:,} + burn_in {self.burn_in:,} of {what} would keep {about} {_gib(need)} GiB "
                f"{held}, more than the {MAX_RUN_BYTES >> 30} GiB a run may: sample fewer epochs or chains"
            )

    @property
    def total_epochs(self) -> int:
        return self.burn_in + self.epochs

    # -- what is written down -----------------------------------------------------------------------
    def _fields_in_order(self) -> list:
        def key(f):
            if f.name in COLUMNS:
                return (0, COLUMNS.index(f.name))
            return (2, LAST_COLUMNS.index(f.name)) if f.name in LAST_COLUMNS else (1, 0)

        return sorted(dataclasses.fields(self), key=key)  # stable: a method's own fields in their order

    def settings(self, **around) -> dict:
        """The settings as plain JSON values, written into every streamed row and the output's config: the
        method's fields (:data:`COLUMNS` first). ``around``: ``chains`` (written after ``energy``) and ``seed``
        (after ``score_all``), the job's own."""
        from ..settings import json_value

        out = {}
        for f in self._fields_in_order():
            value = getattr(self, f.name)
            if f.metadata.get("recorded") == "unless default" and type(value) is type(f.default) and value == f.default:
                continue
            write = f.metadata.get("json")
            out[f.name] = write(self, value) if write else json_value(value)
            after = {"energy": "chains", "score_all": "seed"}.get(f.name, "")  # the job's own, after these fields
            if after in around:
                out[after] = around[after]
        return out

    def run_config(self, mlm) -> dict:
        """The configuration a run file stores (and a resumed run must match): the model's name and
        :meth:`settings` but ``epochs`` (a finished run resumes to more epochs), schedules in their stable
        text form (a field's ``stored`` metadata: MH's annealing is in its target temperature's schedule)."""
        from ..models.reader import name_of

        config = {"model": name_of(mlm)}
        settings = self.settings()
        for f in self._fields_in_order():
            stored = f.metadata.get("stored")
            if f.name != "epochs" and stored is not False and f.name in settings:
                config[f.name] = stored(self) if stored else settings[f.name]
        return config


@dataclass(frozen=True)
class ProposalSpec(SamplerSpec):
    """The fields of the methods that draw from the MLM's conditionals (all but greedy mask-predict): the
    proposal's temperature and nucleus."""

    proposal_temperature: float = option(
        1.0, "temperature of the proposal distribution (the MLM's conditionals)", type=positive_float
    )
    top_p: float = option(1.0, "nucleus: propose only from the top-p probability mass", type=probability)

    def __post_init__(self):
        super().__post_init__()
        self.proposal  # noqa: B018  (ProposalConfig checks temperature and top_p)

    @property
    def proposal(self) -> ProposalConfig:
        return ProposalConfig(self.proposal_temperature, self.top_p)


def kernel_of(module: str, name: str, **computed: Callable):
    """The factory ``(mlm, spec) -> kernel`` of the kernel class ``name`` of ``module`` (imported when first used):
    each field of the kernel but ``mlm`` is ``computed[field](spec)``, else the spec's field of the same name."""

    def make(mlm, spec):
        kernel = getattr(import_module(module, __package__), name)
        fields = [f for f in kernel.__dataclass_fields__ if f != "mlm"]
        return kernel(mlm, **{f: computed[f](spec) if f in computed else getattr(spec, f) for f in fields})

    return make


def order_json(spec, order):
    """``order`` as a JSON value: its name, or the given orders as lists."""
    if isinstance(order, str):
        return order
    import torch

    return torch.as_tensor(order).tolist()


def shared_field(name: str, default, spec=SamplerSpec):
    """The field ``name`` of ``spec`` with this method's default (its place, help and flag stay)."""
    return field(default=default, metadata=spec.__dataclass_fields__[name].metadata)


def takers_of(name: str, value) -> tuple:
    """The methods whose ``name`` flag takes ``value`` (``order='r2l'``: the exact draws)."""
    return tuple(
        m
        for m in option_names()[name]
        if value in REGISTRY[m].spec.__dataclass_fields__[name].metadata.get("choices", (value,))
    )

"""``mlmprob sample``'s sampler flags, made from the sampling methods' spec fields (:mod:`mlmprob.sampling.spec`'s
registry): one flag per field (help, type and choices from its metadata), grouped in ``--help`` by the methods taking
it, and the one-line refusal of a flag its ``--method`` does not take (:class:`~mlmprob.sampling.spec.NotForMethod`).
A flag left out is absent from the parsed arguments: the method's spec gives its default. Imports no torch."""

from __future__ import annotations

from ..argtypes import nonnegative_int, positive_int
from ..errors import MLMProbError
from ..fields import flag_keywords, flag_of
from ..sampling.spec import REGISTRY, NotForMethod, SamplerSpec, option_names

JOB_FLAGS = ("chains", "seed")  # the sampler group's flags that are the job's, not the spec's


def _default_text(name: str, takers: tuple) -> str:
    """``default: X``, or each method's where they differ; empty for a flag whose default means 'not given'."""
    defaults = {m: REGISTRY[m].spec.__dataclass_fields__[name].default for m in takers}
    values = list(dict.fromkeys(map(str, defaults.values())))
    if len(values) == 1:
        return "" if values[0] in ("None", "False") else f" (default: {values[0]})"
    per = {v: [m for m, d in defaults.items() if str(d) == v] for v in values}
    return " (default: " + "; ".join(f"{v} for {', '.join(ms)}" for v, ms in per.items()) + ")"


def _flag_args(name: str, takers: tuple) -> dict:
    """argparse's keywords for the flag of field ``name`` (the metadata of the methods taking it, merged)."""
    metas = [REGISTRY[m].spec.__dataclass_fields__[name].metadata for m in takers]
    helps: dict[str, list[str]] = {}
    for m, meta in zip(takers, metas, strict=True):
        helps.setdefault(meta["help"], []).append(m)
    text = next(iter(helps)) if len(helps) == 1 else "; ".join(f"{', '.join(ms)}: {h}" for h, ms in helps.items())
    choices = [c for meta in metas for c in meta.get("choices", ())]
    merged = {**metas[0], **({"choices": tuple(dict.fromkeys(choices))} if choices else {})}
    return flag_keywords(name, merged, text + _default_text(name, takers))


def add_sampler_args(parser) -> None:
    """``--method``, ``--chains``, ``--seed`` and a flag per sampler option; the options every method takes in
    the ``sampler`` group, the others in a group per set of methods (``--method mh, gibbs``)."""
    methods = tuple(REGISTRY)
    s = parser.add_argument_group("sampler")
    helps = "; ".join(f"{m.name}: {m.help}" for m in REGISTRY.values()).replace("%", "%%")
    s.add_argument("--method", choices=methods, default=SamplerSpec.__dataclass_fields__["method"].default, help=helps)
    s.add_argument("--chains", type=positive_int, default=4, help="chains per input sequence")
    groups = {methods: s}
    for name, takers in option_names().items():
        if name == "method":
            continue
        if takers not in groups:
            groups[takers] = parser.add_argument_group(f"--method {', '.join(takers)}")
        groups[takers].add_argument(flag_of(name), **_flag_args(name, takers))
    s.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the sampler's random generator")


def sampler_spec(args) -> SamplerSpec:
    """The spec of the parsed flags, validated once; a flag the method does not take is refused with flags."""
    values = {name: getattr(args, name) for name in option_names() if hasattr(args, name)}
    try:
        return SamplerSpec(**values)  # a flag left out is absent from args: the method's spec gives its default
    except NotForMethod as e:
        raise MLMProbError(e.cli()) from None

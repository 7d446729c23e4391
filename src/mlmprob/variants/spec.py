"""``VariantsSpec``: the settings of a variant-effect run, frozen and validated once where it is made."""

from __future__ import annotations

from dataclasses import dataclass

from ..argtypes import checked
from ..errors import MLMProbError
from ..fields import option
from ..likelihood.spec import check_n_orders
from ..settings import Spec, check_seed

DEFAULT_METHODS = ("wt_marginals", "masked_marginals", "masked_marginals_all", "hcb")
SATURATE_METHODS = ("wt_marginals", "masked_marginals")
CHAIN_FIELDS = ("chain_orders", "chain_seed")


METHODS = (
    "wt_marginals",
    "masked_marginals",
    "masked_marginals_all",
    "masked_marginals_mt",
    "mutant_marginals",
    "pll_delta",
    "hcb",
    "ag",
    "epistasis",
)
ALL_METHODS = METHODS + ("chain",)  # the default (None) is METHODS; chain on request
CHAIN_ORDERS = 6  # orders of a variant's sites (all |S|! when at most this many)


def check_offset(offset) -> None:
    """Refuse an ``offset`` (the number of the wild type's first residue) that is not an integer (any sign)."""
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise MLMProbError(f"offset must be an integer, got {offset!r}")


def check_methods(methods) -> tuple[str, ...]:
    if methods is None:
        return METHODS
    if not isinstance(methods, str) and not hasattr(methods, "__iter__"):  # 3 was "'int' object is not iterable"
        raise MLMProbError(f"methods must be a method name or a list of them (or None: all), got {methods!r}")
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown or not methods:
        raise MLMProbError(
            f"unknown variant scoring method {unknown[0] if unknown else None!r}; use some of {', '.join(ALL_METHODS)}"
        )
    return tuple(dict.fromkeys(methods))


def parse_methods(text: str) -> tuple[str, ...]:
    """``--methods``' text, comma-separated method names, checked (:func:`check_methods`)."""
    methods = tuple(m.strip() for m in text.split(",") if m.strip())
    if not methods:
        raise MLMProbError(f"methods must name one or more methods (or be left out: the defaults), got {text!r}")
    return check_methods(methods)


@dataclass(frozen=True)
class VariantsSpec(Spec):
    """``methods``: the scores (:data:`ALL_METHODS`, repeats dropped; None: every method of :data:`METHODS`);
    ``offset``: the number of the wild type's first residue in mutant strings; ``chain_orders`` and ``chain_seed``: the
    orders of ``chain`` (:func:`mlmprob.variants.chain.site_orders`). ``mlmprob variants``' flags are made from these
    fields (:func:`mlmprob.fields.add_field_flags`); ``--methods`` is a comma-separated list (:func:`parse_methods`)
    whose default depends on ``--saturate``."""

    methods: tuple[str, ...] = option(
        DEFAULT_METHODS,
        f"comma-separated, of: {', '.join(ALL_METHODS)}",
        type=checked(parse_methods),
        shown=f"{', '.join(DEFAULT_METHODS)}; with --saturate: {', '.join(SATURATE_METHODS)}",
    )
    offset: int = option(
        1, "number of the wild type's first residue in the mutant strings", type=checked(int, check_offset)
    )
    chain_orders: int = option(
        CHAIN_ORDERS,
        "chain: orders of each variant's sites averaged over (all |S|! when at most K, else K drawn)",
        type=checked(int, check_n_orders),
        metavar="K",
    )
    chain_seed: int = option(
        0,
        "chain: seed of the drawn orders (with the variant's sites; not the bootstrap's --seed)",
        type=checked(int, check_seed),
    )

    def __post_init__(self):
        object.__setattr__(self, "methods", check_methods(self.methods))
        check_offset(self.offset)
        check_n_orders(self.chain_orders, "chain_orders")
        check_seed(self.chain_seed, "chain_seed")

    def uses(self, name: str) -> bool:
        return name not in CHAIN_FIELDS or "chain" in self.methods

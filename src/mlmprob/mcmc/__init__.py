"""The one Metropolis-Hastings engine under ``sample(method="mh")`` and ``design``: the kernel factory on a target
of terms and constraints (:mod:`.engine`: delayed acceptance, replica exchange's swap) and its exact moves
(:mod:`.moves`: multi-site, locally balanced)."""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "MHInfo": ".engine",
        "MHState": ".engine",
        "log_acceptance": ".engine",
        "mh_kernel": ".engine",
        "swap_log_acceptance": ".engine",
        "swap_step": ".engine",
        "Moves": ".moves",
        "sample_from": ".moves",
        "site_log_probs": ".moves",
    },
)

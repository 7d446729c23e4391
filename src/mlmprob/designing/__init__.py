"""Design under constraints with a product of experts: the target ``p(x) ∝ exp(-Σ_k w_k E_k(x)/τ) · 1[x ∈ C]``
(masked-LM experts, a user oracle, the Hamming distance to the parent; hard constraints ``C``), exact MH with
renormalised expert proposals, simulated annealing and replica exchange, and ``design``, the API."""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "DesignResult": ".api",
        "build_target": ".api",
        "design": ".api",
        "run_design": ".api",
        "PRESETS": ".constraints",
        "Constraints": ".constraints",
        "mutant_string": ".constraints",
        "DesignJob": ".job",
        "chain_row": ".job",
        "chain_rows": ".job",
        "DesignInfo": ".kernels",
        "DesignState": ".kernels",
        "mh_kernel": ".kernels",
        "swap_step": ".kernels",
        "DesignSpec": ".spec",
        "Expert": ".terms",
        "Hamming": ".terms",
        "Oracle": ".terms",
        "Target": ".terms",
    },
)

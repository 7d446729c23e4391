"""Model layer: the MaskedLM protocol, wrappers, loaders and exact toy models."""

from typing import TYPE_CHECKING

from ..lazy import exports

if TYPE_CHECKING:  # for the type checker: the one name read through this namespace inside the package
    from .loading import load_mlm as load_mlm

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "ExactMLM": ".exact",
        "LookupMLM": ".exact",
        "all_sequences": ".exact",
        "HFMaskedLM": ".hf",
        "BUILTIN": ".loading",
        "load_mlm": ".loading",
        "MaskedLM": ".protocol",
        "gather_logits": ".protocol",
        "Reader": ".reader",
        "reader_of": ".reader",
        "Encoding": ".tokenizers",
        "HFTokenizer": ".tokenizers",
        "ResidueTokenizer": ".tokenizers",
    },
)

"""Model layer: the MaskedLM protocol, wrappers, loaders and exact toy models."""

from .exact import ExactMLM, LookupMLM, all_sequences
from .hf import HFMaskedLM
from .loading import BUILTIN, load_mlm
from .protocol import MaskedLM, gather_logits
from .reader import Reader, reader_of
from .tokenizers import Encoding, HFTokenizer, ResidueTokenizer

__all__ = ["ExactMLM", "LookupMLM", "all_sequences", "HFMaskedLM", "BUILTIN", "load_mlm", "MaskedLM",
           "gather_logits", "Reader", "reader_of", "Encoding", "HFTokenizer", "ResidueTokenizer"]

"""Build synthetic languages from a few named parameters, and save/load them exactly (safetensors)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..errors import MLMProbError
from ..jsonl import dumps
from .base import SyntheticLanguage
from .chain import ChainLanguage
from .grid import PottsGrid
from .hmm import HMM
from .kinds import KINDS
from .potts import PottsChain


def make_language(
    kind: str,
    vocab_size: int,
    length: int,
    seed: int = 0,
    *,
    coupling: float = 1.0,
    field_scale: float = 1.0,
    n_states: int = 4,
    concentration: float = 0.5,
    rows: int = 2,
) -> SyntheticLanguage:
    """A random language of the given ``kind``, deterministic in ``seed``: ``"potts"`` (chain),
    ``"hmm"`` or ``"grid"`` (a Potts grid of ``rows`` rows and ``length / rows`` columns).

    >>> lang = make_language("potts", 5, 8, seed=3, coupling=2.0)
    >>> lang.vocab_size, lang.length, lang.coupling
    (5, 8, 2.0)
    """
    _check_size(kind, vocab_size, length, n_states)
    g = torch.Generator().manual_seed(int(seed))
    if kind == "potts":
        return PottsChain(vocab_size, length, coupling=coupling, field_scale=field_scale, generator=g)
    if kind == "hmm":
        return HMM.random(vocab_size, n_states, length, generator=g, concentration=concentration)
    if kind == "grid":
        if rows < 1 or length % rows:
            raise MLMProbError(f"a grid of {rows} rows needs a length divisible by {rows}, got {length}")
        return PottsGrid(vocab_size, rows, length // rows, coupling=coupling, field_scale=field_scale, generator=g)
    raise MLMProbError(f"unknown synthetic language {kind!r}; use one of {', '.join(KINDS)}")


#: The most numbers a language's defining tables may hold (float64: 800 MB); a typo such as ``--vocab-size
#: 1000000000`` is refused in one line before they are made.
MAX_TABLE_ENTRIES = 10**8


def _check_size(kind: str, vocab_size: int, length: int, n_states: int) -> None:
    """Refuse a language whose tables (couplings ``length x V x V``; an HMM's ``S x S`` and ``S x V``) would pass
    :data:`MAX_TABLE_ENTRIES`."""
    v, n, s = int(vocab_size), int(length), int(n_states)
    entries = s * s + s * v + n * v if kind == "hmm" else 2 * n * v * v + n * v
    if entries > MAX_TABLE_ENTRIES:
        what = f"{s:,} hidden states, " if kind == "hmm" else ""
        raise MLMProbError(
            f"a {kind} language of {what}{v:,} symbols and length {n:,} would have about {entries:,} parameters, "
            f"more than the {MAX_TABLE_ENTRIES:,} a language may: make it smaller"
        )


def save_language(language: SyntheticLanguage, path) -> Path:
    """Write the defining tensors and the spec to a ``.safetensors`` file."""
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().contiguous().clone() for k, v in language.tensors().items()}
    save_file(tensors, str(path), metadata={"spec": dumps(language.spec())})
    return path


def load_language(path) -> SyntheticLanguage:
    """Read a language written by ``save_language``; its conditionals are bit-identical."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise MLMProbError(f"no synthetic language file at {path}")
    with safe_open(str(path), framework="pt") as f:
        spec = json.loads((f.metadata() or {}).get("spec", "{}"))
        t = {k: f.get_tensor(k) for k in f.keys()}
    kind = spec.get("kind")
    if kind == "potts":
        return PottsChain(spec["vocab_size"], spec["length"], spec["coupling"], spec["field_scale"], fields=t["fields"])
    if kind == "hmm":
        lang = HMM(t["initial"], t["transition"], t["emission"], spec["length"])
        lang.concentration = spec.get("concentration")
        return lang
    if kind == "potts-grid":
        return PottsGrid(
            spec["vocab_size"], spec["rows"], spec["cols"], spec["coupling"], spec["field_scale"], fields=t["fields"]
        )
    if kind == "chain":
        return ChainLanguage(t["unary"], t["pairwise"], t["emission"])
    raise MLMProbError(f"{path} does not hold a synthetic language (spec kind {kind!r})")

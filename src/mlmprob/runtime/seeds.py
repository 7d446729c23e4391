"""The one derivation of generator seeds from a run's ``seed``: :func:`derive_seed` and :func:`seeded_generator`.

Every random stream the package draws gets its own ``torch.Generator`` seeded by ``derive_seed(seed, purpose,
*keys)``: a result depends only on the run's seed and what it is about, never on the shard, worker or chunk. The
derivations differ per purpose because stored outputs were made with them; each is kept bit for bit
(``tests/runtime/test_seeds.py`` pins them), the same in every process and Python version (no ``hash``):

- ``record`` (record id): BLAKE2b-64 of ``"{seed}\\0{id}"``, 63 bits: a streamed record's generator (``mlmprob
  sample``); the derivation for new streams.
- ``stream`` (any names and numbers): SHA-256 of ``"seed:key:key..."``, first 8 bytes, 63 bits: named streams of
  training and the experiments, ``mlmprob.loglik``'s orders from a spec's seed.
- ``loglik`` (the record's sequence): ``(seed * 1000003 + crc32(sequence)) mod 2**63``: the orders of ``mlmprob
  score --likelihood loglik``.
- ``variant`` (the variant's sites, a list): ``(seed * 1000003 + crc32(repr(sites))) mod 2**63``: the orders of the
  ``chain`` variant score.
- ``pair`` (scheme index, record index): ``seed * 1000003 + k * 100003 + i``: a joints pair draw.
- ``cdr-h3`` (configuration name): ``(seed * 1000003 + crc32(name)) mod 2**62``: a CDR-H3 experiment configuration's
  chains."""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable

import torch

from ..errors import MLMProbError


def _record(seed: int, record_id) -> int:
    digest = hashlib.blake2b(f"{int(seed)}\x00{record_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)


def _stream(seed: int, *keys) -> int:
    digest = hashlib.sha256(":".join(map(str, (seed, *keys))).encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def _crc(seed: int, text: str, bits: int) -> int:
    return (int(seed) * 1_000_003 + zlib.crc32(text.encode())) % (1 << bits)


_DERIVATIONS: dict[str, Callable[..., int]] = {
    "record": _record,
    "stream": _stream,
    "loglik": lambda seed, sequence: _crc(seed, sequence, 63),
    "variant": lambda seed, sites: _crc(seed, repr(list(sites)), 63),
    "pair": lambda seed, k, i: seed * 1_000_003 + k * 100_003 + i,
    "cdr-h3": lambda seed, name: _crc(seed, name, 62),
}

#: The purposes :func:`derive_seed` knows (the list of the module doc).
PURPOSES = tuple(_DERIVATIONS)


def derive_seed(seed: int, purpose: str, *keys) -> int:
    """The generator seed of the stream ``purpose`` with ``keys`` under the run's ``seed`` (module doc)."""
    if purpose not in _DERIVATIONS:
        raise MLMProbError(f"unknown seed purpose {purpose!r}; one of {', '.join(PURPOSES)}")
    return _DERIVATIONS[purpose](seed, *keys)


def check_generator(generator, name: str = "generator") -> torch.Generator:
    """``generator`` if it is a CPU ``torch.Generator`` (every draw is made on the CPU, whatever the model's
    device); anything else (a seed number, a generator of another device) is refused in one line."""
    if not isinstance(generator, torch.Generator):
        seed = generator if isinstance(generator, int) and not isinstance(generator, bool) else "SEED"
        raise MLMProbError(
            f"{name} must be a torch.Generator, got {type(generator).__name__} {str(generator)[:40]} "
            f"(write {name}=torch.Generator().manual_seed({seed}))"
        )
    if generator.device.type != "cpu":
        raise MLMProbError(
            f"{name} must be a CPU torch.Generator (mlmprob draws its random numbers on the CPU whatever the "
            f"model's device), got one on {generator.device}"
        )
    return generator


def seeded_generator(seed: int, purpose: str, *keys) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with ``derive_seed(seed, purpose, *keys)``."""
    return torch.Generator().manual_seed(derive_seed(seed, purpose, *keys))

"""A run's identity (the ``identity`` block of ``OUT.meta.json``), checked by ``--resume`` and ``mlmprob merge``.

- ``input_sha256``, ``input_units``: a digest of the units the run read (as parsed) and their number. A resume is
  accepted when its first ``input_units`` units have the stored digest (a grown input or a larger ``--limit``
  continues); merged parts must have read the same units.
- ``weights``: ``sha256:...`` of a local folder's model files (each file's digest cached in
  ``$XDG_CACHE_HOME/mlmprob/file-digests.json``), ``PACKAGE==VERSION`` for a model embedded in a package, absent
  when unknown. Differing weights are refused."""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

from ..errors import MLMProbError
from .safefs import cache_file, save_cache

KEY = "identity"
_SHOWN = 12  # hex digits of a digest shown in a message
_RACY_NS = 2_000_000_000  # a file modified this close to its hashing is hashed again next time (as git does)
_CACHE_ENTRIES = 4096
DIGESTS = "file-digests.json"  # the cache of model files' digests
MODEL_FILES = tuple(
    "*.safetensors *.bin *.pt *.pth *.ckpt *.h5 *.msgpack *.index.json config.json tokenizer* vocab* merges.txt "
    "special_tokens_map.json *.model".split()
)
NOT_MODEL_FILES = ("one_pass.*",)  # the one-pass correction fitted beside a model (its own digest is stored)
PACKAGES = {"antiberty": "antiberty", "sapiens-vh": "sapiens", "sapiens-vl": "sapiens"}


class IdentityMismatch(MLMProbError):
    """A resumed output or a merged part was computed from another input or other weights."""


def _plain(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


class UnitDigest:
    """SHA-256 over a stream of units (each one's fields as canonical JSON, one line each), with the digest
    kept at the unit counts named in ``checkpoints`` (to check that an input's first N units are unchanged)."""

    def __init__(self, checkpoints: Iterable[int] = ()):
        self._h, self.n = hashlib.sha256(), 0
        self._want = {int(c) for c in checkpoints}
        self._at: dict[int, str] = {0: self._h.hexdigest()}

    @classmethod
    def of(cls, units: Iterable) -> UnitDigest:
        d = cls()
        for u in units:
            d.add(u)
        return d

    def add(self, unit) -> None:
        text = json.dumps(_plain(unit), sort_keys=True, ensure_ascii=False, allow_nan=True)
        self._h.update(text.encode("utf-8", "surrogatepass") + b"\n")
        self.n += 1
        if self.n in self._want:
            self._at[self.n] = self._h.hexdigest()

    def hexdigest(self) -> str:
        return self._h.hexdigest()

    def at(self, n: int) -> str | None:
        """The digest of the first ``n`` units (None when ``n`` was not a checkpoint or was not reached)."""
        return self.hexdigest() if n == self.n else self._at.get(n)


# -- the model's files ---------------------------------------------------------------------------------
def _stat_key(st: os.stat_result) -> list:
    return [st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns]


def file_sha256(path: Path, cache: dict) -> str:
    """The SHA-256 of ``path``, from ``cache`` when its size, inode, mtime and ctime are those it was hashed
    with (and it was not modified within 2 s of that hashing); else read and, when settled, cached."""
    real = os.path.realpath(path)
    st = os.stat(real)
    hit = cache.get(real)
    if isinstance(hit, list) and len(hit) == 6 and hit[:4] == _stat_key(st) and hit[2] < hit[4] - _RACY_NS:
        return str(hit[5])
    with open(real, "rb") as f:
        h = hashlib.file_digest(f, "sha256")
    cache.pop(real, None)
    cache[real] = [*_stat_key(st), time.time_ns(), h.hexdigest()]
    return h.hexdigest()


def _is_model_file(name: str) -> bool:
    return any(fnmatch.fnmatch(name, p) for p in MODEL_FILES) and not any(
        fnmatch.fnmatch(name, p) for p in NOT_MODEL_FILES
    )


def folder_digest(folder: str | Path) -> str | None:
    """``sha256:...`` over the model files of ``folder`` (their names and digests), None when it holds none."""
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if _is_model_file(p.name) and p.is_file())
    if not files:
        return None
    try:
        cache = json.loads(cache_file(DIGESTS).read_text())
    except (OSError, ValueError):
        cache = {}
    cache = cache if isinstance(cache, dict) else {}
    before, h = dict(cache), hashlib.sha256()
    try:
        for p in files:
            h.update(f"{p.name}\0{file_sha256(p, cache)}\n".encode())
    except OSError as e:
        raise MLMProbError(f"cannot read the model file {e.filename or folder}: {e.strerror or e}") from None
    if cache != before:  # the newest entries kept
        save_cache(cache_file(DIGESTS), json.dumps(dict(list(cache.items())[-_CACHE_ENTRIES:])), "the digest cache")
    return "sha256:" + h.hexdigest()


def _hub_folder(model: str) -> Path | None:
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, "config.json")
    except Exception:  # not installed, not a repository id: then the weights are not identified
        return None
    return Path(found).parent if isinstance(found, str) else None


def weights_identity(model) -> str | None:
    """What the files of ``model`` (a built-in name, a local folder or a hub id) are, for the identity."""
    if not isinstance(model, (str, Path)) or not str(model):
        return None
    name = str(model).lower()
    if name in PACKAGES:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"{PACKAGES[name]}=={version(PACKAGES[name])}"
        except PackageNotFoundError:
            return None
    own = Path(__file__).resolve().parents[1] / "models" / "weights" / "en-small"  # the package's own model
    given = Path(model).expanduser()
    folder = own if name == "en-small" else given if given.is_dir() else _hub_folder(str(model))
    return folder_digest(folder) if folder is not None and folder.is_dir() else None


def run_identity(digest: UnitDigest | None, model) -> dict:
    """The ``identity`` block of a run that read ``digest``'s units (None: units made by the command) of
    ``model`` (or of each model of a list: a design's experts, their weights' identities in order)."""
    block: dict[str, object] = {}
    if digest is not None:
        block.update(input_sha256=digest.hexdigest(), input_units=digest.n)
    weights: object
    if isinstance(model, (list, tuple)):
        each = [weights_identity(m) for m in model]
        weights = each if any(w is not None for w in each) else None
    else:
        weights = weights_identity(model)
    if weights is not None:
        block["weights"] = weights
    return block


# -- checks --------------------------------------------------------------------------------------------
def _short(value) -> str:
    text = str(value)
    return text if len(text) <= _SHOWN + 7 or "==" in text else text.removeprefix("sha256:")[:_SHOWN]


def check_resume(where, stored: dict | None, now: dict | None, digest: UnitDigest | None = None) -> None:
    """A resumed output's stored identity against this run's (``digest``: the pass over this run's units,
    with a checkpoint at the stored count); :class:`IdentityMismatch` naming what changed. Nothing is checked
    on what either side lacks (an output written before identities were stored)."""
    stored, now = stored or {}, now or {}
    if "input_sha256" in stored and "input_sha256" in now:
        n = int(stored.get("input_units", 0))
        if n > int(now.get("input_units", 0)):
            raise IdentityMismatch(
                f"cannot resume {where}: the input changed since it was written ({n} units then, "
                f"{now.get('input_units')} now); resume with the same input and --limit, or choose another --out"
            )
        prefix = digest.at(n) if digest is not None else (now["input_sha256"] if n == now.get("input_units") else None)
        if prefix != stored["input_sha256"]:
            raise IdentityMismatch(
                f"cannot resume {where}: the input changed since it was written (digest of its "
                f"first {n} units {_short(stored['input_sha256'])} then, {_short(prefix)} now); "
                "resume with the same input, or choose another --out"
            )
    if "weights" in stored and "weights" in now and stored["weights"] != now["weights"]:
        raise IdentityMismatch(
            f"cannot resume {where}: the model's weights changed since it was written ({_short(stored['weights'])} "
            f"then, {_short(now['weights'])} now); use the same weights, or choose another --out"
        )


def check_parts(paths: list, identities: list[dict | None]) -> None:
    """Every merged part read the same input with the same weights (what a part lacks is not checked)."""
    for key, what in (("input_sha256", "different inputs"), ("weights", "different model weights")):
        units = " ({} units)" if key == "input_sha256" else ""
        known = [
            (p, _short(i[key]) + units.format(i.get("input_units")))
            for p, i in zip(paths, identities, strict=True)
            if i and i.get(key) is not None
        ]
        for p, value in known[1:]:
            if value != known[0][1]:
                raise IdentityMismatch(
                    f"parts were computed from {what}: {known[0][0]} has {known[0][1]}, {p} has {value}"
                )

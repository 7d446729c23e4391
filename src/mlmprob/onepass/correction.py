"""The one-pass correction ``h'_t = h_t + h_t U + e(x_t) M + b`` (``e``: the input embedding) of a model's unmasked
final hidden states, fitted so that ``head(h'_t)`` matches the exact masked conditional (the unmasked pass sees the
token it scores and is too confident; ``U = M = 0, b = 0`` is that plain estimate). Stored as safetensors with a JSON
description beside it (the model, a fingerprint of its embeddings, the calibration data, the held-out KL)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..errors import MLMProbError
from ..models.reader import name_of

FILE_STEM = "one_pass"
FITTED_DIR = Path(__file__).resolve().parent / "fitted"


@dataclass
class Correction:
    """``U [H, H]``, ``M [H, H]``, ``b [H]`` (float32) and the description of how they were fitted."""

    U: torch.Tensor
    M: torch.Tensor
    b: torch.Tensor
    info: dict = field(default_factory=dict)

    @classmethod
    def identity(cls, hidden: int, info: dict | None = None) -> Correction:
        """The zero correction: the plain unmasked estimate.

        >>> Correction.identity(4).apply(torch.ones(2, 4), torch.zeros(2, 4)).tolist()
        [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
        """
        z = torch.zeros(hidden, hidden)
        return cls(z, z.clone(), torch.zeros(hidden), dict(info or {}))

    @property
    def hidden_size(self) -> int:
        return int(self.b.shape[0])

    def apply(self, hidden: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        """Corrected hidden states ``[N, H]`` from unmasked ones and the input embeddings of the tokens."""
        return hidden + hidden @ self.U + emb @ self.M + self.b

    def parameters(self) -> list[torch.Tensor]:
        return [self.U, self.M, self.b]

    def save(self, path: str | Path) -> tuple[Path, Path]:
        """Write ``path`` (``.safetensors``) and its ``.json`` description; returns both paths."""
        from safetensors.torch import save_file

        path = Path(path)
        if path.suffix != ".safetensors":
            raise MLMProbError(f"a correction is written as .safetensors, got {path}")
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file(
            {k: t.detach().float().contiguous() for k, t in zip("UMb", self.parameters(), strict=True)}, str(path)
        )
        meta = path.with_suffix(".json")
        meta.write_text(json.dumps(self.info, indent=1, sort_keys=True) + "\n")
        return path, meta

    @classmethod
    def load(cls, path: str | Path) -> Correction:
        """Read a correction written by :meth:`save` (its JSON description beside it, if present)."""
        from safetensors.torch import load_file

        path = Path(path)
        if not path.is_file():
            raise MLMProbError(f"no one-pass correction at {path}")
        try:
            t = load_file(str(path))
            U, M, b = t["U"].float(), t["M"].float(), t["b"].float()
        except Exception as e:  # noqa: BLE001 - any unreadable file becomes one line
            raise MLMProbError(f"{path} is not a one-pass correction ({type(e).__name__}: {str(e)[:120]})") from None
        H = b.shape[0]
        if U.shape != (H, H) or M.shape != (H, H):
            raise MLMProbError(f"{path}: U {tuple(U.shape)} / M {tuple(M.shape)} do not fit b of size {H}")
        meta = path.with_suffix(".json")
        info = json.loads(meta.read_text()) if meta.is_file() else {}
        return cls(U, M, b, info)


def fingerprint(mlm) -> float:
    """A number that tells one model's weights from another's: the mean absolute input embedding."""
    emb = mlm.model.get_input_embeddings().weight
    return round(float(emb.detach().double().abs().mean()), 6)


def check_fits(c: Correction, mlm, where: str) -> Correction:
    """``c`` if it was fitted for ``mlm`` (sizes and fingerprint), else a one-line error."""
    hidden = int(mlm.model.config.hidden_size) if hasattr(mlm.model.config, "hidden_size") else c.hidden_size
    if c.hidden_size != hidden:
        raise MLMProbError(f"the one-pass correction {where} has hidden size {c.hidden_size}, the model {hidden}")
    fp = c.info.get("fingerprint")
    if fp is not None and abs(fp - fingerprint(mlm)) > 1e-5 * max(abs(fp), 1e-6):
        raise MLMProbError(
            f"the one-pass correction {where} was fitted for other weights "
            f"({c.info.get('model', '?')}); refit it with mlmprob calibrate"
        )
    return c


def calibrate_hint(mlm) -> str:
    """The error for a model without a correction: the command that fits one."""
    name = name_of(mlm)
    how = (
        f"` (it writes {Path(name) / (FILE_STEM + '.safetensors')}, found from then on)"
        if Path(name).is_dir()
        else " --out C.safetensors`, then pass correction='C.safetensors' (CLI: --correction C.safetensors)"
    )
    return f"no one-pass correction for model {name!r}: fit one with `mlmprob calibrate SEQUENCES --model {name}{how}"


def correction_file(name: str) -> Path | None:
    """The correction file :func:`find_correction` reads, without one given, for a model named ``name``
    (a local folder's path as given, or a built-in name): ``one_pass.safetensors`` in the folder, else the
    one shipped for the built-in model; None when there is none."""
    for path in (Path(name) / f"{FILE_STEM}.safetensors", FITTED_DIR / f"{name}.safetensors"):
        try:
            if path.is_file():
                return path
        except OSError:
            pass
    return None


def correction_digest(name: str, correction=None) -> str | None:
    """SHA-256 of the correction file a run of model ``name`` uses (``correction`` when given, else
    :func:`correction_file`); None when there is none. Part of a one-pass run's stored configuration: a
    correction refitted in place changes every estimate."""
    import hashlib

    path = Path(correction) if correction is not None else correction_file(name)
    try:
        return None if path is None else hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None  # the run itself says what is wrong with it


def find_correction(mlm, correction=None) -> Correction:
    """The correction for ``mlm``: ``correction`` (a :class:`Correction` or a path) when given, else the one
    beside a local model folder (``one_pass.safetensors``), else the one shipped for a built-in model."""
    if isinstance(correction, Correction):
        return correction
    if correction is not None:
        return check_fits(Correction.load(correction), mlm, str(correction))
    path = correction_file(name_of(mlm))
    if path is not None:
        return check_fits(Correction.load(path), mlm, str(path))
    raise MLMProbError(calibrate_hint(mlm))

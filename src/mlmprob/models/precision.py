"""The precision a model runs in (``load_mlm(..., dtype=)``): float32, bfloat16 or float16 (every weight cast), or
int8: dynamic W8A8 on the encoder's ``nn.Linear`` layers (:class:`Int8Linear`: int8 weights with one symmetric scale
per output channel, activations quantized per call to uint8, 7-bit ``reduce_range`` without AVX512-VNNI, where
AVX2's ``vpmaddubsw`` saturates in int16). Embeddings, norms, attention, the LM head and the first twelfth of the
layers stay float32 (:func:`int8_float_layers`; docs/results/int8_attention.md). Logits are read as float32."""

from __future__ import annotations

import warnings

import torch

from ..errors import ModelLoadError
from ..runtime.device import cpu_flags, int8_float_layers, int8_reduce_range  # noqa: F401 - re-exported

INT8 = torch.int8


class Int8Linear(torch.nn.Module):
    """``nn.Linear`` with int8 weights (per output channel) and activations quantized on the fly."""

    def __init__(self, packed, in_features: int, out_features: int):
        super().__init__()
        self._packed, self.in_features, self.out_features = packed, in_features, out_features
        self.reduce_range = int8_reduce_range()

    @classmethod
    def from_linear(cls, lin: torch.nn.Linear) -> Int8Linear:
        w = lin.weight.detach().float().cpu()
        scale = (w.abs().amax(dim=1) / 127.0).clamp_min(1e-12).double()
        zero = torch.zeros(w.shape[0], dtype=torch.long)
        b = None if lin.bias is None else lin.bias.detach().float().cpu()
        with warnings.catch_warnings():  # the quantized-tensor constructors warn of the old torch.ao API
            warnings.simplefilter("ignore")
            packed = torch.ops.quantized.linear_prepack(torch.quantize_per_channel(w, scale, zero, 0, torch.qint8), b)
        return cls(packed, lin.in_features, lin.out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.quantized.linear_dynamic(x.float().contiguous(), self._packed, self.reduce_range)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


def int8_supported() -> bool:
    """Whether this torch build has the fbgemm int8 kernels (x86 CPUs)."""
    return "fbgemm" in torch.backends.quantized.supported_engines


def quantize_linears(module: torch.nn.Module, skip: tuple[torch.nn.Module, ...] = ()) -> int:
    """Replace every ``nn.Linear`` inside ``module`` by an :class:`Int8Linear`, in place, except inside the
    modules of ``skip``; returns how many."""
    n = 0
    for name, child in list(module.named_children()):
        if any(child is s for s in skip):
            continue
        if isinstance(child, torch.nn.Linear):
            setattr(module, name, Int8Linear.from_linear(child))
            n += 1
        else:
            n += quantize_linears(child, skip)
    return n


def _float_layers(base: torch.nn.Module) -> tuple[torch.nn.Module, ...]:
    """The first :func:`int8_float_layers` layers of ``base.encoder.layer`` (none without that list)."""
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    return tuple(layers[: int8_float_layers(len(layers))]) if isinstance(layers, torch.nn.ModuleList) else ()


def weights_dtype(model: torch.nn.Module, device) -> torch.dtype:
    """The dtype ``dtype=None`` / ``"weights"`` computes ``model`` in on ``device``: its weights' own floating-point
    dtype (float32 when none is), except float32 for float16 and bfloat16 weights on a CPU (which it holds exactly):
    CPU half-precision kernels are slow without native units and round differently on CPUs with and without them."""
    first = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    return torch.float32 if first in (torch.float16, torch.bfloat16) and torch.device(device).type == "cpu" else first


def apply_precision(model: torch.nn.Module, device, dtype: torch.dtype | None) -> torch.nn.Module:
    """``model`` on ``device`` in ``dtype`` (None: :func:`weights_dtype`); ``torch.int8`` quantizes the base model's
    linear layers but the first (:func:`int8_float_layers`) and needs the CPU."""
    model = model.to(device=device)
    if dtype is None:
        if weights_dtype(model, device) != torch.float32 or all(
            p.dtype == torch.float32 for p in model.parameters() if p.is_floating_point()
        ):
            return model.eval()  # as loaded (a checkpoint's float32-kept modules stay so)
        dtype = torch.float32  # half-precision weights on a CPU
    if dtype != INT8:
        return model.to(dtype=dtype).eval()
    if torch.device(device).type != "cpu" or not int8_supported():
        raise ModelLoadError(
            f"dtype int8 runs on x86 CPUs only (fbgemm kernels); got device {device}, "
            f"quantized engines {torch.backends.quantized.supported_engines}"
        )
    model = model.float().eval()
    base = getattr(model, getattr(model, "base_model_prefix", ""), None)
    if not isinstance(base, torch.nn.Module) or quantize_linears(base, _float_layers(base)) == 0:
        raise ModelLoadError(f"dtype int8: found no linear layers to quantize in {type(model).__name__}")
    model._mlmprob_dtype = INT8  # type: ignore[assignment]  # a plain attribute: nn.Module types only tensors
    return model


def model_dtype(model: torch.nn.Module) -> torch.dtype:
    """The precision ``model`` runs in (``torch.int8`` for a quantized one)."""
    return getattr(model, "_mlmprob_dtype", None) or next(model.parameters()).dtype

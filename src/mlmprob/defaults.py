"""Every default the library and the CLI share, chosen once (docs/cli.md lists them).

- ``MODEL``: the model a command loads without ``--model`` (``mlmprob variants``: ``VARIANTS_MODEL``, its
  ``--help`` says why).
- ``DEVICE``: ``auto`` = CUDA, else MPS, else the CPU; ``DEVICE_TYPES``: the torch device types mlmprob computes
  on (any other is refused in one line by ``--device``, ``--devices`` and ``load_mlm``).
- ``DTYPE``: ``weights`` = the weights' own dtype (a float16/bfloat16 checkpoint on a CPU computes in float32), the
  default of ``load_mlm`` and ``--dtype`` alike; ``auto`` (opt-in) is the hardware's fast precision
  (:func:`mlmprob.runtime.device.auto_dtype`, docs/guides/precision.md). ``$MLMPROB_DTYPE`` (``DTYPE_ENV``)
  overrides the CLI's default and what ``auto`` means (:func:`default_dtype_spec`), not ``load_mlm``'s.
- ``FUSED_ENV``: ``$MLMPROB_FUSED=0`` runs transformers' own forward instead of :mod:`mlmprob.models.fused`.
- ``BATCH_TOKENS``: the token budget of one forward sub-batch on a CPU (GPUs size it from their free memory:
  :func:`mlmprob.batching.auto_batch_tokens`); docs/results/precision/batch_budget.md.
- ``MKL_CBWR``: the variable and value ``import mlmprob`` sets unless set already (MKL's strict reproducibility
  mode; ``MKL_CBWR=`` turns it off); ``THREAD_INVARIANT_ENV``: ``$MLMPROB_THREAD_INVARIANT=0`` turns off the
  thread-count-invariant products (:mod:`mlmprob.runtime.threads`; docs/results/precision/threads_repro.md).
- ``PART_ROWS``: rows per committed Parquet part of a streamed output; ``COUNT_LIMIT``: a streamed command counts
  its input's units for the bar's total only below this file size (generated inputs are always counted).
- ``MAX_INPUT_LINE``: the most bytes of one input line (newline included), FASTA record or CSV/TSV cell; a longer
  one is refused naming the file and line (lines are read in pieces of at most this size).

This module imports nothing from the package: every layer may read it."""

import os

MODEL = "antiberty"
BUILTIN_MODELS = ("antiberty", "sapiens-vh", "sapiens-vl", "en-small")  # all float32 weights
VARIANTS_MODEL = "sapiens-vh"
VARIANTS_MODEL_WHY = (
    "the only model whose wt_marginals beat the Hamming-distance baseline on the real variant "
    "library, docs/results/variants"
)
DEVICE = "auto"
DEVICE_TYPES = ("cpu", "cuda", "mps")
DTYPE_WEIGHTS = "weights"
DTYPE = DTYPE_WEIGHTS
DTYPE_ENV = "MLMPROB_DTYPE"
FUSED_ENV = "MLMPROB_FUSED"
BATCH_TOKENS = 4096
MKL_CBWR = ("MKL_CBWR", "AUTO,STRICT")
THREAD_INVARIANT_ENV = "MLMPROB_THREAD_INVARIANT"
PART_ROWS = 1024
COUNT_LIMIT = 256 << 20
MAX_INPUT_LINE = 8 << 20


def default_dtype_spec() -> str:
    """The CLI's ``--dtype`` default: ``$MLMPROB_DTYPE`` when set, else :data:`mlmprob.defaults.DTYPE`
    (``weights``, ``load_mlm``'s default too)."""
    return os.environ.get(DTYPE_ENV) or DTYPE

"""Every default the library and the CLI share, chosen once (docs/cli.md lists them).

- ``MODEL``: the model a command loads without ``--model``. ``mlmprob variants`` deviates
  (``VARIANTS_MODEL``); its ``--help`` says why.
- ``DEVICE``: ``auto`` = CUDA, else MPS, else the CPU (:func:`mlmprob.runtime.device.resolve_device`).
- ``DEVICE_TYPES``: the torch device types mlmprob computes on (``cuda:1``: a type and an index); any other
  (``meta``, which holds no values, ``xla``, ...) is refused in one line by ``--device``, ``--devices`` and
  ``load_mlm``.
- ``DTYPE``: ``weights`` (``DTYPE_WEIGHTS``) = the weights' own dtype: float32 for every built-in model, a
  hub or folder model's checkpoint dtype, except that a float16/bfloat16 checkpoint on a CPU computes in
  float32 (:mod:`mlmprob.runtime.device`). So the same call gives the same numbers on every machine.
  ``load_mlm`` and the CLI's ``--dtype`` both default to it, so ``mlmprob score`` and ``mlmprob.pll`` on
  a model from ``load_mlm(name)`` compute in the same dtype. ``auto`` (opt-in) is the fast precision
  chosen by the hardware (:func:`mlmprob.runtime.device.auto_dtype`: bfloat16 on CPUs whose measured bf16
  matmul is 1.5x faster and on recent GPUs, moving AntiBERTy's PLL by 0.0026 nats per token, docs/guides/precision.md).
  ``$MLMPROB_DTYPE`` (``DTYPE_ENV``) overrides the CLI's default and what ``auto`` means
  (:func:`default_dtype_spec`), not ``load_mlm``'s default.
- ``FUSED_ENV``: ``$MLMPROB_FUSED=0`` turns off mlmprob's fused forward of ESM-2, BERT and RoBERTa
  (:mod:`mlmprob.models.fused`; on by default, ``load_mlm(..., fused=False)`` per model) and runs
  transformers' own code: the same function, different rounding.
- ``BATCH_TOKENS``: the token budget of one forward sub-batch on a CPU (GPUs size it from their free
  memory: :func:`mlmprob.batching.auto_batch_tokens`; a model reader without a budget of
  its own, :class:`mlmprob.models.reader.Reader`, uses this choice). 4096 tokens (33 rows of an antibody
  chain): exact PLL ran 1.03-1.38x faster than with 65536 on AntiBERTy, Sapiens and ESM-2 in every
  precision (``bench/batch_budget.py``, docs/results/precision/batch_budget.md): smaller activations stay in the caches.
- ``MKL_CBWR``: the environment variable and value that ``import mlmprob`` sets unless it is set already,
  before torch's first MKL call: Intel MKL's conditional numerical reproducibility in strict mode. Alone it
  left small products thread-dependent; what makes ``--threads``/``--workers`` leave a record's float32
  scores unmoved is ``THREAD_INVARIANT_ENV``'s mechanism (``bench/bench_threads_repro.py``,
  docs/results/precision/threads_repro.md: both costs). ``MKL_CBWR=`` (empty) turns it off.
- ``THREAD_INVARIANT_ENV``: ``$MLMPROB_THREAD_INVARIANT=0`` turns off mlmprob's thread-count-invariant
  matrix products (:mod:`mlmprob.runtime.threads`: single-threaded MKL per fixed block of rows, the
  blocks on the threads), on by default.
- ``PART_ROWS``: rows per committed Parquet part of a streamed output.
- ``COUNT_LIMIT``: a streamed command counts its units for the progress bar's total only when its input
  file is smaller than this (counting reads the input once more); inputs it generates (``--saturate``,
  ``joints``' pairs, ``--seq``) are always counted.
- ``MAX_INPUT_LINE``: the most bytes one line of an input file (text, FASTA, CSV/TSV, JSONL) may hold, its
  newline included, and the most characters of one FASTA record or CSV/TSV cell: 8 MiB, over 200 times the
  longest known protein (titin, 35,000 residues) and thousands of times any model's maximum length. A longer
  line is refused naming the file and line, read in pieces of at most this size (a file without a newline is
  never read whole).

This module imports nothing from the package: every layer may read it.

>>> MODEL, DEVICE, DTYPE, VARIANTS_MODEL
('antiberty', 'auto', 'weights', 'sapiens-vh')
"""

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

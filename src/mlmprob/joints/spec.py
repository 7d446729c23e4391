"""``JointsSpec``: the settings of one pairwise-joint experiment (``mlmprob joints``,
:class:`~mlmprob.joints.job.JointsJob`, :func:`~mlmprob.joints.job.run_joints`), frozen and validated once where it
is made; :meth:`JointsSpec.recorded` (every field but ``n_pairs``), with the job's model and data, is what a record
file stores and a resumed run must match."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from ..argtypes import checked, positive_int
from ..errors import MLMProbError
from ..fields import option
from ..runtime.inputs import FORMATS
from ..settings import Spec, check_int, check_seed

SCHEMES = ("random", "contiguous")
MAX_PAIRS = 1_000_000  # pairs per scheme: the run keeps every pair's id (its records' keys) in memory
MAX_AG_STEPS = 1_000_000  # Arnold-Gokhale updates of one pair (--ag-steps, --ag-max-steps)
DEFAULT_COLUMN = "HC"  # the sequence column of a CSV/TSV data file when none is named


def check_ag_tol(ag_tol) -> None:
    """Refuse an AG tolerance that is not a finite number >= 0 (``nan`` or ``-1`` ran silently to ``ag_max_steps``).
    0 is a setting: an update never moves the joint by less than 0, so AG runs ``ag_max_steps`` updates and reports
    no convergence."""
    if isinstance(ag_tol, bool) or not isinstance(ag_tol, (int, float)) or not 0 <= ag_tol < float("inf"):
        raise MLMProbError(f"ag_tol must be a finite number >= 0 (total variation), got {ag_tol!r}")


def check_ag_steps(value, name: str = "ag_steps") -> None:
    """Refuse ``ag_steps`` (fixed AG updates; 0: the uniform joint) that is not an integer >= 0, or ``ag_max_steps``
    (the cap when running to ``ag_tol``) that is not one >= 1; either past :data:`MAX_AG_STEPS`."""
    lo, what = (0, "None (run to ag_tol) or an integer >= 0") if name == "ag_steps" else (1, "an integer >= 1")
    check_int(name, value, lo, what)
    if value > MAX_AG_STEPS:
        raise MLMProbError(f"{name} must be at most {MAX_AG_STEPS:,} (AG updates per pair), got {value}")


def check_n_pairs(n_pairs) -> None:
    """Refuse a number of pairs per scheme below 1 or past :data:`MAX_PAIRS`."""
    if n_pairs < 1:
        raise MLMProbError(f"n_pairs must be >= 1, got {n_pairs}")
    if n_pairs > MAX_PAIRS:
        raise MLMProbError(
            f"n_pairs must be at most {MAX_PAIRS:,} per scheme (the run keeps every pair's id), got {n_pairs}"
        )


def check_ag_limits(ag_steps, ag_tol, ag_max_steps) -> None:
    """The Arnold-Gokhale settings of :class:`JointsSpec` and :class:`~mlmprob.joints.evaluate.PairSpec`, checked by
    the functions ``mlmprob joints``' flags convert with too."""
    if ag_steps is not None:
        check_ag_steps(ag_steps)
    check_ag_steps(ag_max_steps, "ag_max_steps")
    check_ag_tol(ag_tol)


@dataclass(frozen=True)
class JointsSpec(Spec):
    """One experiment's settings (``mlmprob joints``' flags of the same names:
    :func:`mlmprob.commands.common.spec_of`). ``pivot`` is ``"mode"`` (the paper's default) or ``"mask"``; ``top_k``
    None uses the full candidate vocabulary (the model's proposal ids, else its whole vocabulary).
    The job's data file is read by :func:`mlmprob.runtime.inputs.iter_records` in ``format``; ``column`` names
    the sequence column of a CSV/TSV file (``HC`` when None) or the key of JSONL/Parquet records (their
    default when None), settled for the file by :meth:`reading`.

    >>> JointsSpec().schemes, JointsSpec(schemes="random").schemes
    (('random', 'contiguous'), ('random',))
    """

    column: str | None = option(None, "sequence column of a CSV/TSV file (default HC) or key of JSONL/Parquet records")
    schemes: tuple[str, ...] = option(
        SCHEMES,
        "pair schemes: random positions, or contiguous (adjacent) positions",
        nargs="+",
        choices=SCHEMES,
        shown="both",
    )
    # recorded=False: a larger n_pairs continues the record file
    n_pairs: int = option(500, "pairs per scheme", type=checked(int, check_n_pairs), recorded=False)
    seed: int = option(0, "seed of the pair sampling", type=checked(int, check_seed))
    top_k: int | None = option(
        None,
        "approximation: restrict the candidate vocabulary to the k most probable ids (both masked)",
        type=positive_int,
    )
    pivot: str = option("mode", "HCB pivot", choices=("mode", "mask"), shown="mode of the MLM joint")
    ag_steps: int | None = option(
        None, "fixed AG steps (the paper: 50); default: to convergence", type=checked(int, check_ag_steps)
    )
    ag_tol: float = option(
        1e-10,
        "AG convergence: total-variation change per step (0: never stop early, run --ag-max-steps)",
        type=checked(float, check_ag_tol),
    )
    ag_max_steps: int = option(
        5000,
        "cap on AG steps when running to convergence",
        type=checked(int, partial(check_ag_steps, name="ag_max_steps")),
    )
    max_sequences: int | None = option(None, "use only the first N sequences of the data", type=positive_int)
    format: str = option("auto", "--data format (auto: by the suffix)", choices=FORMATS)

    def __post_init__(self):
        if self.format not in FORMATS:
            raise MLMProbError(f"unknown data format {self.format!r}; use one of {', '.join(FORMATS)}")
        object.__setattr__(self, "schemes", (self.schemes,) if isinstance(self.schemes, str) else tuple(self.schemes))
        bad = [s for s in self.schemes if s not in SCHEMES]
        if bad or not self.schemes:
            raise MLMProbError(f"unknown pair scheme(s) {bad or '(none)'}; use {', '.join(SCHEMES)}")
        if len(set(self.schemes)) != len(self.schemes):
            raise MLMProbError(f"pair schemes repeat: {', '.join(self.schemes)}")
        check_n_pairs(self.n_pairs)
        check_seed(self.seed)
        check_ag_limits(self.ag_steps, self.ag_tol, self.ag_max_steps)
        if self.pivot not in ("mode", "mask"):
            raise MLMProbError(f"pivot must be 'mode' or 'mask', got {self.pivot!r}")
        if self.top_k is not None and self.top_k < 1:
            raise MLMProbError(f"top_k must be >= 1, got {self.top_k}")
        if self.max_sequences is not None and self.max_sequences < 1:
            raise MLMProbError(f"max_sequences must be >= 1, got {self.max_sequences}")

    def reading(self, data: str) -> JointsSpec:
        """These settings for the data file ``data`` (:class:`~mlmprob.joints.job.JointsJob` settles them): its
        ``column`` is ``HC`` for a CSV/TSV file when None, and None for text and FASTA files, which have no columns.

        >>> JointsSpec().reading("a.csv").column, JointsSpec(column="x").reading("a.fasta").column
        ('HC', None)
        """
        from ..runtime.inputs import detect_format

        kind = detect_format(data) if self.format == "auto" else self.format
        if kind in ("csv", "tsv") and self.column is None:
            return self.replace(column=DEFAULT_COLUMN)
        return self.replace(column=None) if kind in ("text", "fasta") and self.column is not None else self

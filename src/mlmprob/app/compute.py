"""The web app's computations for the Score and Mutations tabs and the text each tab opens with (:func:`examples`).
Each takes a loaded model and the page's text, checks it against :class:`Limits` and returns a typed result; bad input
raises ``MLMProbError`` with the CLI's one-line message. Positions are 1-based residue (or word) numbers."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from ..errors import MLMProbError, PositionsError, TokenizationError
from ..models.reader import reader_of
from ..positions import parse_numbers, word_positions
from ..runtime.inputs import Record, fasta_records
from ..scoring import ScoreSpec, SequenceScore, score_records

if TYPE_CHECKING:
    from ..variants.saturation import Saturation

APP_ORDERS = 4  # random orders of the Score tab's chain-rule log-likelihood
APP_SCORE = ScoreSpec(per_token=True, likelihood="loglik", n_orders=APP_ORDERS)  # the Score tab's settings


@dataclass(frozen=True)
class Limits:
    """Bounds on one request, so that the app stays interactive on a CPU (the page states them)."""

    max_sequences: int = 20  # Score: sequences per request
    max_tokens: int = 256  # tokens per sequence, special tokens included (every tab)
    max_gap: int = 12  # Infill: tokens in the gap
    max_beam: int = 20  # Infill: beam size
    max_epochs: int = 200  # Sample: MH epochs (sweeps over the free positions)
    max_chains: int = 8  # Sample: chains
    max_pair_candidates: int = 40  # Pair joint: candidate tokens (the top ones of the both-masked copy beyond)
    max_pair_top: int = 20  # Pair joint: tokens shown per axis
    max_design_steps: int = 500  # Sample, design: single-site proposals per chain

    def describe(self) -> str:
        """One line for the page.

        >>> Limits().describe()[:40]
        'Limits per request: 20 sequences, 256 to'
        """
        return (
            f"Limits per request: {self.max_sequences} sequences, {self.max_tokens} tokens per sequence, "
            f"gaps of {self.max_gap} tokens, beams of {self.max_beam}, {self.max_epochs} MH epochs x "
            f"{self.max_chains} chains, pair joints over {self.max_pair_candidates} candidate tokens."
        )


LIMITS = Limits()
Progress = Callable[[int, int], None]  # progress(done, total), called as the work goes


def positions_or_cdr(text: str, positions: str, name: str = "positions") -> list[int]:
    """1-based residue numbers: ``positions`` as :func:`parse_numbers` reads them, or a CDR's name (``H3``,
    ``CDR-L1``) for that CDR of the antibody chain ``text``, numbered by anarcism (IMGT)."""
    from ..numbering import cdr_span, is_cdr_name

    if not is_cdr_name(str(positions or "")):
        return parse_numbers(positions, name)
    from ..sampling.cdr import residues_of

    start, end = cdr_span(residues_of(str(text or "")), positions)
    return list(range(start + 1, end + 1))


def encode_one(mlm, text: str, limits: Limits = LIMITS, name: str = "the sequence"):
    """The model's encoding of one text (a batch of one), within ``limits.max_tokens``."""
    if not reader_of(mlm).has_text:
        raise MLMProbError("this model has no tokenizer; the app needs one")
    if not isinstance(text, str) or not text.strip():
        raise MLMProbError(f"{name} is empty")
    try:
        enc = mlm.encode([text.strip()])
    except TokenizationError as e:
        raise TokenizationError(f"{name}: {str(e).replace('sequence 0 ', '', 1)}") from None
    if (n := int(enc.lengths[0])) > limits.max_tokens:
        raise MLMProbError(
            f"{name} has {n} tokens; the app takes at most {limits.max_tokens} "
            "(use the mlmprob command line for longer ones)"
        )
    return enc


def word_tokens(enc, numbers: list[int], name: str = "positions") -> list[int]:
    """Token positions (every token of a word) of the 1-based residue/word ``numbers`` of a one-row encoding."""
    return word_positions(enc.word_ids[0], numbers, name)


def decode(mlm, ids) -> str:
    return mlm.decode([int(i) for i in torch.as_tensor(ids).reshape(-1).tolist()])


VH = "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSYAMSWVRQAPGKGLEWVSAISGSGGSTYYADSVKGRFTISRDNSKNTLYLQMNSLRAEDTAVYYCAK"


def examples(mlm) -> dict[str, str | int]:
    """The text each tab shows first: an antibody heavy chain for a residue model, English otherwise."""
    from ..models.tokenizers import ResidueTokenizer

    if isinstance(reader_of(mlm).tokenizer, ResidueTokenizer):
        letters = getattr(reader_of(mlm).tokenizer, "residues", "")
        seq = VH if set(VH) <= set(letters) else (letters * 3)[:24]
        n, h = len(seq), len(seq) // 2
        mutant = f"{seq[1]}2{'A' if seq[1] != 'A' else 'C'}:{seq[4]}5{'A' if seq[4] != 'A' else 'C'}"
        ex: dict[str, str | int] = dict(score=seq, wt=seq, mutant=mutant, infill=seq[: h - 2] + "____" + seq[h + 2 :])
        ex.update(infill_pos="", sample=seq, positions=f"{h - 2}-{h + 2}", a=h, b=h + 2)
        if seq == VH:  # CDR-H1 to sample; the last two residues (the start of CDR-H3) as the pair
            ex.update(positions="H1", a=n - 1, b=n)
        return ex
    text = "The cat sat on the mat."
    ex = dict(score=f"{text}\nThe mat sat on the cat.", wt="", mutant="", infill="The cat ____ on the mat.")
    return {**ex, "infill_pos": "", "sample": text, "positions": "2-4", "a": 2, "b": 3}


# -- Score ---------------------------------------------------------------------------------------
def parse_sequences(text: str, limits: Limits = LIMITS) -> list[Record]:
    """Pasted input: one sequence or sentence per line (ids ``seq1``, ``seq2``, ...) or FASTA."""
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    if not lines:
        raise MLMProbError("no sequence given: paste one sequence or sentence per line, or FASTA")
    if lines[0].startswith(">"):
        fasta = fasta_records(lines, lambda: "the input", unnamed="seq{}")
        records = [Record(r.id, "".join(r.seq.split())) for r in fasta]
        if (empty := next((r.id for r in records if not r.seq), None)) is not None:
            raise MLMProbError(f"FASTA record {empty!r} has no sequence")
    elif any(line.startswith(">") for line in lines):
        raise MLMProbError("the input mixes FASTA headers ('>') with plain lines; use one form")
    else:
        records = [Record(f"seq{i + 1}", line) for i, line in enumerate(lines)]
    if len(records) > limits.max_sequences:
        raise MLMProbError(
            f"{len(records)} sequences given; the app scores at most {limits.max_sequences} at a "
            "time (use `mlmprob score` for more)"
        )
    return records


@dataclass(frozen=True)
class ScoreResult:
    """Scores of the pasted sequences (with per-token values), in input order; ``chain``: each
    sequence's chain-rule log-likelihood (``mlmprob.loglik``, mixture over ``APP_ORDERS`` orders)."""

    rows: tuple[SequenceScore, ...]
    chain: tuple[float, ...] = ()

    COLUMNS = ("id", "n_tokens", "pll", "pll_per_token", "e_raw", "loglik_mixture", "loglik_per_token")

    def table(self, digits: int = 4) -> list[list]:
        """Rows for the page: ``id, n_tokens, PLL, PLL per token, E_raw, chain loglik, chain per token`` (rounded)."""
        return [
            [r.id, r.n_tokens, *(round(x, digits) for x in (r.pll, r.pll_per_token, r.e_raw, c, c / r.n_tokens))]
            for r, c in zip(self.rows, self.chain, strict=False)  # chain: () when no loglik was computed
        ]

    def csv(self) -> str:
        """Every column at full precision, the sequence included."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow([*self.COLUMNS, "e_local", "sequence"])
        for r, c in zip(self.rows, self.chain, strict=False):  # chain: () when no loglik was computed
            values = (r.pll, r.pll_per_token, r.e_raw, c, c / r.n_tokens, r.e_local)
            w.writerow([r.id, r.n_tokens, *map(repr, values), r.sequence])
        return out.getvalue()


def score_text(
    mlm, text: str, *, limits: Limits = LIMITS, spec: ScoreSpec = APP_SCORE, progress: Progress | None = None
) -> ScoreResult:
    """PLL, PLL per token and E_raw of every pasted sequence with ``log q(x_t | rest)`` per token
    (``mlmprob.scoring.score_records``), and the chain-rule log-likelihood (``APP_ORDERS`` orders seeded by the
    sequence, as ``mlmprob score --likelihood loglik``), as ``spec`` says (it must ask for both); ``progress(done,
    total)`` after each chunk."""
    from ..likelihood.records import loglik_columns

    if not isinstance(spec, ScoreSpec) or not (spec.per_token and spec.loglik):
        raise MLMProbError("the Score tab's spec is a ScoreSpec with per_token=True and likelihood='loglik'")
    records = parse_sequences(text, limits)
    for r in records:
        encode_one(mlm, r.seq, limits, name=f"record {r.id!r}")  # the CLI's wording
    done = [0]

    def tick(n: int) -> None:
        done[0] += n
        if progress:
            progress(done[0], 2 * len(records))

    rows = list(
        score_records(mlm, records, whole_word=spec.whole_word, per_token=spec.per_token, chunk_size=4, progress=tick)
    )
    chain = []
    for r in records:
        try:
            cols = loglik_columns(mlm, r.seq, spec.loglik_spec, whole_word=spec.whole_word)
            chain.append(cols["loglik_mixture"])
        except PositionsError:  # a token outside the proposal alphabet (e.g. X): probability 0 under the chain rule
            chain.append(float("-inf"))
        except MLMProbError as e:
            raise type(e)(f"record {r.id!r}: {e}") from None
        tick(1)
    return ScoreResult(tuple(rows), tuple(chain))


# -- Mutations -------------------------------------------------------------------------------------
def clean_wild_type(text: str) -> str:
    """The wild type as one string of residue letters (a FASTA header and white space dropped)."""
    lines = [line for line in str(text or "").splitlines() if not line.strip().startswith(">")]
    seq = "".join("".join(lines).split()).upper()
    if not seq:
        raise MLMProbError("the wild type is empty")
    if not seq.isalpha():
        bad = next(c for c in seq if not c.isalpha())
        raise MLMProbError(f"the wild type holds {bad!r}; give residue letters only")
    return seq


@dataclass(frozen=True)
class SaturationMap:
    """The site-saturation table of a wild type: ``sat.masked_marginals[p, k]`` is the score of
    putting ``sat.letters[k]`` at residue ``sat.numbers[p]``."""

    wild_type: str
    sat: Saturation

    def row_labels(self) -> list[str]:
        return [f"{w}{int(n)}" for w, n in zip(self.sat.wt_letters, self.sat.numbers, strict=True)]

    def values(self) -> torch.Tensor:
        return self.sat.masked_marginals

    def mutant(self, row: int, col: int) -> str:
        return self.sat.mutant(row, col)


def saturation_map(mlm, wild_type: str, *, limits: Limits = LIMITS) -> SaturationMap:
    """Every single mutant of the wild type by ``masked_marginals`` (``mlmprob.variants.saturation``,
    ``L + 1`` forward rows)."""
    from ..variants.mutations import residue_positions
    from ..variants.saturation import saturate

    wt = clean_wild_type(wild_type)
    encode_one(mlm, wt, limits, name="the wild type")
    ids, where = residue_positions(mlm, wt)
    return SaturationMap(wt, saturate(mlm, ids, positions=where.tolist(), offset=1))


@dataclass(frozen=True)
class MutantScores:
    """One mutant's score by each method (higher = more likely than the wild type)."""

    mutant: str
    n_sites: int
    scores: dict[str, float]


def mutant_scores(mlm, wild_type: str, mutant: str, *, methods=None, limits: Limits = LIMITS) -> MutantScores:
    """``score_variants`` of one mutant string (``A23C`` or ``A23C:D45E``, 1-based) by ``methods``
    (default: all of ``mlmprob.variants.METHODS`` and ``chain``; ``ag`` is NaN unless the mutant has two sites)."""
    from ..variants.api import score_variants
    from ..variants.mutations import encode_variants
    from ..variants.spec import METHODS, VariantsSpec

    wt = clean_wild_type(wild_type)
    encode_one(mlm, wt, limits, name="the wild type")
    ev = encode_variants(mlm, wt, [str(mutant or "").strip()])
    spec = VariantsSpec(methods=methods or (*METHODS, "chain"))
    s = score_variants(mlm, ev.wild_type, ev.variants, spec)
    label = ":".join(m.label() for m in ev.mutations[0])
    return MutantScores(label, len(ev.mutations[0]), {m: float(v[0]) for m, v in s.items()})

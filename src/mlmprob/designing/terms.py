"""The terms of a design target ``p(x) ∝ exp(-Σ_k w_k E_k(x) / τ) · 1[x ∈ C]``: :class:`Expert` (``E_local`` or
``E_raw`` of a masked LM through its own tokenizer), :class:`Oracle` (a user callable; energy ``-f(x)`` with
``maximize=True``) and :class:`Hamming` (mutations from the parent); :meth:`Target.energies` gives ``[N, K]``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ..batching import iter_masked_logits, read_logits
from ..energies import row_sum, target_scores
from ..errors import MLMProbError
from ..models.reader import Reader, name_of, reader_of
from .constraints import Constraints
from .spec import EXPERT_KINDS, check_weight


@dataclass(frozen=True, eq=False)
class Expert:
    """A masked LM as a term, weight ``weight``: ``E_local`` (``kind="local"``) or ``E_raw`` of the whole sequence
    (one masked row per residue), or ``kind="mutant_marginal"``: EvoProtGrad's score read from one unmasked forward
    of ``x``, ``E = -Σ_i [logit_i(x_i) - logit_i(parent_i)]`` (a different target than the PLL's; one row)."""

    mlm: object
    kind: str = "local"
    weight: float = 1.0
    name: str | None = None

    def __post_init__(self):
        if self.kind not in EXPERT_KINDS:
            raise MLMProbError(f"an expert's energy kind must be one of {EXPERT_KINDS}, got {self.kind!r}")
        check_weight(f"the weight of term {self.label}", self.weight)

    @property
    def label(self) -> str:
        return self.name or name_of(self.mlm)


@dataclass(frozen=True, eq=False)
class Oracle:
    """A user property model: ``fn(list of residue strings) -> one number each``; energy ``-fn`` when
    ``maximize`` (higher is better), else ``fn``."""

    fn: Callable
    weight: float = 1.0
    maximize: bool = True
    name: str = "oracle"

    def __post_init__(self):
        if not callable(self.fn):
            raise MLMProbError(f"an oracle must be callable, got {type(self.fn).__name__}")
        check_weight(f"the weight of term {self.name}", self.weight)
        if not isinstance(self.maximize, bool):
            raise MLMProbError(f"{self.who}: maximize must be True or False, got {self.maximize!r}")

    @property
    def label(self) -> str:
        return self.name

    @property
    def who(self) -> str:
        """The oracle as messages name it."""
        return "the oracle" if self.name == "oracle" else f"oracle {self.name}"

    def energies(self, seqs: list[str]) -> torch.Tensor:
        """``[N]`` float64; a result of the wrong shape or a non-finite value stops the run in one line naming
        the sequence; an exception raised by ``fn`` itself stops it in one line too (the error chained), a
        ``SystemExit`` or ``GeneratorExit`` included (a ``KeyboardInterrupt`` still interrupts)."""
        who = self.who
        try:
            values = self.fn(list(seqs))
        except Exception as e:  # noqa: BLE001 - the user's code: named in one line, the original chained
            raise MLMProbError(f"{who} raised {type(e).__name__}: {e}") from e
        except (SystemExit, GeneratorExit) as e:  # not the run's own exit: the oracle's, named like an error
            raise MLMProbError(f"{who} raised {type(e).__name__}({', '.join(map(repr, e.args))})") from e
        try:
            out = torch.as_tensor(values if torch.is_tensor(values) else list(values), dtype=torch.float64)
        except OverflowError:  # a Python int beyond float64 (10**400)
            raise MLMProbError(f"{who} returned a number too large for float64 (more than about 1.8e308)") from None
        except (TypeError, ValueError) as e:
            raise MLMProbError(f"oracle {self.name} must return one number per sequence: {e}") from None
        out = out.detach().cpu().reshape(-1) if out.dim() == 2 and 1 in out.shape else out.detach().cpu()
        if tuple(out.shape) != (len(seqs),):
            raise MLMProbError(
                f"oracle {self.name} returned shape {tuple(out.shape)} for {len(seqs)} sequences; it must return "
                "one number per sequence"
            )
        bad = (~torch.isfinite(out)).nonzero()
        if len(bad):
            i = int(bad[0])
            raise MLMProbError(f"oracle {self.name} returned {float(out[i])} for sequence {seqs[i]}")
        return -out if self.maximize else out


@dataclass(frozen=True)
class Hamming:
    """The number of mutations from the parent, weight ``weight`` (a penalty for ``weight > 0``)."""

    weight: float = 1.0
    name: str = "hamming"

    def __post_init__(self):
        check_weight(f"the weight of term {self.name}", self.weight)

    @property
    def label(self) -> str:
        return self.name


def as_term(t):
    """A term: an :class:`Expert`, :class:`Oracle` or :class:`Hamming` as given, a masked LM as ``Expert(t)``,
    a plain callable as ``Oracle(t)``."""
    if isinstance(t, (Expert, Oracle, Hamming)):
        return t
    if hasattr(t, "mask_id") and hasattr(t, "vocab_size"):
        return Expert(t)
    if callable(t):
        return Oracle(t)
    raise MLMProbError(
        f"a design term must be a masked LM, Expert, Oracle, Hamming or callable, got {type(t).__name__}"
    )


class ExpertReader:
    """One expert on residue strings: the parent's encoding as a template, the token column of each residue and
    the expert's id of each letter of the alphabet (-1: it cannot read the letter)."""

    def __init__(self, expert: Expert, parent: str, alphabet: str):
        self.expert = expert
        self.reader: Reader = reader_of(expert.mlm)
        if not self.reader.has_text:
            raise MLMProbError(f"expert {expert.label} has no tokenizer: it cannot read residue strings")
        try:
            enc = self.reader.encode([parent])
        except MLMProbError as e:
            raise MLMProbError(f"expert {expert.label} cannot read the parent: {e}") from None
        words = enc.word_ids[0]
        cols = (words >= 0).nonzero(as_tuple=True)[0]
        if len(cols) != len(parent) or words[cols].tolist() != list(range(len(parent))):
            raise MLMProbError(
                f"expert {expert.label} does not read the parent one token per residue ({len(cols)} tokens for "
                f"{len(parent)} residues)"
            )
        self.template, self.cols = enc.input_ids[0].clone(), cols
        ids = []
        for c in alphabet:
            try:
                one = self.reader.encode([c])
                tok = one.input_ids[0][one.word_ids[0] >= 0]
                ok = len(tok) == 1 and int(tok[0]) not in self.reader.special_ids
                ids.append(int(tok[0]) if ok else -1)
            except MLMProbError:
                ids.append(-1)
        self.letter_ids = torch.tensor(ids, dtype=torch.long)
        self.alphabet = alphabet

    def readable(self, letters: str) -> str:
        """The letters of ``letters`` (a subsequence of the alphabet it was built on) this expert reads."""
        ok = {c for c, i in zip(self.alphabet, self.letter_ids.tolist(), strict=True) if i >= 0}
        return "".join(c for c in letters if c in ok)

    def score(self, X: torch.Tensor, keep_rows: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(E_local, E_raw)`` ``[N]`` float64 of the sequences ``X`` ``[N, L]`` (alphabet indices) and, with
        ``keep_rows``, each position's single-site logits at the alphabet's letters ``[N, L, A]`` (float64,
        ``-inf`` at letters the expert cannot read)."""
        N, L = X.shape
        ids = self.template.expand(N, -1).clone()
        ids[:, self.cols] = self.letter_ids[X]
        rows = torch.arange(N).repeat_interleave(L)
        cols = self.cols.repeat(N)
        targets = ids[rows, cols]
        lp = torch.zeros(N * L, dtype=torch.float64)
        raw = torch.zeros(N * L, dtype=torch.float64)
        kept = torch.full((N * L, len(self.letter_ids)), float("-inf"), dtype=torch.float64) if keep_rows else None
        readable = (self.letter_ids >= 0).nonzero(as_tuple=True)[0]
        one = torch.zeros(N, dtype=torch.long)  # the chains of one step share sub-batches
        for idx, logits in iter_masked_logits(self.reader, ids, rows, cols, records=one):
            lp[idx], raw[idx] = target_scores(logits, targets[idx])
            if kept is not None:
                kept[idx[:, None], readable[None, :]] = logits[:, self.letter_ids[readable]].double()
        e_local, e_raw = -row_sum(lp.view(N, L)), -row_sum(raw.view(N, L))
        return e_local, e_raw, (kept.view(N, L, -1) if kept is not None else None)

    def score_unmasked(self, X: torch.Tensor, parent: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """EvoProtGrad's mutant-marginal energy ``[N]`` (float64) of ``X`` ``[N, L]`` against ``parent`` ``[L]``
        (alphabet indices), read from one unmasked forward per sequence, and that forward's logits at the
        alphabet's letters ``[N, L, A]`` (float64; the rows a proposal from this expert draws from)."""
        N, L = X.shape
        ids = self.template.expand(N, -1).clone()
        ids[:, self.cols] = self.letter_ids[X]
        rows = torch.arange(N).repeat_interleave(L)
        cols = self.cols.repeat(N)
        logits = read_logits(self.reader, ids, rows, cols)[:, self.letter_ids].double().view(N, L, -1)
        mine = logits.gather(-1, X[..., None])[..., 0]
        theirs = logits.gather(-1, parent.expand(N, -1)[..., None])[..., 0]
        return -row_sum(mine - theirs), logits


class Target:
    """``p(x) ∝ exp(-Σ_k w_k E_k(x) / τ) · 1[x ∈ C]`` over residue strings of the parent's length, with sequences
    held as alphabet indices ``[N, L]``. ``alphabet``: the letters every expert reads (the constraints' own)."""

    def __init__(self, terms: Sequence, constraints_of: Callable[[str], Constraints], parent: str, alphabet: str):
        self.terms = tuple(as_term(t) for t in terms)
        if not self.terms:
            raise MLMProbError("a design target needs at least one term (an expert, an oracle or hamming)")
        labels = [t.label for t in self.terms]
        dup = sorted({n for n in labels if labels.count(n) > 1})
        if dup:
            raise MLMProbError(f"two terms are both named {dup[0]!r}: give each expert a name")
        self.names = tuple(labels)
        self.parent = parent
        self.experts = {i: ExpertReader(t, parent, alphabet) for i, t in enumerate(self.terms) if isinstance(t, Expert)}
        readable = alphabet
        for er in self.experts.values():
            readable = er.readable(readable)
        for er in self.experts.values():  # each expert's ids of the letters they all read
            er.letter_ids = er.letter_ids[[alphabet.index(c) for c in readable]]
        self.alphabet = alphabet = readable
        self.constraints = constraints_of(alphabet)
        self.weights = torch.tensor([float(t.weight) for t in self.terms], dtype=torch.float64)
        index = {c: i for i, c in enumerate(alphabet)}
        self.allowed = torch.zeros(len(parent), len(alphabet), dtype=torch.bool)
        for j, letters in enumerate(self.constraints.allowed):
            self.allowed[j, [index[c] for c in letters]] = True
        self.parent_ids = torch.tensor([index[c] for c in parent], dtype=torch.long)
        self.model_rows = 0  # single-site rows read from the experts so far (the cost counter)
        self.oracle_calls = 0  # sequences given to the oracle terms so far

    def expert_index(self, name) -> int:
        """The term index of the expert ``name`` (its label, or its position among the terms)."""
        for i in self.experts:
            if name == self.names[i] or name == i:
                return i
        names = ", ".join(self.names[i] for i in self.experts) or "none"
        raise MLMProbError(f"the proposal must be one of the experts ({names}) or 'uniform', got {name!r}")

    def decode(self, X: torch.Tensor) -> list[str]:
        return ["".join(self.alphabet[i] for i in row) for row in X.tolist()]

    def encode(self, seqs: Sequence[str]) -> torch.Tensor:
        index = {c: i for i, c in enumerate(self.alphabet)}
        try:
            return torch.tensor([[index[c] for c in s] for s in seqs], dtype=torch.long)
        except KeyError as e:
            raise MLMProbError(f"residue {e.args[0]!r} is not one every expert reads ({self.alphabet})") from None

    def in_c(self, X: torch.Tensor) -> torch.Tensor:
        """Bool ``[N]``: which sequences lie in ``C``."""
        c = self.constraints
        ok = self.allowed.gather(1, X.T).T.all(-1) if len(X) else torch.zeros(0, dtype=torch.bool)
        if c.max_mutations is not None:
            ok &= (X != self.parent_ids).sum(-1) <= c.max_mutations
        if c.forbid or c.require:
            seqs = self.decode(X)
            ok &= torch.tensor([c.motifs_ok(s) for s in seqs], dtype=torch.bool)
        return ok

    def energies(
        self, X: torch.Tensor, rows_of: int | None = None, only=None, chains=None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Each term's energy ``[N, K]`` (float64, unweighted) of ``X`` ``[N, L]``, and the single-site rows of
        the expert ``rows_of`` (term index) ``[N, L, A]`` when asked; ``only`` (term indices): those terms alone,
        the others' columns 0. ``chains`` (the engine's, :mod:`mlmprob.mcmc.engine`): unused, no term depends on
        the chain."""
        N = X.shape[0]
        E = torch.zeros(N, len(self.terms), dtype=torch.float64)
        rows = None
        if N == 0:
            empty = torch.zeros(0, len(self.parent), len(self.alphabet), dtype=torch.float64)
            return E, empty if rows_of is not None else None
        seqs = None
        for k, t in enumerate(self.terms):
            if only is not None and k not in only:
                continue
            if isinstance(t, Expert) and t.kind == "mutant_marginal":
                E[:, k], r = self.experts[k].score_unmasked(X, self.parent_ids)
                self.model_rows += N
                rows = r if k == rows_of else rows
            elif isinstance(t, Expert):
                e_local, e_raw, kept = self.experts[k].score(X, keep_rows=k == rows_of)
                self.model_rows += X.numel()
                E[:, k] = e_local if t.kind == "local" else e_raw
                rows = kept if k == rows_of else rows
            elif isinstance(t, Oracle):
                seqs = self.decode(X) if seqs is None else seqs
                E[:, k] = t.energies(seqs)
                self.oracle_calls += N
            else:
                E[:, k] = (X != self.parent_ids).sum(-1).double()
        return E, rows

    def no_worse(self, X: torch.Tensor, Xp: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """Bool ``[B]``: at ``rows`` (chains outside ``C``), whether ``Xp`` has no more violations than ``X``."""
        out = torch.zeros(len(X), dtype=torch.bool)
        for r in rows.nonzero(as_tuple=True)[0].tolist():
            old, new = self.decode(X[r : r + 1])[0], self.decode(Xp[r : r + 1])[0]
            out[r] = len(self.constraints.violations(new)) <= len(self.constraints.violations(old))
        return out

    def total(self, E: torch.Tensor, only=None) -> torch.Tensor:
        """``U = Σ_k w_k E_k`` ``[N]`` (float64); ``only`` (term indices): over those terms alone."""
        cols = slice(None) if only is None else list(only)
        return (E[:, cols] * self.weights[cols]).sum(-1)

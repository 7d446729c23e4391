"""The work of ``variants_data``: a plan of stages ``(model, group, n per class)`` run chunk by chunk,
each chunk appended to its result file as soon as it is scored, so that a killed run resumes where
it stopped without recomputing anything.

Groups on the CDR-H3 library (``GROUPS``; the scores each writes): ``baselines`` (no model:
BLOSUM62 sum, minus the Hamming distance, minus the CDR-H3 Kyte-Doolittle mean, so that higher =
predicted binder for all three), ``marginals`` (``wt_marginals`` and ``masked_marginals``),
``masked_marginals_all``, ``mutant_marginals``, ``masked_marginals_mt``, ``hcb`` (with
``epistasis``), ``pll_delta``, ``ag`` (the double mutants of the library only), ``chain`` (the chain
rule over ``CHAIN_ORDERS`` orders of the mutated sites, seed ``CHAIN_SEED``; both recorded in each
chunk). A stage covers the first ``2 n`` variants of the ordered library (``n`` per class; ``None``:
all), in fixed chunks of ``CHUNK[group]`` variants, so that stages of one group with growing ``n``
extend each other. Groups ``gdpa1_pll`` and ``jain_pll`` score the PLL of every VH of those sets;
``gdpa1_loglik`` and ``jain_loglik`` its chain-rule log-likelihood, left to right (``mlmprob.loglik``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from experiments.variants_baselines import blosum_sum, hamming, kd_mean
from mlmprob.alphabet import AMINO_ACIDS
from mlmprob.errors import MLMProbError
from mlmprob.models.protocol import MaskedLM
from mlmprob.models.reader import name_of, reader_of
from mlmprob.runtime.log import ResumableLog
from mlmprob.variants import ForwardCache, score_variants
from mlmprob.variants.chain import plan_chain
from mlmprob.variants.rows import RowTable

from .variants_data_common import FRAMEWORK, TAIL, WT_CDR, Library, encode_chunk, load_assay_set, result_path

GROUPS = {
    "baselines": ("blosum62", "neg_hamming", "neg_kd_cdrh3"),
    "marginals": ("wt_marginals", "masked_marginals"),
    "masked_marginals_all": ("masked_marginals_all",),
    "mutant_marginals": ("mutant_marginals",),
    "masked_marginals_mt": ("masked_marginals_mt",),
    "hcb": ("hcb", "epistasis"),
    "pll_delta": ("pll_delta",),
    "ag": ("ag",),
    "chain": ("chain",),
}
SET_GROUPS = ("gdpa1_pll", "jain_pll", "gdpa1_loglik", "jain_loglik")
CHUNK = {
    "baselines": 5000,
    "marginals": 5000,
    "pll_delta": 10,
    "chain": 25,
    "gdpa1_pll": 16,
    "jain_pll": 16,
    "gdpa1_loglik": 16,
    "jain_loglik": 16,
}
DTYPE = "float32"  # pinned (the default `weights` is float32 for these models too; `auto` is bf16 on some CPUs)
CHAIN_ORDERS, CHAIN_SEED = 6, 0  # the chain group's orders per variant and their seed (variants.chain)
DEFAULT_CHUNK = 100
DIGITS = 5


@dataclass(frozen=True)
class Stage:
    model: str
    group: str
    per_class: int | None  # None: every variant (library) / every antibody (sets)

    def __str__(self) -> str:
        return f"{self.model}:{self.group}:{'all' if self.per_class is None else self.per_class}"


def parse_plan(text: str) -> list[Stage]:
    """``model:group:n`` items, comma separated (``n`` = variants per class, or ``all``).

    >>> parse_plan("baseline:baselines:all, sapiens-vh:hcb:50")
    [Stage(model='baseline', group='baselines', per_class=None), Stage(model='sapiens-vh', group='hcb', per_class=50)]
    """
    out = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        parts = item.rsplit(":", 2)
        if len(parts) != 3:
            raise MLMProbError(f"plan item {item!r} is not model:group:n")
        model, group, n = parts
        if group not in GROUPS and group not in SET_GROUPS:
            raise MLMProbError(
                f"plan item {item!r}: unknown group {group!r}; use one of {', '.join(list(GROUPS) + list(SET_GROUPS))}"
            )
        if (group == "baselines") != (model == "baseline"):
            raise MLMProbError(f"plan item {item!r}: group baselines goes with model 'baseline' and only it")
        if n != "all" and not (n.isdigit() and int(n) > 0):
            raise MLMProbError(f"plan item {item!r}: n must be a positive integer or 'all'")
        out.append(Stage(model, group, None if n == "all" else int(n)))
    if not out:
        raise MLMProbError("the plan is empty")
    return out


def _texts_for(mlm, seqs: Sequence[str]) -> list[str]:
    from mlmprob.models.tokenizers import ResidueTokenizer

    return list(seqs) if isinstance(reader_of(mlm).tokenizer, ResidueTokenizer) else [" ".join(s) for s in seqs]


class Encoder:
    """The trastuzumab VH as token ids, and a CDR-H3 variant as ``(token position, token id)`` edits."""

    def __init__(self, mlm: MaskedLM):
        full = FRAMEWORK + WT_CDR + TAIL
        enc = mlm.encode(_texts_for(mlm, [full]))
        words = enc.word_ids[0].tolist()
        index = {}
        for i, w in enumerate(words):
            if w >= 0:
                if w in index:
                    raise MLMProbError(f"{name_of(mlm)} splits residue {w} into several tokens")
                index[w] = i
        if len(index) != len(full):
            raise MLMProbError(f"the VH of {len(full)} residues encodes to {len(index)} residue tokens")
        self.wt = enc.input_ids[0]
        self.n_residues = len(full)
        self.positions = [index[len(FRAMEWORK) + j] for j in range(len(WT_CDR))]
        alphabet = AMINO_ACIDS
        a = mlm.encode(_texts_for(mlm, [alphabet]))
        ids = [int(t) for t, w in zip(a.input_ids[0].tolist(), a.word_ids[0].tolist()) if w >= 0]
        self.tokens = dict(zip(alphabet, ids))

    def variant(self, cdr: str) -> list[tuple[int, int]]:
        return [(p, self.tokens[c]) for p, c, w in zip(self.positions, cdr, WT_CDR) if c != w]


def chain_rows(mlm: MaskedLM, wt: torch.Tensor, variants, first: bool) -> int:
    """The distinct forward rows ``chain`` needs for ``variants`` (its rows share across variants, so no
    formula in ``k`` counts them); the one-mask rows a ``ForwardCache`` keeps count in the first chunk only."""
    table = RowTable(mlm, wt)
    plan_chain(table, wt.tolist(), variants, int(mlm.mask_id), CHAIN_ORDERS, CHAIN_SEED)
    kept = sum(ForwardCache.keeps(e, int(mlm.mask_id)) for e in table.edits)
    return len(table.edits) - (0 if first else kept)


def rows_estimate(group: str, ks: Sequence[int], n_residues: int, first: bool) -> int:
    """Forward rows a chunk needs by the cost model of ``score_variants`` (``ks``: mutations per
    variant); the wild-type rows a ``ForwardCache`` keeps are counted in the first chunk only
    (``chain``: ``chain_rows``)."""
    n, total = len(ks), sum(ks)
    return {
        "baselines": 0,
        "marginals": (1 + 10) if first else 0,
        "masked_marginals_all": n,
        "mutant_marginals": n,
        "masked_marginals_mt": total,
        "hcb": total - n,
        "pll_delta": n * n_residues,
        "ag": n * 41,
        "chain": 0,
    }[group]


def _round(xs) -> list:
    return [None if x != x else round(float(x), DIGITS) for x in xs]


class Runner:
    """Runs plan stages into ``out``; models are loaded once, on first use."""

    def __init__(
        self,
        out: Path,
        data: Path,
        library: Library,
        *,
        batch_tokens: int | None = None,
        loader: Callable[[str], MaskedLM] | None = None,
        log=print,
    ):
        from mlmprob.models import load_mlm

        self.out, self.data, self.lib, self.batch_tokens, self.log = out, data, library, batch_tokens, log
        self.loader = loader or (lambda name: load_mlm(name, dtype=DTYPE))
        self._models: dict[str, tuple[MaskedLM, Encoder, ForwardCache]] = {}
        self._sets: dict[str, list] = {}

    def model(self, name: str) -> tuple[MaskedLM, Encoder, ForwardCache]:
        if name not in self._models:
            mlm = reader_of(self.loader(name), self.batch_tokens)
            self._models[name] = (mlm, Encoder(mlm), ForwardCache())
        return self._models[name]

    def run(self, stages: Sequence[Stage]) -> dict[str, int]:
        """Every stage in order; returns the chunks written per stage."""
        return {str(s): self.run_stage(s) for s in stages}

    def run_stage(self, stage: Stage) -> int:
        return sum(1 for _ in self.stage_chunks(stage))

    def stage_chunks(self, stage: Stage):
        """Score the chunks of ``stage`` that its file lacks, appending each to the file; yields each
        chunk once it is committed."""
        path = result_path(self.out, stage.model, stage.group)
        with ResumableLog(path, encode=encode_chunk) as log:
            done = log.done(lambda c: c["start"])
            todo = [c for c in self._chunks(stage) if c[0] not in done]
            t0 = time.perf_counter()
            for lo, hi in todo:
                chunk = (
                    self._set_chunk(stage, lo, hi) if stage.group in SET_GROUPS else self._library_chunk(stage, lo, hi)
                )
                log.append(chunk)
                yield chunk
        if todo:
            self.log(f"{stage}: {len(todo)} chunks in {time.perf_counter() - t0:.1f} s")

    def _chunks(self, stage: Stage) -> list[tuple[int, int]]:
        if stage.group == "ag":
            return [(0, len(self.lib.cdrs))]  # one chunk: the library's double mutants
        if stage.group in SET_GROUPS:
            n = len(self._set(stage.group))
            end = n if stage.per_class is None else min(n, stage.per_class)
        else:
            n = len(self.lib.cdrs)
            end = n if stage.per_class is None else min(n, 2 * stage.per_class)
        size = CHUNK.get(stage.group, DEFAULT_CHUNK)
        return [(lo, min(lo + size, n)) for lo in range(0, end, size)]

    def _set(self, group: str) -> list:
        if group not in self._sets:
            self._sets[group] = load_assay_set(self.data, group.rsplit("_", 1)[0])[0]
        return self._sets[group]

    def _library_chunk(self, stage: Stage, lo: int, hi: int) -> dict:
        lib = self.lib
        idx = list(range(lo, hi))
        if stage.group == "ag":
            idx = [i for i in idx if lib.mutations(i) == 2]
        cdrs = [lib.cdrs[i] for i in idx]
        ks = [lib.mutations(i) for i in idx]
        t0, c0 = time.perf_counter(), time.process_time()
        rows_est = None
        if stage.group == "baselines":
            scores = {
                "blosum62": [blosum_sum(WT_CDR, c) for c in cdrs],
                "neg_hamming": [-hamming(WT_CDR, c) for c in cdrs],
                "neg_kd_cdrh3": _round([-kd_mean(c) for c in cdrs]),
            }
            n_res = len(WT_CDR)
        else:
            mlm, enc, cache = self.model(stage.model)
            n_res = enc.n_residues
            variants = [enc.variant(c) for c in cdrs]
            got = (
                score_variants(
                    mlm,
                    enc.wt,
                    variants,
                    methods=GROUPS[stage.group],
                    cache=cache,
                    chain_orders=CHAIN_ORDERS,
                    chain_seed=CHAIN_SEED,
                )
                if cdrs
                else {}
            )
            scores = {m: _round(got[m].tolist()) if cdrs else [] for m in GROUPS[stage.group]}
            if stage.group == "chain":
                rows_est = chain_rows(mlm, enc.wt, variants, lo == 0)
        chunk = {
            "start": lo,
            "stop": hi,
            "seconds": round(time.perf_counter() - t0, 3),
            "cpu_seconds": round(time.process_time() - c0, 3),
            "n": len(idx),
            "rows_est": rows_estimate(stage.group, ks, n_res, lo == 0) if rows_est is None else rows_est,
            "scores": scores,
        }
        if stage.group == "ag":
            chunk["idx"] = idx
        if stage.group == "chain":
            chunk.update(n_orders=CHAIN_ORDERS, seed=CHAIN_SEED)
        return chunk

    def _set_chunk(self, stage: Stage, lo: int, hi: int) -> dict:
        """PLL (``*_pll``: field ``pll``) or left-to-right chain-rule log-likelihood (``*_loglik``: field
        ``loglik``, normalised over the proposal alphabet as ``mlmprob.loglik``) of each VH of the set."""
        from mlmprob.energies import token_scores
        from mlmprob.likelihood import loglik

        abs_ = self._set(stage.group)[lo:hi]
        mlm, _, _ = self.model(stage.model)
        t0, c0 = time.perf_counter(), time.process_time()
        limit = reader_of(mlm).max_length
        keep = [a for a in abs_ if limit is None or len(a.vh) + 2 <= limit]
        kind = stage.group.rsplit("_", 1)[1]
        values, n_res = [], []
        if keep:
            enc = mlm.encode(_texts_for(mlm, [a.vh for a in keep]))
            if kind == "pll":
                v = token_scores(mlm, enc.input_ids).pll
            else:
                v = loglik(mlm, enc.input_ids, order="l2r").per_order[:, 0]
            values = _round(v.tolist())
            n_res = [len(a.vh) for a in keep]
        return {
            "start": lo,
            "stop": hi,
            "seconds": round(time.perf_counter() - t0, 3),
            "cpu_seconds": round(time.process_time() - c0, 3),
            "n": len(keep),
            "rows_est": sum(n_res),
            "ids": [a.id for a in keep],
            kind: values,
            "n_res": n_res,
            "skipped": [a.id for a in abs_ if a not in keep],
        }

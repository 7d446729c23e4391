"""CDR-H3 redesign with MH and degenerate-Gibbs samplers: the experiments of Goyal et al. (2022),
Tables 1-5 and Figures 1, 2, 4, on antibody heavy chains instead of translation.

Task: for each of the first ``--n-antibodies`` heavy chains of a CSV (column ``HC``) whose
CDR-H3 ``find_cdr_h3`` locates, the CDR-H3 residues are free and everything else (framework,
other CDRs) is clamped; the CDR-H3 length is kept. As in the paper (Alg. 1, line 3) every chain
starts from the *warm start*: CDR-H3 masked and filled with the model's arg-max in one pass. Each
configuration runs ``--chains`` chains per antibody for ``--burn-in + --epochs`` epochs (one
epoch = one sweep over the CDR-H3 positions in random order), all chains of all pending
antibodies in one batched ``sample`` call. Energies ``E_local`` (= -PLL) and ``E_raw`` are summed
over the CDR-H3 positions only. Metrics per chain and epoch: both energies, acceptance and
novel-transition rates, identity and BLEU-4 of the designed CDR-H3 to the native one, and the
stutter rate (share of adjacent equal residues; Li et al.'s failure mode).

Configurations (names are stable keys of the result file):

- ``t1/{mh-local,gibbs}-pt{2.0,1.5,1.0,0.8,0.5}``: proposal temperature (Table 1);
- ``t2/{mh-local,gibbs}-topp{0.99,0.95,0.9,0.8}``: nucleus (Table 2; its 1.0 column is Table 1's
  ``pt1.0``);
- ``t3/block-{gibbs,mh-raw,mh-local}``: block size decreasing linearly from 4 to 1 over the run
  (Table 3, Figure 4);
- ``t4/anneal{0.02,0.04,0.06}-mh-{local,raw}``: target temperature ``1 - rate * epoch`` (Table 4,
  Figure 2);
- ``t5/warm-start``, ``t1/gibbs-pt0.8`` (degenerate Gibbs T=0.8), ``t5/mask-predict-it10``,
  ``t5/mh-{local,raw}-pt0.8-anneal0.02`` (Table 5; proposal temperature 0.8 as in the paper's App. F);
- ``f1/mh-raw-pt1.0``: the third sampler of Figure 1;
- ``u/{warm-start,mask-predict-it10,gibbs-pt1.0,mh-local-pt1.0}``: unconditional generation of a
  length-``--uncond-length`` sequence from all-mask initialisation (no clamped context).

Result files in ``--out``: ``results.jsonl`` (one line per configuration x antibody x chain;
a rerun skips the finished (configuration, antibody) units), ``runs.jsonl`` (each invocation's
command line and wall time), ``work/`` (the ``sample`` run files of the configuration in
progress, so that a killed run resumes mid-configuration; deleted when it finishes), and the
report (``report.md``, ``fig*.png``; see ``cdr_h3_report``).

Usage::

    python -m mlmprob.experiments.cdr_h3 --model sapiens-vh --out docs/results/sampling/sapiens-vh \\
        --tables 1,2,3,4,5,u --epochs 4 --burn-in 2 --n-antibodies 20 --chains 3
    python -m mlmprob.experiments.cdr_h3 --model sapiens-vh --out ... --report-only

``--only NAME[,NAME]`` runs just those configurations (e.g. to time one).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import json
import math
import shlex
import sys
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch

from ..batching import DEFAULT_BATCH_TOKENS
from ..errors import MLMProbError
from ..jsonl import dumps, read_jsonl, trim_partial_line
from ..models.protocol import MaskedLM

RESULTS_FILE, RUNS_FILE, WORK_DIR = "results.jsonl", "runs.jsonl", "work"
PTEMPS = (2.0, 1.5, 1.0, 0.8, 0.5)
TOPPS = (1.0, 0.99, 0.95, 0.9, 0.8)
ANNEALS = (0.02, 0.04, 0.06)
T5_ANNEAL, BLOCK_START, MP_ITERATIONS = 0.02, 4, 10


# -- metrics ---------------------------------------------------------------------------------------

def stutter_rate(seq: str) -> float:
    """Share of adjacent pairs of equal residues; ``nan`` for fewer than two residues.

    >>> stutter_rate("AAAB"), stutter_rate("ACDE")
    (0.6666666666666666, 0.0)
    """
    pairs = len(seq) - 1
    if pairs < 1:
        return math.nan
    return sum(a == b for a, b in zip(seq, seq[1:])) / pairs


def _ngrams(seq: Sequence, n: int) -> Counter:
    return Counter(tuple(seq[i:i + n]) for i in range(len(seq) - n + 1))


def corpus_bleu(hypotheses: Sequence[Sequence], references: Sequence[Sequence], max_n: int = 4) -> float:
    """Corpus BLEU-``max_n`` (Papineni et al.) in [0, 1]: clipped n-gram matches and counts summed
    over all pairs, geometric mean of the ``n = 1..max_n`` precisions (uniform weights, no
    smoothing), brevity penalty from the summed lengths. This is the paper's (corpus-level) BLEU;
    sentence BLEU-4 of a short CDR is 0 unless a 4-gram matches.

    >>> round(corpus_bleu(["ABCD", "ABCE"], ["ABCD", "ABCD"]), 6)   # (7/8 * 5/6 * 3/4 * 1/2) ** (1/4)
    0.723127
    >>> corpus_bleu(["AB"], ["AB"], max_n=4)        # no 3-grams at all
    0.0
    """
    match, total = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for h, r in zip(hypotheses, references, strict=True):
        hyp_len, ref_len = hyp_len + len(h), ref_len + len(r)
        for n in range(1, max_n + 1):
            hc, rc = _ngrams(h, n), _ngrams(r, n)
            total[n - 1] += sum(hc.values())
            match[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())
    if hyp_len == 0 or min(total) == 0 or min(match) == 0:
        return 0.0
    log_p = sum(math.log(m / t) for m, t in zip(match, total)) / max_n
    bp = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return bp * math.exp(log_p)


def sentence_bleu4(hypothesis: str, reference: str) -> float:
    """Sentence BLEU-4 (no smoothing) of one designed CDR-H3 against the native one."""
    from ..infill.metrics import bleu

    return bleu(hypothesis, reference, max_n=4)


def identity_to(hypothesis: str, reference: str | None) -> float | None:
    """Fraction of equal residues (equal lengths), None without a reference.

    >>> identity_to("ACDE", "ACDF")
    0.75
    """
    if reference is None:
        return None
    if len(hypothesis) != len(reference):
        raise MLMProbError(f"identity needs equal lengths, got {len(hypothesis)} and {len(reference)}")
    return sum(a == b for a, b in zip(hypothesis, reference)) / max(len(reference), 1)


def seq_metrics(cdr: str, native: str | None) -> dict:
    """``identity``, ``bleu`` (sentence BLEU-4) and ``stutter`` of one designed sequence."""
    return {"identity": identity_to(cdr, native),
            "bleu": None if native is None else sentence_bleu4(cdr, native),
            "stutter": stutter_rate(cdr)}


# -- data ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Antibody:
    """A heavy chain and its CDR-H3 residue span ``[start, end)``."""

    name: str
    hc: str
    start: int
    end: int

    @property
    def cdr(self) -> str:
        return self.hc[self.start:self.end]


def load_antibodies(path: str | Path, n: int, column: str = "HC", id_column: str | None = "Therapeutic",
                    definition: str = "imgt", max_residues: int | None = None) -> list[Antibody]:
    """The first ``n`` rows (file order) whose ``column`` holds only the 20 standard residues and
    whose CDR-H3 ``find_cdr_h3`` locates (and no longer than ``max_residues``)."""
    from ..data import read_records
    from ..sampling.cdr import find_cdr_h3

    out = []
    for rec in read_records(path, "csv", column, id_column):
        seq = rec.seq.strip().upper()
        if not seq or set(seq) - set("ACDEFGHIKLMNPQRSTVWY"):
            continue
        if max_residues is not None and len(seq) > max_residues:
            continue
        try:
            s, e = find_cdr_h3(seq, definition)
        except MLMProbError:
            continue
        out.append(Antibody(rec.id, seq, s, e))
        if len(out) == n:
            break
    if len(out) < n:
        raise MLMProbError(f"{path}: only {len(out)} heavy chains with a CDR-H3 found, {n} asked for")
    return out


# -- configurations --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    """One sampler setting. ``kind``: ``"mcmc"`` (``sample`` with ``method``), ``"warm_start"`` or
    ``"mask_predict"``. ``block_start > 1``: block size decreasing linearly to 1 over the run;
    ``anneal > 0``: target temperature ``max(0.05, 1 - anneal * epoch)``; ``unconditional``: all-mask
    sequence without context instead of CDR-H3 redesign."""

    name: str
    kind: str = "mcmc"
    method: str = "mh"
    energy: str = "local"
    proposal_temperature: float = 1.0
    top_p: float = 1.0
    block_start: int = 1
    anneal: float = 0.0
    iterations: int = MP_ITERATIONS
    unconditional: bool = False


def _configs() -> dict[str, Config]:
    cs: list[Config] = [Config("t5/warm-start", kind="warm_start"),
                        Config("t5/mask-predict-it10", kind="mask_predict")]
    # run order = this order: the headline comparisons first, so that a cut-short run has them
    def t1(t):
        return [Config(f"t1/mh-local-pt{t}", proposal_temperature=t),
                Config(f"t1/gibbs-pt{t}", method="gibbs", proposal_temperature=t)]
    cs += t1(1.0) + [Config("f1/mh-raw-pt1.0", energy="raw")] + t1(0.8)
    for e in ("local", "raw"):
        cs.append(Config(f"t5/mh-{e}-pt0.8-anneal{T5_ANNEAL}", energy=e, proposal_temperature=0.8, anneal=T5_ANNEAL))
    cs += [Config("u/warm-start", kind="warm_start", unconditional=True),
           Config("u/mask-predict-it10", kind="mask_predict", unconditional=True),
           Config("u/gibbs-pt1.0", method="gibbs", unconditional=True)]
    cs += [Config("t3/block-gibbs", method="gibbs", block_start=BLOCK_START),
           Config("t3/block-mh-raw", energy="raw", block_start=BLOCK_START),
           Config("t3/block-mh-local", block_start=BLOCK_START)]
    for r in ANNEALS:
        cs += [Config(f"t4/anneal{r}-mh-local", anneal=r), Config(f"t4/anneal{r}-mh-raw", energy="raw", anneal=r)]
    cs += t1(2.0) + t1(1.5) + t1(0.5)
    for p in TOPPS[1:]:
        cs += [Config(f"t2/mh-local-topp{p}", top_p=p), Config(f"t2/gibbs-topp{p}", method="gibbs", top_p=p)]
    cs.append(Config("u/mh-local-pt1.0", unconditional=True))
    return {c.name: c for c in cs}


CONFIGS: dict[str, Config] = _configs()

# which configurations each table (and its figure) reads; "u" = unconditional generation
TABLES: dict[str, list[str]] = {
    "1": [f"t1/{m}-pt{t}" for t in PTEMPS for m in ("mh-local", "gibbs")] + ["f1/mh-raw-pt1.0"],
    "2": ["t1/mh-local-pt1.0", "t1/gibbs-pt1.0"]
         + [f"t2/{m}-topp{p}" for p in TOPPS[1:] for m in ("mh-local", "gibbs")],
    "3": ["t3/block-gibbs", "t3/block-mh-raw", "t3/block-mh-local"],
    "4": [f"t4/anneal{r}-mh-{e}" for r in ANNEALS for e in ("local", "raw")],
    "5": ["t5/warm-start", "t1/gibbs-pt0.8", "t5/mask-predict-it10", f"t5/mh-local-pt0.8-anneal{T5_ANNEAL}",
          f"t5/mh-raw-pt0.8-anneal{T5_ANNEAL}"],
    "u": ["u/warm-start", "u/mask-predict-it10", "u/gibbs-pt1.0", "u/mh-local-pt1.0"],
}
for _names in TABLES.values():
    assert all(n in CONFIGS for n in _names), _names


def select_configs(tables: Sequence[str], only: Sequence[str] | None = None) -> list[Config]:
    """Configurations the tables need, in run order (``CONFIGS`` order: the headline ones first).

    >>> [c.name for c in select_configs(["3"])]
    ['t3/block-gibbs', 't3/block-mh-raw', 't3/block-mh-local']
    """
    bad = [t for t in tables if t not in TABLES]
    if bad:
        raise MLMProbError(f"unknown table {bad[0]!r}; choose from {', '.join(TABLES)}")
    want = {n for t in tables for n in TABLES[t]}
    if only:
        unknown = [n for n in only if n not in CONFIGS]
        if unknown:
            raise MLMProbError(f"unknown configuration {unknown[0]!r}; known: {', '.join(CONFIGS)}")
        want = set(only)
    return [c for n, c in CONFIGS.items() if n in want]


# -- runner ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunOptions:
    """Settings shared by every configuration of one result folder."""

    epochs: int = 4
    burn_in: int = 2
    chains: int = 3
    uncond_length: int = 120
    uncond_chains: int = 3
    seed: int = 0
    batch_tokens: int = DEFAULT_BATCH_TOKENS

    @property
    def total_epochs(self) -> int:
        return self.burn_in + self.epochs


@dataclass(frozen=True)
class _Units:
    """Encoded inputs of a set of units (antibodies, or the one unconditional sequence)."""

    names: list[str]
    native: list[str | None]
    ids: torch.Tensor          # [N, L] native (or all-mask) ids
    free: torch.Tensor         # [N, L]
    warm: torch.Tensor         # [N, L] warm start
    native_scores: list[dict | None]
    warm_scores: list[dict]


def _texts_for(mlm, seqs: Sequence[str]) -> list[str]:
    from ..models.tokenizers import ResidueTokenizer

    tok = getattr(mlm, "tokenizer", None)
    return list(seqs) if isinstance(tok, ResidueTokenizer) else [" ".join(s) for s in seqs]


class _Alphabet:
    """Token id -> residue letter, for the ids the samplers may place."""

    def __init__(self, mlm):
        from ..sampling.proposals import allowed_ids

        self.chars = {int(i): mlm.decode([int(i)]).replace(" ", "") for i in allowed_ids(mlm).nonzero()[:, 0]}

    def text(self, ids_row: torch.Tensor, free_row: torch.Tensor) -> str:
        return "".join(self.chars.get(int(t), "?") for t in ids_row[free_row].tolist())


def _scores(mlm, ids: torch.Tensor, free: torch.Tensor, batch_tokens: int) -> list[dict]:
    from ..energy import token_scores

    s = token_scores(mlm, ids, free, batch_tokens=batch_tokens)
    return [{"e_local": float(a), "e_raw": float(b)} for a, b in zip(s.e_local.tolist(), s.e_raw.tolist())]


def prepare_units(mlm: MaskedLM, antibodies: Sequence[Antibody] | None, opts: RunOptions,
                  definition: str = "imgt") -> _Units:
    """Encode the antibodies (CDR-H3 free) or, with ``antibodies=None``, one all-mask sequence of
    ``opts.uncond_length`` residues; compute the warm starts and the native energies."""
    from ..sampling.cdr import cdr_h3_mask
    from ..sampling.init import initialize

    bt = opts.batch_tokens
    if antibodies is None:
        enc = mlm.encode(_texts_for(mlm, ["A" * opts.uncond_length]))
        free = enc.word_ids >= 0
        ids = enc.input_ids.masked_fill(free, mlm.mask_id)
        warm, _ = initialize(mlm, ids, free, "greedy", batch_tokens=bt)
        return _Units([f"all-mask-L{opts.uncond_length}"], [None], ids, free, warm, [None],
                      _scores(mlm, warm, free, bt))
    enc = mlm.encode(_texts_for(mlm, [a.hc for a in antibodies]))
    free = torch.stack([cdr_h3_mask(a.hc, enc.word_ids[i], definition) for i, a in enumerate(antibodies)])
    for a, f in zip(antibodies, free):
        if int(f.sum()) != a.end - a.start:
            raise MLMProbError(f"{a.name}: CDR-H3 has {a.end - a.start} residues but {int(f.sum())} tokens")
    warm, _ = initialize(mlm, enc.input_ids, free, "greedy", batch_tokens=bt)
    return _Units([a.name for a in antibodies], [a.cdr for a in antibodies], enc.input_ids, free, warm,
                  _scores(mlm, enc.input_ids, free, bt), _scores(mlm, warm, free, bt))


def _generator(seed: int, name: str) -> torch.Generator:
    return torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(name.encode())) % (2 ** 62))


def _mean(xs) -> float | None:
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return sum(xs) / len(xs) if xs else None


def _state_dict(cdr: str, native: str | None, scores: dict) -> dict:
    return {"cdr": cdr, **scores, **seq_metrics(cdr, native)}


def _schedules(cfg: Config, total: int):
    from ..sampling.schedules import LinearAnneal, LinearBlockSize

    block = LinearBlockSize(cfg.block_start, 1, total) if cfg.block_start > 1 else 1
    tt = LinearAnneal(1.0, cfg.anneal, 0.05) if cfg.anneal > 0 else 1.0
    return block, tt


def run_config(mlm: MaskedLM, cfg: Config, units: _Units, opts: RunOptions, work: Path) -> list[dict]:
    """Run one configuration on every unit of ``units`` (all chains batched); one record per
    unit x chain."""
    from ..sampling import mask_predict, sample

    alpha = _Alphabet(mlm)
    C = opts.uncond_chains if cfg.unconditional else opts.chains
    N = len(units.names)
    free = units.free.repeat_interleave(C, 0)
    t0 = time.perf_counter()
    per_epoch: list[dict] = [{} for _ in range(N * C)]
    final: list[dict] = []
    rows = 0
    if cfg.kind == "warm_start":
        for b in range(N * C):
            u = b // C
            final.append(_state_dict(alpha.text(units.warm[u], units.free[u]), units.native[u], units.warm_scores[u]))
    elif cfg.kind == "mask_predict":
        r = mask_predict(mlm, units.warm, cfg.iterations, units.free, batch_tokens=opts.batch_tokens)
        sc = _scores(mlm, r.ids, units.free, opts.batch_tokens)
        rows = r.forward_rows + int(units.free.sum())
        for b in range(N * C):
            u = b // C
            cdrs = [alpha.text(h[u], units.free[u]) for h in r.history]
            per_epoch[b] = {"cdr": cdrs, **{k: [seq_metrics(c, units.native[u])[k] for c in cdrs]
                                           for k in ("identity", "bleu", "stutter")}}
            final.append(_state_dict(cdrs[-1], units.native[u], sc[u]))
    else:
        total = opts.total_epochs
        block, tt = _schedules(cfg, total)
        key = hashlib.sha1(json.dumps([units.names, C, total, opts.seed]).encode()).hexdigest()[:12]
        jsonl = work / f"{cfg.name.replace('/', '__')}-{key}.jsonl"
        ids = units.warm.repeat_interleave(C, 0)
        res = sample(mlm, ids, method=cfg.method, energy=cfg.energy, epochs=total, burn_in=0,
                     block_size=block, proposal_temperature=cfg.proposal_temperature, top_p=cfg.top_p,
                     target_temperature=tt, order="random", positions=free, generator=_generator(opts.seed, cfg.name),
                     init="given", jsonl=jsonl, batch_tokens=opts.batch_tokens)
        rows = res.forward_rows
        n_free = free.sum(-1)
        k_eff = res.block_size.clamp(max=int(n_free.max()))
        props = -(-n_free[None, :] // k_eff[:, None])                     # [E, B] proposals per epoch
        for b in range(N * C):
            u = b // C
            cdrs = [alpha.text(s[b], free[b]) for s in res.samples]
            m = [seq_metrics(c, units.native[u]) for c in cdrs]
            per_epoch[b] = {"cdr": cdrs, "e_local": res.energy_local[:, b].tolist(),
                            "e_raw": res.energy_raw[:, b].tolist(), "accept": res.accept[:, b].tolist(),
                            "novel": res.novel[:, b].tolist(), "proposals": props[:, b].tolist(),
                            "target_temperature": res.target_temperature.tolist(),
                            "block_size": res.block_size.tolist(),
                            **{k: [x[k] for x in m] for k in ("identity", "bleu", "stutter")}}
            final.append(_state_dict(cdrs[-1], units.native[u], {"e_local": float(res.energy_local[-1, b]),
                                                                 "e_raw": float(res.energy_raw[-1, b])}))
    seconds = time.perf_counter() - t0
    records = []
    for b in range(N * C):
        u = b // C
        pe = per_epoch[b]
        post = dict(final[b])
        post.pop("cdr")
        post.update(accept=None, novel=None)
        if "e_local" in pe:
            sl = slice(opts.burn_in, None)
            for k in ("e_local", "e_raw", "identity", "bleu", "stutter"):
                post[k] = _mean(pe[k][sl])
            p = pe["proposals"][sl]
            n_p = sum(p)
            post["accept"] = sum(a * q for a, q in zip(pe["accept"][sl], p)) / n_p if n_p else None
            post["novel"] = sum(a * q for a, q in zip(pe["novel"][sl], p)) / n_p if n_p else None
        start = _state_dict(alpha.text(units.warm[u], units.free[u]), units.native[u], units.warm_scores[u])
        native = None
        if units.native[u] is not None:
            native = {**units.native_scores[u], "stutter": stutter_rate(units.native[u])}
        records.append({
            "config": cfg.name, "unit": units.names[u], "chain": b % C, "model": _model_name(mlm),
            "epochs": opts.epochs, "burn_in": opts.burn_in, "chains": C, "seed": opts.seed,
            "settings": dataclasses.asdict(cfg), "cdr_native": units.native[u], "native": native,
            "start": start, "per_epoch": pe, "final": final[b], "post_burn_in": post,
            "seconds_per_chain": seconds / (N * C), "forward_rows_per_chain": rows / (N * C)})
    return records


def _model_name(mlm) -> str:
    return str(getattr(mlm, "name", "") or type(mlm).__name__)


def read_results(path: Path) -> list[dict]:
    """Records of a results file; a line cut short by a kill is skipped; for a repeated
    (configuration, unit, chain) the last line wins."""
    out = {(r["config"], r["unit"], r["chain"]): r for r in read_jsonl(path)}
    return list(out.values())


def done_units(records: list[dict], opts: RunOptions) -> set[tuple[str, str]]:
    """(configuration, unit) pairs with all their chains present; raises if the file was written
    with other epochs, burn-in, chains or seed."""
    count: Counter = Counter()
    for r in records:
        uncond = r["settings"]["unconditional"]
        want = {"epochs": opts.epochs, "burn_in": opts.burn_in, "seed": opts.seed,
                "chains": opts.uncond_chains if uncond else opts.chains}
        for k, v in want.items():
            if r[k] != v:
                raise MLMProbError(f"results hold {r['config']} with {k}={r[k]}, not {v}; use another --out "
                                   "or the same settings")
        count[(r["config"], r["unit"])] += 1
    return {k for k, n in count.items()
            if n >= (opts.uncond_chains if CONFIGS.get(k[0], Config("")).unconditional else opts.chains)}


def _subset(units: _Units, keep: list[int]) -> _Units:
    idx = torch.tensor(keep, dtype=torch.long)
    return _Units([units.names[i] for i in keep], [units.native[i] for i in keep], units.ids[idx], units.free[idx],
                  units.warm[idx], [units.native_scores[i] for i in keep], [units.warm_scores[i] for i in keep])


def _write_antibodies(out: Path, antibodies: Sequence[Antibody], units: _Units, mlm) -> None:
    alpha = _Alphabet(mlm)
    rows = [{"name": a.name, "hc": a.hc, "start": a.start, "end": a.end, "cdr": a.cdr,
             "warm": alpha.text(units.warm[i], units.free[i])} for i, a in enumerate(antibodies)]
    (out / "antibodies.json").write_text(dumps(rows, indent=1) + "\n")


def run_experiment(mlm: MaskedLM, antibodies: Sequence[Antibody], configs: Sequence[Config], opts: RunOptions,
                   out: str | Path, log=print) -> dict[str, int]:
    """Run every configuration on the units not yet in ``out/results.jsonl``; returns the number of
    records written per configuration."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    work = out / WORK_DIR
    work.mkdir(exist_ok=True)
    path = out / RESULTS_FILE
    trim_partial_line(path)     # a line cut by a kill: dropped before appending
    done = done_units(read_results(path), opts)
    prepared: dict[bool, _Units] = {}
    written: dict[str, int] = {}
    for cfg in configs:
        names = ([f"all-mask-L{opts.uncond_length}"] if cfg.unconditional else [a.name for a in antibodies])
        todo = [i for i, n in enumerate(names) if (cfg.name, n) not in done]
        if not todo:
            continue
        if cfg.unconditional not in prepared:
            prepared[cfg.unconditional] = prepare_units(mlm, None if cfg.unconditional else antibodies, opts)
            if not cfg.unconditional:
                _write_antibodies(out, antibodies, prepared[False], mlm)
        units = _subset(prepared[cfg.unconditional], todo)
        t0 = time.perf_counter()
        records = run_config(mlm, cfg, units, opts, work)
        with path.open("a") as f:
            for r in records:
                f.write(dumps(r, separators=(",", ":")) + "\n")
            f.flush()
        for p in work.glob(cfg.name.replace("/", "__") + "-*.jsonl"):
            p.unlink()
        written[cfg.name] = len(records)
        log(f"{cfg.name}: {len(todo)} units x chains -> {len(records)} records in {time.perf_counter() - t0:.1f} s")
    try:
        work.rmdir()    # only when empty: a configuration cut short keeps its run file for the next run
    except OSError:
        pass
    return written


# -- command line ----------------------------------------------------------------------------------

def _default_data() -> str | None:
    from ..data import shared_data_dir

    d = shared_data_dir()
    return None if d is None else str(d / "antibody" / "thera_sabdab.csv")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mlmprob.experiments.cdr_h3", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", required=True, help="antiberty, sapiens-vh or a local Hugging Face folder")
    p.add_argument("--out", required=True, help="result folder")
    p.add_argument("--data", default=_default_data(), help="CSV of antibodies")
    p.add_argument("--column", default="HC")
    p.add_argument("--id-column", default="Therapeutic")
    p.add_argument("--tables", default="1,2,3,4,5,u", help="comma list of 1..5 and u (unconditional)")
    p.add_argument("--only", help="comma list of configuration names (overrides --tables for running)")
    p.add_argument("--epochs", type=int, default=4, help="epochs after burn-in")
    p.add_argument("--burn-in", type=int, default=2)
    p.add_argument("--n-antibodies", type=int, default=20)
    p.add_argument("--chains", type=int, default=3)
    p.add_argument("--cdr-definition", choices=("imgt", "kabat"), default="imgt")
    p.add_argument("--uncond-length", type=int, default=120)
    p.add_argument("--uncond-chains", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest on a loaded machine)")
    p.add_argument("--batch-tokens", type=int, default=DEFAULT_BATCH_TOKENS)
    p.add_argument("--report-only", action="store_true", help="only rebuild report.md and the figures")
    p.add_argument("--no-report", action="store_true")
    p.add_argument("--note", default="", help="free text recorded with this invocation in runs.jsonl")
    return p


def _append_run(out: Path, entry: dict) -> None:
    trim_partial_line(out / RUNS_FILE)
    with (out / RUNS_FILE).open("a") as f:
        f.write(dumps(entry) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        return _main(args, argv)
    except MLMProbError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _main(args, argv) -> int:
    from .cdr_h3_report import write_report

    out = Path(args.out)
    opts = RunOptions(args.epochs, args.burn_in, args.chains, args.uncond_length, args.uncond_chains, args.seed,
                      args.batch_tokens)
    if min(args.epochs, args.chains, args.uncond_chains, args.n_antibodies) < 1 or args.burn_in < 0:
        raise MLMProbError("--epochs, --chains, --uncond-chains and --n-antibodies must be >= 1, --burn-in >= 0")
    if not args.report_only:
        if args.data is None:
            raise MLMProbError("no --data given and no shared data folder found")
        torch.set_num_threads(args.threads)
        configs = select_configs([t.strip() for t in args.tables.split(",") if t.strip()],
                                 [n.strip() for n in args.only.split(",")] if args.only else None)
        from ..models import load_mlm

        mlm = load_mlm(args.model)
        abs_ = load_antibodies(args.data, args.n_antibodies, args.column, args.id_column, args.cdr_definition,
                               max_residues=None if getattr(mlm, "max_length", None) is None else mlm.max_length - 2)
        out.mkdir(parents=True, exist_ok=True)
        cmd = "python -m mlmprob.experiments.cdr_h3 " + shlex.join(argv)
        started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        t0 = time.perf_counter()
        _append_run(out, {"event": "start", "command": cmd, "started": started, "threads": args.threads,
                          "note": args.note})
        written = run_experiment(mlm, abs_, configs, opts, out, log=lambda s: print(s, flush=True))
        _append_run(out, {"event": "finish", "command": cmd, "started": started,
                          "wall_s": round(time.perf_counter() - t0, 1), "written": written, "note": args.note})
    if not args.no_report:
        path = write_report(out, opts, model=args.model)
        print(f"report: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

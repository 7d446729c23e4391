"""The CDR-H3 runner's work: the antibodies, their encoded units and warm starts, one configuration's
chains (``run_config``) and a whole resumable run into ``results.jsonl`` (``run_experiment``). The
command line is ``cdr_h3``; see its docstring for the task and the configurations.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from mlmprob.alphabet import is_protein
from mlmprob.errors import MLMProbError
from mlmprob.jsonl import dumps
from mlmprob.metrics.sequences import stutter_rate
from mlmprob.models.protocol import MaskedLM
from mlmprob.models.reader import name_of, reader_of
from mlmprob.runtime.log import check_config
from mlmprob.runtime.seeds import seeded_generator

from .cdr_h3_common import CONFIGS, RESULTS_FILE, WORK_DIR, Config, RunOptions, read_results, seq_metrics
from .runner import Experiment, Run, run_units

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
        return self.hc[self.start : self.end]


def load_antibodies(
    path: str | Path,
    n: int,
    column: str = "HC",
    id_column: str | None = "Therapeutic",
    definition: str = "imgt",
    max_residues: int | None = None,
) -> list[Antibody]:
    """The first ``n`` rows (file order) whose ``column`` holds only the 20 standard residues and
    whose CDR-H3 ``find_cdr_h3`` locates (and no longer than ``max_residues``)."""
    from mlmprob.data import read_records
    from mlmprob.sampling.cdr import find_cdr_h3

    out = []
    for rec in read_records(path, "csv", column, id_column):
        seq = rec.seq.strip().upper()
        if not is_protein(seq):
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


# -- runner ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Units:
    """Encoded inputs of a set of units (antibodies, or the one unconditional sequence)."""

    names: list[str]
    native: list[str | None]
    ids: torch.Tensor  # [N, L] native (or all-mask) ids
    free: torch.Tensor  # [N, L]
    warm: torch.Tensor  # [N, L] warm start
    native_scores: list[dict | None]
    warm_scores: list[dict]


def _texts_for(mlm, seqs: Sequence[str]) -> list[str]:
    from mlmprob.models.tokenizers import ResidueTokenizer

    tok = reader_of(mlm).tokenizer
    return list(seqs) if isinstance(tok, ResidueTokenizer) else [" ".join(s) for s in seqs]


class _Alphabet:
    """Token id -> residue letter, for the ids the samplers may place."""

    def __init__(self, mlm):
        from mlmprob.sampling.proposals import allowed_ids

        self.chars = {int(i): mlm.decode([int(i)]).replace(" ", "") for i in allowed_ids(mlm).nonzero()[:, 0]}

    def text(self, ids_row: torch.Tensor, free_row: torch.Tensor) -> str:
        return "".join(self.chars.get(int(t), "?") for t in ids_row[free_row].tolist())


def _scores(mlm, ids: torch.Tensor, free: torch.Tensor) -> list[dict]:
    from mlmprob.energies import token_scores

    s = token_scores(mlm, ids, free)
    return [{"e_local": float(a), "e_raw": float(b)} for a, b in zip(s.e_local.tolist(), s.e_raw.tolist())]


def prepare_units(
    mlm: MaskedLM, antibodies: Sequence[Antibody] | None, opts: RunOptions, definition: str = "imgt"
) -> _Units:
    """Encode the antibodies (CDR-H3 free) or, with ``antibodies=None``, one all-mask sequence of
    ``opts.uncond_length`` residues; compute the warm starts and the native energies."""
    from mlmprob.sampling.cdr import cdr_h3_mask
    from mlmprob.sampling.init import initialize

    mlm = reader_of(mlm, opts.batch_tokens)
    if antibodies is None:
        enc = mlm.encode(_texts_for(mlm, ["A" * opts.uncond_length]))
        free = enc.word_ids >= 0
        ids = enc.input_ids.masked_fill(free, mlm.mask_id)
        warm, _ = initialize(mlm, ids, free, "greedy")
        return _Units([f"all-mask-L{opts.uncond_length}"], [None], ids, free, warm, [None], _scores(mlm, warm, free))
    enc = mlm.encode(_texts_for(mlm, [a.hc for a in antibodies]))
    free = torch.stack([cdr_h3_mask(a.hc, enc.word_ids[i], definition) for i, a in enumerate(antibodies)])
    for a, f in zip(antibodies, free):
        if int(f.sum()) != a.end - a.start:
            raise MLMProbError(f"{a.name}: CDR-H3 has {a.end - a.start} residues but {int(f.sum())} tokens")
    warm, _ = initialize(mlm, enc.input_ids, free, "greedy")
    return _Units(
        [a.name for a in antibodies],
        [a.cdr for a in antibodies],
        enc.input_ids,
        free,
        warm,
        _scores(mlm, enc.input_ids, free),
        _scores(mlm, warm, free),
    )


def _mean(xs) -> float | None:
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return sum(xs) / len(xs) if xs else None


def _state_dict(cdr: str, native: str | None, scores: dict) -> dict:
    return {"cdr": cdr, **scores, **seq_metrics(cdr, native)}


def run_config(mlm: MaskedLM, cfg: Config, units: _Units, opts: RunOptions, work: Path) -> list[dict]:
    """Run one configuration on every unit of ``units`` (all chains batched); one record per
    unit x chain."""
    from mlmprob.sampling import mask_predict

    mlm = reader_of(mlm, opts.batch_tokens)

    alpha = _Alphabet(mlm)
    C = opts.uncond_chains if cfg.unconditional else opts.chains
    N = len(units.names)
    t0 = time.perf_counter()
    per_epoch: list[dict] = [{} for _ in range(N * C)]
    final: list[dict] = []
    rows = 0
    if cfg.kind == "warm_start":
        for b in range(N * C):
            u = b // C
            final.append(_state_dict(alpha.text(units.warm[u], units.free[u]), units.native[u], units.warm_scores[u]))
    elif cfg.kind == "mask_predict":
        r = mask_predict(mlm, units.warm, cfg.iterations, units.free)
        sc = _scores(mlm, r.ids, units.free)
        rows = r.forward_rows + int(units.free.sum())
        for b in range(N * C):
            u = b // C
            cdrs = [alpha.text(h[u], units.free[u]) for h in r.history]
            per_epoch[b] = {
                "cdr": cdrs,
                **{k: [seq_metrics(c, units.native[u])[k] for c in cdrs] for k in ("identity", "bleu", "stutter")},
            }
            final.append(_state_dict(cdrs[-1], units.native[u], sc[u]))
    else:
        rows = _run_sampler(mlm, cfg, units, opts, work, C, per_epoch, final)
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
            for k in ("e_local", "e_raw", "identity", "bleu", "stutter", "log_prob"):
                if k in pe:
                    post[k] = _mean(pe[k][sl])
            p = pe["proposals"][sl]
            n_p = sum(p) if cfg.method != "ancestral" else 0  # an ancestral draw accepts every token: no rate
            post["accept"] = sum(a * q for a, q in zip(pe["accept"][sl], p)) / n_p if n_p else None
            post["novel"] = sum(a * q for a, q in zip(pe["novel"][sl], p)) / n_p if n_p else None
        start = _state_dict(alpha.text(units.warm[u], units.free[u]), units.native[u], units.warm_scores[u])
        native = None
        if units.native[u] is not None:
            native = {**units.native_scores[u], "stutter": stutter_rate(units.native[u])}
        records.append(
            {
                "config": cfg.name,
                "unit": units.names[u],
                "chain": b % C,
                "model": _model_name(mlm),
                "epochs": opts.epochs,
                "burn_in": opts.burn_in,
                "chains": C,
                "seed": opts.seed,
                "settings": dataclasses.asdict(cfg),
                "cdr_native": units.native[u],
                "native": native,
                "start": start,
                "per_epoch": pe,
                "final": final[b],
                "post_burn_in": post,
                "seconds_per_chain": seconds / (N * C),
                "forward_rows_per_chain": rows / (N * C),
            }
        )
    return records


def _run_sampler(
    mlm: MaskedLM,
    cfg: Config,
    units: _Units,
    opts: RunOptions,
    work: Path,
    C: int,
    per_epoch: list[dict],
    final: list[dict],
) -> int:
    """``sample`` (MH, degenerate Gibbs or ancestral) from the warm start for ``C`` chains per unit, resumable
    through a run file in ``work``; fills ``per_epoch`` and ``final`` per chain and returns the model rows."""
    from mlmprob.sampling import sample
    from mlmprob.sampling.io import RunFile

    alpha = _Alphabet(mlm)
    free = units.free.repeat_interleave(C, 0)
    total = opts.total_epochs
    key = hashlib.sha1(json.dumps([units.names, C, total, opts.seed]).encode()).hexdigest()[:12]
    jsonl = work / f"{cfg.name.replace('/', '__')}-{key}.jsonl"
    ids = units.warm.repeat_interleave(C, 0)
    res = sample(
        mlm,
        ids,
        cfg.sampler_spec(total),
        positions=free,
        generator=seeded_generator(opts.seed, "cdr-h3", cfg.name),
        run_file=RunFile(jsonl),
    )
    n_free = free.sum(-1)
    k_eff = res.block_size.clamp(max=int(n_free.max()))
    props = -(-n_free[None, :] // k_eff[:, None])  # [E, B] proposals per epoch
    for b in range(free.shape[0]):
        u = b // C
        cdrs = [alpha.text(s[b], free[b]) for s in res.samples]
        m = [seq_metrics(c, units.native[u]) for c in cdrs]
        per_epoch[b] = {
            "cdr": cdrs,
            "e_local": res.energy_local[:, b].tolist(),
            "e_raw": res.energy_raw[:, b].tolist(),
            "accept": res.accept[:, b].tolist(),
            "novel": res.novel[:, b].tolist(),
            "proposals": props[:, b].tolist(),
            "target_temperature": res.target_temperature.tolist(),
            "block_size": res.block_size.tolist(),
            **{k: [x[k] for x in m] for k in ("identity", "bleu", "stutter")},
        }
        if res.log_prob is not None:  # ancestral: log p_sigma of each draw along its order
            per_epoch[b]["log_prob"] = res.log_prob[:, b].tolist()
        final.append(
            _state_dict(
                cdrs[-1],
                units.native[u],
                {"e_local": float(res.energy_local[-1, b]), "e_raw": float(res.energy_raw[-1, b])},
            )
        )
    return res.forward_rows


def _model_name(mlm) -> str:
    return name_of(mlm)


def done_units(records: list[dict], opts: RunOptions) -> set[tuple[str, str]]:
    """(configuration, unit) pairs with all their chains present; raises if the file was written
    with other epochs, burn-in, chains or seed."""
    count: Counter = Counter()
    for r in records:
        uncond = r["settings"]["unconditional"]
        want = {
            "epochs": opts.epochs,
            "burn_in": opts.burn_in,
            "seed": opts.seed,
            "chains": opts.uncond_chains if uncond else opts.chains,
        }
        check_config(f"{RESULTS_FILE} ({r['config']})", {k: r[k] for k in want}, want)
        count[(r["config"], r["unit"])] += 1
    return {
        k
        for k, n in count.items()
        if n >= (opts.uncond_chains if CONFIGS.get(k[0], Config("")).unconditional else opts.chains)
    }


def _subset(units: _Units, keep: list[int]) -> _Units:
    idx = torch.tensor(keep, dtype=torch.long)
    return _Units(
        [units.names[i] for i in keep],
        [units.native[i] for i in keep],
        units.ids[idx],
        units.free[idx],
        units.warm[idx],
        [units.native_scores[i] for i in keep],
        [units.warm_scores[i] for i in keep],
    )


def _write_antibodies(out: Path, antibodies: Sequence[Antibody], units: _Units, mlm) -> None:
    alpha = _Alphabet(mlm)
    rows = [
        {
            "name": a.name,
            "hc": a.hc,
            "start": a.start,
            "end": a.end,
            "cdr": a.cdr,
            "warm": alpha.text(units.warm[i], units.free[i]),
        }
        for i, a in enumerate(antibodies)
    ]
    (out / "antibodies.json").write_text(dumps(rows, indent=1) + "\n")


class CdrH3Units(Experiment):
    """The CDR-H3 experiment's units on the runner: one per configuration, running the chains of the
    antibodies that configuration lacks in one batch. ``run.state`` holds ``mlm``, ``antibodies``,
    ``configs``, ``opts`` and ``log``."""

    encode = staticmethod(lambda r: dumps(r, separators=(",", ":")))

    def resume(self, run: Run) -> None:
        opts, log = run.state["opts"], run.log
        records = read_results(log.path)
        done = done_units(records, opts)
        # a configuration's records are one commit: if a kill cut it short, it is dropped and run again whole
        # (its chains share one batch and one generator, so a unit run alone would draw other numbers)
        cut = {r["config"] for r in records if (r["config"], r["unit"]) not in done}
        if log.drop_tail(lambda r: r["config"] not in cut):
            done = done_units(read_results(log.path), opts)
        run.done = dict.fromkeys(done)
        run.state.update(work=run.out / WORK_DIR, prepared={})
        run.state["work"].mkdir(exist_ok=True)

    def key(self, record: dict) -> tuple[str, str]:
        return record["config"], record["unit"]

    def units(self, run: Run):
        return run.state["configs"]

    def label(self, cfg: Config) -> str:
        return cfg.name

    def _todo(self, run: Run, cfg: Config) -> list[int]:
        opts = run.state["opts"]
        names = [f"all-mask-L{opts.uncond_length}"] if cfg.unconditional else [a.name for a in run.state["antibodies"]]
        return [i for i, n in enumerate(names) if (cfg.name, n) not in run.done]

    def finished(self, run: Run, cfg: Config) -> bool:
        return not self._todo(run, cfg)

    def run_unit(self, run: Run, cfg: Config):
        mlm, antibodies, opts, prepared, work = (
            run.state[k] for k in ("mlm", "antibodies", "opts", "prepared", "work")
        )
        todo = self._todo(run, cfg)
        if cfg.unconditional not in prepared:
            prepared[cfg.unconditional] = prepare_units(mlm, None if cfg.unconditional else antibodies, opts)
            if not cfg.unconditional:
                _write_antibodies(run.out, antibodies, prepared[False], mlm)
        t0 = time.perf_counter()
        records = run_config(mlm, cfg, _subset(prepared[cfg.unconditional], todo), opts, work)
        yield records  # one commit
        for p in work.glob(cfg.name.replace("/", "__") + "-*.jsonl"):
            p.unlink()
        run.state["log"](
            f"{cfg.name}: {len(todo)} units x chains -> {len(records)} records in {time.perf_counter() - t0:.1f} s"
        )

    def teardown(self, run: Run) -> None:
        try:
            run.state["work"].rmdir()  # only when empty: a configuration cut short keeps its run file for the next run
        except OSError:
            pass


def run_experiment(
    mlm: MaskedLM,
    antibodies: Sequence[Antibody],
    configs: Sequence[Config],
    opts: RunOptions,
    out: str | Path,
    log=print,
) -> dict[str, int]:
    """Run every configuration on the units not yet in ``out/results.jsonl``; returns the number of
    records written per configuration."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    r = Run(
        argparse.Namespace(out=str(out)),
        [],
        out,
        "",
        experiment=CdrH3Units(),
        state={"mlm": mlm, "antibodies": antibodies, "configs": configs, "opts": opts, "log": log},
    )
    return dict(run_units(r.experiment, r, journal=False))

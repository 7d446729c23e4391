"""``mlmprob design``: variants of a parent under a product of experts and hard constraints.

The target is ``p(x) ∝ exp(-Σ_k w_k E_k(x) / τ) · 1[x ∈ C]``: each ``--expert NAME[:local|raw][:WEIGHT]`` (default:
``--model``'s E_local, weight 1; each reads the sequence through its own tokenizer; one model as local and raw is
two terms, ``NAME`` and ``NAME:raw``), an oracle (``--oracle module:function``, only with ``--allow-code``: it runs
your code; higher scores are better; its source file's digest is stored, so a resume refuses an edited one, though
not code it imports), and ``--hamming W`` (the distance to the parent). ``C``: ``--positions`` (the 1-based residues
that may change), ``--allowed POS:RESIDUES``, ``--max-mutations``, ``--forbid`` / ``--require`` motifs (regular
expressions over the upper-case residues, of bounded cost: no repeated group holding a quantifier or an alternation,
counts up to 10,000; or the presets glycosylation ``N[^P][ST]``, deamidation ``NG``, isomerization ``DG``,
unpaired-cysteine (an odd number of C) and liabilities (all four)).

``--method mh`` samples the target exactly (single-site MH, proposals from the ``--proposal`` expert renormalised
over the allowed residues, with the Hastings correction; moves out of ``C`` are rejected); ``anneal`` optimises
(temperature from ``--anneal-start`` to ``--anneal-end``); ``replica`` runs ``--chains`` ladders of chains at
``--temperatures`` swapping states by the exact rule.

One row per chain (JSONL, or ``--out x.tsv`` / ``x.parquet``), written as it goes: its id (``chain0``, ...), the
sequence at the target's temperature, its mutations from the parent as a ProteinGym mutant string (``A23G:K45R``,
1-based), every term's energy, the weighted total, the acceptance rate, the best sequence visited in ``C`` and the
model rows read; for replica exchange each rung's temperature, acceptance and swap rate. Each chain's randomness
comes from ``(--seed, chain index)`` only, so the rows do not depend on ``--shard I/N``, ``--workers`` or a resume:
``--resume`` finishes a killed run (a changed option is refused), ``OUT.meta.json`` records the configuration and a
second process writing the same ``--out`` is refused. A bar on stderr follows every step of every chain, with the
acceptance so far and the model rows read (with ``--workers``, ``--devices`` or Ray, a chain at a time);
``--no-progress`` turns it off.
"""

from __future__ import annotations

import argparse
import math
import sys

from ..alphabet import AMINO_ACIDS
from ..argtypes import LIMIT, finite_float, nonnegative_int
from ..designing.constraints import Constraints
from ..designing.spec import EXPERT_KINDS, DesignSpec
from ..errors import MLMProbError
from ..fields import add_field_flags
from .common import add_model_args, add_runtime_args, report_done, run_options, spec_of


def register(sub) -> None:
    short = "sample or optimise variants of a parent under several experts and hard constraints"
    p = sub.add_parser("design", help=short, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("parent", help="the parent sequence (one-letter residues)")
    kinds = "local, raw or mutant_marginal (EvoProtGrad's one-row score: another target)"
    default = "its weight (default: --model, local, weight 1)"
    expert = f"a masked-LM expert (repeatable): a model as --model takes it, its energy {kinds}, {default}"
    p.add_argument("--expert", action="append", metavar="NAME[:KIND][:WEIGHT]", help=expert)
    p.add_argument("--oracle", metavar="MODULE:FUNCTION", help="a property model: FUNCTION(sequences) -> numbers")
    p.add_argument("--allow-code", action="store_true", help="allow --oracle to import and run your module")
    p.add_argument("--oracle-weight", type=finite_float, default=1.0, help="the oracle term's weight")
    p.add_argument("--oracle-minimize", action="store_true", help="lower oracle scores are better")
    g = p.add_argument_group("sampler")  # the spec's fields, then the job's seed
    add_field_flags(g, DesignSpec, SAMPLER_FLAGS)
    seed = "the run's seed: chain C draws from a generator seeded by (seed, C) alone"
    g.add_argument("--seed", type=nonnegative_int, default=0, help=seed)
    add_field_flags(p.add_argument_group("constraints"), DesignSpec, CONSTRAINT_FLAGS)
    add_model_args(p)
    out = "result file, .jsonl, .tsv or .parquet, one row per chain written as it goes, resumable with --resume"
    p.add_argument("--out", "-o", help=f"{out} (default: JSONL on stdout)")
    add_runtime_args(p)
    p.set_defaults(func=run)


#: The constraints' flags, made from :class:`DesignSpec`'s fields.
CONSTRAINT_FLAGS = ("positions", "allowed", "max_mutations", "forbid", "require", "start_invalid", "keep_parent_motifs")
#: The sampler's flags made from :class:`DesignSpec`'s fields.
SAMPLER_FLAGS = (
    "method chains steps temperature proposal proposal_temperature sites informed delayed hamming anneal_start "
    "anneal_end anneal_schedule temperatures swap_every"
).split()


def parse_expert(text: str) -> tuple[str, str, float]:
    """``NAME[:local|raw][:WEIGHT]`` -> ``(name, kind, weight)``."""
    name, kind, weight = text, "local", 1.0
    parts = text.split(":")
    if len(parts) > 1:
        try:
            weight = float(parts[-1])
            parts = parts[:-1]
        except ValueError:
            pass
        if not abs(weight) <= LIMIT:  # nan, inf, or over the cap of --hamming and --oracle-weight (argtypes)
            most, got = f" no larger than {LIMIT:g}" if math.isfinite(weight) else "", text.rsplit(":")[-1]
            raise MLMProbError(f"--expert {text!r}: the weight must be a finite number{most}, got {got!r}")
    if len(parts) > 1 and parts[-1] in EXPERT_KINDS:
        kind, parts = parts[-1], parts[:-1]
    elif len(parts) > 1 and parts[-1].replace("_", "").isalpha():  # a word where the kind stands: a typo
        raise MLMProbError(f"--expert {text!r}: the energy is one of {', '.join(EXPERT_KINDS)}, not {parts[-1]!r}")
    name = ":".join(parts)
    if not name:
        raise MLMProbError(f"--expert {text!r}: give a model name")
    return name, kind, weight


def design_spec(args) -> DesignSpec:
    """The :class:`DesignSpec` of the parsed arguments (``--positions``, ``--allowed``: parsed by their flags)."""
    positions = getattr(args, "positions", None)
    if positions is not None and set(positions) == set(range(1, len(args.parent.strip()) + 1)):
        return spec_of(DesignSpec, args, positions=None)  # every residue: the default, stored (and resumed) as such
    return spec_of(DesignSpec, args)


def expected_ids(config: dict, limit: int | None = None):
    """The chain ids (``chain0`` ... ``chainN-1``) a design run with this stored ``config`` covers, for ``merge``."""
    from ..designing.job import chains_of

    return [c.id for c in chains_of(int(config["chains"]))]


def design_job(args, spec: DesignSpec):
    """The :class:`~mlmprob.designing.job.DesignJob` of the parsed arguments: the experts (default ``--model``'s
    E_local), the oracle (checked here: imported only with ``--allow-code``), the parent, the spec, the seed."""
    from ..designing.job import DesignJob, import_function, oracle_digest
    from ..models.spec import ModelSpec

    if args.oracle and not args.allow_code:
        raise MLMProbError("--oracle imports and runs your code: pass --allow-code to allow it")
    if args.oracle:
        import_function(args.oracle)  # a missing module or function: refused before any model loads
    experts = tuple(parse_expert(t) for t in (args.expert or [args.model]))
    model = ModelSpec(experts[0][0], args.dtype, args.allow_pickle, args.batch_tokens)
    oracle = dict(oracle=args.oracle, oracle_weight=args.oracle_weight, oracle_maximize=not args.oracle_minimize)
    oracle.update(oracle_sha256=oracle_digest(args.oracle) if args.oracle else None)
    return DesignJob(model_spec=model, parent=args.parent.strip(), spec=spec, seed=args.seed, experts=experts, **oracle)


def check_oracle_resume(out, config: dict) -> None:
    """A resumed output written with this oracle whose source has changed since is refused in one line naming the
    oracle (the configuration check would refuse it too, naming only ``oracle_sha256``)."""
    from ..runtime.log import RunMeta
    from ..runtime.writers import meta_path

    stored = RunMeta(meta_path(out)).config() or {}
    was, now = stored.get("oracle_sha256"), config.get("oracle_sha256")
    if config.get("oracle") and stored.get("oracle") == config["oracle"] and was and now and was != now:
        raise MLMProbError(
            f"cannot resume {out}: the oracle {config['oracle']} changed since it was written (the sha256 of its "
            f"source {str(was).removeprefix('sha256:')[:12]} then, {str(now).removeprefix('sha256:')[:12]} now): "
            "its rows would mix two oracles; resume with the same code, or choose another --out"
        )


def run(args) -> int:
    from ..designing.job import chains_of
    from ..runtime.command import StreamCommand, run_command, stored_config

    spec = design_spec(args)
    job = design_job(args, spec)
    Constraints.build(job.parent, AMINO_ACIDS, **spec.constraint_keywords())  # bad motifs: before any model loads
    opts = run_options(args)
    config = stored_config("design", job.model_spec, job.settings(), {"models": [e[0] for e in job.expert_list]})
    if opts.resume and opts.out is not None:
        check_oracle_resume(opts.out, config)
    summary = RungSummary()
    # the bar: every step of every chain (a replica ladder's rungs one step)
    how: dict = dict(empty="no chains", unit_name="step", unit_steps=spec.steps, chunk_size=1, on_rows=summary.add)
    command = StreamCommand(job, lambda: chains_of(spec.chains), config, **how)
    done = run_command(command, opts)
    for line in summary.lines():
        print(line, file=sys.stderr)
    tail = f"; {summary.model_rows} model rows read"
    report_done(f"{done.written} chains designed", done, args.out, opts.shard, unit="chains ", tail=tail)
    return 0


class RungSummary:
    """The mean acceptance (and swap) rate per temperature over the rows written by this run, for stderr."""

    def __init__(self):
        self.rows: list[dict] = []
        self.model_rows = 0

    def add(self, rows: list[dict]) -> None:
        for r in rows:
            self.model_rows += int(r.get("model_rows", 0))
            temps, acc = r.get("rung_temperatures", [r["temperature"]]), r.get("rung_acceptance", [r["acceptance"]])
            self.rows.append({"temperatures": temps, "acceptance": acc, "swaps": r.get("rung_swap_rate", [])})

    def lines(self) -> list[str]:
        if not self.rows:
            return []
        n = len(self.rows)
        out = []
        for k, tau in enumerate(self.rows[0]["temperatures"]):
            acc = sum(r["acceptance"][k] for r in self.rows) / n
            swaps = [r["swaps"][k] for r in self.rows if k < len(r["swaps"])]
            swap = f", swaps {sum(swaps) / len(swaps):.2f}" if swaps else ""
            out.append(f"τ={tau:g}: acceptance {acc:.2f}{swap} (mean over {n} chains)")
        return out

"""``mlmprob design``: variants of a parent under a product of experts and hard constraints.

The target is ``p(x) ∝ exp(-Σ_k w_k E_k(x) / τ) · 1[x ∈ C]``: each ``--expert NAME[:local|raw][:WEIGHT]``
(default: antiberty's E_local, weight 1; each reads the sequence through its own tokenizer), an oracle
(``--oracle module:function``, only with ``--allow-code``: it runs your code; higher scores are better), and
``--hamming W`` (the distance to the parent). ``C``: ``--positions`` (the 1-based residues that may change),
``--allowed POS:RESIDUES``, ``--max-mutations``, ``--forbid`` / ``--require`` motifs (regular expressions, or the
presets glycosylation ``N[^P][ST]``, deamidation ``NG``, isomerization ``DG``, unpaired-cysteine (an odd number
of C) and liabilities (all four)).

``--method mh`` samples the target exactly (single-site MH, proposals from the ``--proposal`` expert renormalised
over the allowed residues, with the Hastings correction; moves out of ``C`` are rejected); ``anneal`` optimises
(temperature from ``--anneal-start`` to ``--anneal-end``); ``replica`` runs ``--chains`` chains at each of
``--temperatures`` swapping states by the exact rule. One row per chain (JSONL, or TSV for ``--out x.tsv``):
the sequence, its mutations from the parent as a ProteinGym mutant string (``A23G:K45R``, 1-based), every
term's energy, the weighted total, the acceptance rate and the best sequence visited in ``C``; the
per-temperature acceptance and swap rates go to stderr.
"""

from __future__ import annotations

import argparse
import sys

from ..argtypes import finite_float, nonnegative_int, positive_float, positive_int
from ..designing.spec import METHODS, SCHEDULES, DesignSpec
from ..errors import MLMProbError

__all__ = ["register", "run"]


def register(sub) -> None:
    p = sub.add_parser(
        "design",
        help="sample or optimise variants of a parent under several experts and hard constraints",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("parent", help="the parent sequence (one-letter residues)")
    p.add_argument(
        "--expert",
        action="append",
        metavar="NAME[:KIND][:WEIGHT]",
        help="a masked-LM expert (repeatable): a model as --model takes it, its energy local or raw, its weight "
        "(default: antiberty:local:1)",
    )
    p.add_argument(
        "--oracle", metavar="MODULE:FUNCTION", help="a property model: FUNCTION(list of sequences) -> numbers"
    )
    p.add_argument("--allow-code", action="store_true", help="allow --oracle to import and run your module")
    p.add_argument("--oracle-weight", type=finite_float, default=1.0, help="the oracle term's weight")
    p.add_argument("--oracle-minimize", action="store_true", help="lower oracle scores are better")
    d = DesignSpec()
    g = p.add_argument_group("sampler")
    g.add_argument(
        "--method",
        choices=METHODS,
        default=d.method,
        help="mh: exact samples of the target; anneal: optimise (a temperature schedule); replica: parallel tempering",
    )
    g.add_argument("--chains", type=positive_int, default=d.chains, help="chains (per temperature for replica)")
    g.add_argument("--steps", type=positive_int, default=d.steps, help="single-site proposals per chain")
    g.add_argument("--temperature", type=positive_float, default=d.temperature, help="the target's temperature τ")
    g.add_argument(
        "--proposal", default=d.proposal, help="the proposing expert's name, or uniform (default: the first)"
    )
    g.add_argument(
        "--proposal-temperature",
        type=positive_float,
        default=d.proposal_temperature,
        help="temperature of the expert's proposal (the ratio corrects for it)",
    )
    g.add_argument("--hamming", type=finite_float, default=d.hamming, help="weight of the Hamming distance term")
    g.add_argument("--anneal-start", type=positive_float, default=d.anneal_start, help="anneal: the first temperature")
    g.add_argument("--anneal-end", type=positive_float, default=d.anneal_end, help="anneal: the last temperature")
    g.add_argument(
        "--anneal-schedule", choices=SCHEDULES, default=d.anneal_schedule, help="anneal: how the temperature falls"
    )
    g.add_argument("--temperatures", default="1,2,4", help="replica exchange's ladder, increasing, e.g. 1,1.5,2.5")
    g.add_argument("--swap-every", type=positive_int, default=d.swap_every, help="steps between swap rounds")
    g.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the random generator")
    c = p.add_argument_group("constraints")
    c.add_argument("--positions", help="1-based residues that may change, e.g. 95-102,105 (default: all)")
    c.add_argument("--allowed", action="append", default=[], metavar="POS:RESIDUES", help="e.g. 31:STY (repeatable)")
    c.add_argument(
        "--max-mutations", type=nonnegative_int, default=None, help="at most this many mutations from the parent"
    )
    c.add_argument("--forbid", action="append", default=[], metavar="MOTIF", help="regex or preset (repeatable)")
    c.add_argument("--require", action="append", default=[], metavar="MOTIF", help="regex (repeatable)")
    c.add_argument("--start-invalid", action="store_true", help="start at a parent that violates a constraint")
    c.add_argument(
        "--keep-parent-motifs",
        action="store_true",
        help="tolerate the forbidden motifs the parent already has, where it has them (forbid only new ones)",
    )
    from .common import add_model_args

    add_model_args(p)
    p.add_argument("--out", "-o", help="result file, .jsonl or .tsv (default: JSONL on stdout)")
    p.set_defaults(func=run)


def parse_expert(text: str) -> tuple[str, str, float]:
    """``NAME[:local|raw][:WEIGHT]`` -> ``(name, kind, weight)``.

    >>> parse_expert("sapiens-vh:raw:0.5"), parse_expert("antiberty"), parse_expert("m:2")
    (('sapiens-vh', 'raw', 0.5), ('antiberty', 'local', 1.0), ('m', 'local', 2.0))
    """
    name, kind, weight = text, "local", 1.0
    parts = text.split(":")
    if len(parts) > 1:
        try:
            weight = float(parts[-1])
            parts = parts[:-1]
        except ValueError:
            pass
    if len(parts) > 1 and parts[-1] in ("local", "raw"):
        kind, parts = parts[-1], parts[:-1]
    name = ":".join(parts)
    if not name:
        raise MLMProbError(f"--expert {text!r}: give a model name")
    return name, kind, weight


def load_oracle(text: str, allow_code: bool):
    """The function ``module:function`` (imported only with ``--allow-code``)."""
    import importlib

    if not allow_code:
        raise MLMProbError("--oracle imports and runs your code: pass --allow-code to allow it")
    module, _, name = text.partition(":")
    if not module or not name:
        raise MLMProbError(f"--oracle must be module:function, got {text!r}")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise MLMProbError(f"--oracle {text}: {e}") from None
    if not callable(fn):
        raise MLMProbError(f"--oracle {text} is not callable")
    return fn


def design_spec(args) -> DesignSpec:
    """The :class:`DesignSpec` of the parsed arguments."""
    from ..positions import parse_numbers

    allowed = []
    for text in args.allowed:
        pos, sep, letters = text.partition(":")
        if not sep or not pos.strip().isdigit():
            raise MLMProbError(f"--allowed must be POS:RESIDUES (1-based), got {text!r}")
        allowed.append((int(pos), letters.strip()))
    try:
        temperatures = tuple(float(t) for t in args.temperatures.split(","))
    except ValueError:
        raise MLMProbError(f"--temperatures must be numbers separated by commas, got {args.temperatures!r}") from None
    given = dict(
        positions=None if args.positions is None else tuple(parse_numbers(args.positions, "--positions")),
        allowed=tuple(allowed),
        forbid=tuple(args.forbid),
        require=tuple(args.require),
        temperatures=temperatures,  # the spec refuses a ladder other than its default unless replica
    )
    from .common import spec_of

    return spec_of(DesignSpec, args, **given)


def run(args) -> int:
    spec = design_spec(args)
    oracle = load_oracle(args.oracle, args.allow_code) if args.oracle else None
    import torch

    from ..designing.api import build_target, run_design
    from ..designing.terms import Expert, Oracle
    from ..models.spec import ModelSpec

    terms: list[Expert | Oracle] = []
    for text in args.expert or ["antiberty"]:
        name, kind, weight = parse_expert(text)
        mlm = ModelSpec(name, args.dtype, args.allow_pickle, args.batch_tokens).load(args.device)
        terms.append(Expert(mlm, kind=kind, weight=weight, name=name))
    if oracle is not None:
        terms.append(Oracle(oracle, weight=args.oracle_weight, maximize=not args.oracle_minimize))
    target = build_target(terms, args.parent, spec)
    result = run_design(target, spec, torch.Generator().manual_seed(args.seed))
    write_rows(result, args.out)
    for t in result.stats["temperatures"]:
        swap = f", swaps {t['swap_rate']:.2f}" if "swap_rate" in t else ""
        print(
            f"τ={t['temperature']:g}: acceptance {t['acceptance']:.2f}, proposals out of C "
            f"{t['left_constraints']:.2f}{swap}",
            file=sys.stderr,
        )
    print(f"{len(result.rows)} chains; {result.stats['model_rows']} model rows read", file=sys.stderr)
    return 0


def flat_rows(result) -> list[dict]:
    """One flat dict per chain: every term's energy as ``energy_<name>``."""
    out = []
    for row in result.rows:
        flat = {k: v for k, v in row.items() if k != "energies"}
        flat.update({f"energy_{n}": e for n, e in row["energies"].items()})
        out.append(flat)
    return out


def write_rows(result, out: str | None) -> None:
    from ..jsonl import dumps

    rows = flat_rows(result)
    if out and out.lower().endswith(".tsv"):
        cols = list(rows[0])
        text = "\t".join(cols) + "\n" + "".join("\t".join(_cell(r[c]) for c in cols) + "\n" for r in rows)
    else:
        text = "".join(dumps(r) + "\n" for r in rows)
    if out and out != "-":
        with open(out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def _cell(v) -> str:
    return "" if v is None else str(v)

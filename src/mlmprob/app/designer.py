"""The Sample tab's design section without gradio: :func:`design_view` runs ``mlmprob design --seed S``'s chains on
experts chosen among the app's model and the embedded ones (:class:`ExpertPool`) under the page's constraints."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..designing.constraints import PRESETS
from ..designing.spec import DesignSpec
from ..errors import MLMProbError
from ..models.spec import ModelSpec
from ..positions import parse_numbers
from .compute import LIMITS, Limits

#: The models the app offers as experts beside its own (protein MLMs shipped with the package).
EMBEDDED = ("antiberty", "sapiens-vh", "sapiens-vl")
#: The liability presets offered as check boxes (``liabilities`` is all of them).
LIABILITIES = tuple(k for k in PRESETS if k != "liabilities")
METHODS = ("mh", "anneal", "replica")


class ExpertPool:
    """The models the page can use as experts: the app's own (``name``) and the embedded ones, each loaded once
    on the app model's device when first chosen (``loader(name)``; the default loads the built-in model)."""

    def __init__(self, mlm, name: str, loader: Callable[[str], object] | None = None):
        self.name = name
        self.loaded: dict[str, object] = {name: mlm}
        self._loader = loader or (lambda n: ModelSpec(n).load(str(getattr(mlm, "device", "cpu"))))

    @property
    def choices(self) -> list[str]:
        return [self.name, *(n for n in EMBEDDED if n != self.name)]

    def get(self, name: str):
        if name not in self.choices:
            raise MLMProbError(f"expert {name!r} is not one of the models offered here: {', '.join(self.choices)}")
        if name not in self.loaded:
            self.loaded[name] = self._loader(name)
        return self.loaded[name]


def parse_experts(rows: Sequence[Sequence]) -> list[tuple[str, str, float]]:
    """The page's expert table (rows ``[model, kind, weight]``; blank rows and a weight of 0 dropped) as
    ``(model, kind, weight)``."""
    out = []
    for row in rows:
        name = str(row[0]).strip() if len(row) > 0 and row[0] is not None else ""
        if not name:
            continue
        kind = str(row[1]).strip() if len(row) > 1 and row[1] not in (None, "") else "local"
        try:
            weight = float(row[2]) if len(row) > 2 and row[2] not in (None, "") else 1.0
        except (TypeError, ValueError):
            raise MLMProbError(f"expert {name}: the weight must be a number, got {row[2]!r}") from None
        if weight != 0:
            out.append((name, kind, weight))
    if not out:
        raise MLMProbError("choose at least one expert with a non-zero weight")
    return out


@dataclass(frozen=True)
class DesignView:
    """A design run's result for the page: the parent, the term names and one row per chain (the CLI's row)."""

    parent: str
    names: tuple[str, ...]
    rows: list[dict]
    spec: DesignSpec


def design_spec(
    *, positions: str, max_mutations, liabilities: Sequence[str], forbid: str, method: str, temperature, steps, chains
) -> DesignSpec:
    """The :class:`DesignSpec` of the page's fields (blank positions: all; a blank or negative maximum: none;
    ``forbid``: extra motifs separated by commas)."""
    motifs = tuple(liabilities) + tuple(m.strip() for m in (forbid or "").split(",") if m.strip())
    k = None if max_mutations in (None, "") or float(max_mutations) < 0 else int(max_mutations)
    numbers = tuple(parse_numbers(positions)) if (positions or "").strip() else None
    how: dict = dict(method=method, chains=int(chains), steps=int(steps), temperature=float(temperature))
    # keep_parent_motifs: a liability the parent has is tolerated where it is, only new ones are refused
    return DesignSpec(**how, positions=numbers, max_mutations=k, forbid=motifs, keep_parent_motifs=True)


def design_view(
    pool: ExpertPool,
    parent: str,
    experts: Sequence[Sequence],
    spec: DesignSpec,
    *,
    seed: int = 0,
    limits: Limits = LIMITS,
    progress: Callable[[int, int], None] | None = None,
) -> DesignView:
    """Run the chains of ``spec`` around ``parent`` on the chosen ``experts`` (the page's table)."""
    from ..alphabet import AMINO_ACIDS
    from ..designing.api import build_target
    from ..designing.constraints import Constraints
    from ..designing.job import chain_rows
    from ..designing.terms import Expert

    parent = "".join((parent or "").split()).upper()
    if not parent:
        raise MLMProbError("give a parent sequence")
    if len(parent) + 2 > limits.max_tokens:
        raise MLMProbError(f"the parent has {len(parent)} residues; at most {limits.max_tokens - 2} here")
    if spec.chains > limits.max_chains:
        raise MLMProbError(f"at most {limits.max_chains} chains here, got {spec.chains}")
    if spec.steps > limits.max_design_steps:
        raise MLMProbError(f"at most {limits.max_design_steps} steps here, got {spec.steps}")
    Constraints.build(parent, AMINO_ACIDS, **spec.constraint_keywords())  # bad motifs: before any model loads
    terms = [Expert(pool.get(n), kind=k, weight=w, name=n) for n, k, w in parse_experts(experts)]
    target = build_target(terms, parent, spec)
    rows = chain_rows(target, spec, int(seed), progress)
    return DesignView(target.parent, target.names, rows, spec)


def design_headers(view: DesignView) -> list[str]:
    return ["chain", "mutant", "mutations", *(f"E_{n}" for n in view.names), "total", "acceptance", "sequence"]


def design_rows(view: DesignView, digits: int = 4) -> list[list]:
    """The output table: per chain its mutant string, each term's energy, the weighted total, the acceptance."""
    energies = [f"energy_{n}" for n in view.names]
    return [
        [r["chain"], r["mutant"], r["mutations"], *(round(r[e], digits) for e in [*energies, "total"])]
        + [round(r["acceptance"], 3), r["sequence"]]
        for r in view.rows
    ]


def highlighted(parent: str, seq: str) -> str:
    """``seq`` as HTML, the residues that differ from ``parent`` marked (their parent residue in the title)."""
    out = []
    for j, (a, b) in enumerate(zip(parent, seq, strict=True)):
        c = html.escape(b)
        out.append(c if a == b else f'<mark class="mlmprob-mut" title="{html.escape(a)}{j + 1}{c}">{c}</mark>')
    return "".join(out)


def design_html(view: DesignView) -> str:
    """The parent and each chain's sequence in a monospace block, the changed residues highlighted."""
    lines = [f"<div><b>parent</b>&nbsp;&nbsp;{html.escape(view.parent)}</div>"]
    for r in view.rows:
        label = html.escape(r["mutant"] or "(the parent)")
        lines.append(f"<div><b>chain {r['chain']}</b> {highlighted(view.parent, r['sequence'])} {label}</div>")
    return '<div class="mlmprob-design" style="font-family:monospace;white-space:pre">' + "".join(lines) + "</div>"


def design_summary(view: DesignView) -> str:
    n = len(view.rows)
    acc = sum(r["acceptance"] for r in view.rows) / n
    inside = sum(bool(r["in_constraints"]) for r in view.rows)
    return (
        f"{n} chain(s) of {view.spec.steps} steps ({view.spec.method}); terms {', '.join(view.names)}; "
        f"mean acceptance {acc:.3f}; {inside}/{n} in the constraints; "
        f"{sum(r['model_rows'] for r in view.rows)} model rows read."
    )

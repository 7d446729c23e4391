"""CDR-H3 from the numbering library (anarcism, IMGT) against the older motif rule, on Thera-SAbDab (issue 30 §6).

    PYTHONPATH=src python bench/numbering_agreement.py --out docs/results/numbering.md

Reads the heavy (``HC``) and light (``LC``) variable domains of ``antibody/thera_sabdab.csv`` in the shared
data folder (``--data``, else ``$MLMPROB_DATA`` or ``../shared/data``; skipped with a message when absent)
and reports: how many chains the library numbers; how many CDR-H3 spans the two agree on exactly, under
IMGT (105-117) and Kabat (95-102 = IMGT 107-117); and the kinds of disagreement, with counts and three
examples each. The motif rule is :func:`mlmprob.sampling.cdr.find_cdr_h3` (the second Cys ... ``W-G-x-G``);
the library's is :func:`mlmprob.numbering.cdr_span`. Nothing here depends on a model or a seed.
"""

from __future__ import annotations

import argparse
import csv
import shlex
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

CSV = "antibody/thera_sabdab.csv"
MISSING = ("", "na", "none")


def classify(seq: str, motif: tuple[int, int] | None, lib: tuple[int, int] | None, lib_error: str | None) -> str:
    """The kind of (dis)agreement of the two CDR-H3 spans of ``seq``.

    >>> classify("AAYYCARDYWGQG", (5, 9), (5, 9), None)
    'agree'
    >>> classify("AAYYCARDYWGQG", (5, 9), (5, 10), None)
    'end differs: library ends later'
    >>> classify("AAYYCARDYWGQG", None, (5, 9), None)
    'motif finds no CDR-H3'
    >>> classify("AAYYCARDYWGQG", (5, 9), None, "no CDR-H3: anarcism ... finds no antibody variable domain in 'X'")
    'library: no heavy domain'
    """
    if lib is None:
        if "incomplete" in (lib_error or ""):
            return "library: CDR-H3 cut by the sequence's end"
        if "finds only" in (lib_error or ""):
            return "library: numbers it as another chain"
        return "library: no heavy domain" if motif is not None else "neither finds a CDR-H3"
    if motif is None:
        return "motif finds no CDR-H3"
    if motif == lib:
        return "agree"
    if motif[1] == lib[1]:
        return "start differs: " + ("library starts later" if lib[0] > motif[0] else "library starts earlier")
    if motif[0] == lib[0]:
        return "end differs: " + ("library ends later" if lib[1] > motif[1] else "library ends earlier")
    return "both ends differ"


def spans(seq: str, scheme: str):
    """``(motif span or None, library span or None, library error or None)`` for one heavy chain."""
    from mlmprob.errors import MLMProbError
    from mlmprob.numbering import cdr_span
    from mlmprob.sampling.cdr import find_cdr_h3

    try:
        motif = find_cdr_h3(seq, scheme)
    except MLMProbError:
        motif = None
    try:
        return motif, cdr_span(seq, "H3", scheme), None
    except MLMProbError as e:
        return motif, None, str(e)


def _cdr(seq: str, span) -> str:
    return "—" if span is None else f"`{seq[span[0] : span[1]]}`"


def _context(seq: str, motif, lib) -> str:
    """The residues around both spans, so the reader sees the Cys and the J motif."""
    pts = [p for s in (motif, lib) if s for p in s]
    if not pts:
        return "—"
    lo, hi = max(0, min(pts) - 3), min(len(seq), max(pts) + 4)
    return f"`{seq[lo:hi]}` (residues {lo}-{hi - 1})"


def imgt_104(seq: str) -> str:
    """The residue the library numbers IMGT 104 (the conserved Cys before CDR-H3), with its index.

    >>> imgt_104("QVQLVQSGAEVKKPGASVKVSCKASGYTFTSYGISWVRQAPGQGLEWMGWISAYNGNTNYAQKLQGRVTMTTDTSTSTAYMELRSLRSDDTAVYYCARDGYWGQGTLVTVSS")
    'C (95)'
    """
    from mlmprob.errors import MLMProbError
    from mlmprob.numbering import number

    try:
        domains = number(seq)
    except MLMProbError:
        return "—"
    for d in domains:
        if d.chain == "H":
            hit = [r for r in d.residues if r.position == 104 and not r.insertion]
            return f"{seq[hit[0].index]} ({hit[0].index})" if hit else "none"
    return "—"


def why(seq: str, motif, lib) -> str:
    """Why the two CDR-H3 spans of a heavy chain differ, read from the library's numbering.

    >>> why("QVQLVQSGAEVKKPGASVKVSCKASGYTFTSYGISWVRQAPGQGLEWMGWISAYNGNTNYAQKLQGRVTMTTDTSTSTAYMELRSLRSDDTAVYYCARDGYWGQGTLVTVSS", (97, 102), (97, 102))
    'same span'
    """
    import re

    from mlmprob.errors import MLMProbError
    from mlmprob.numbering import number

    if motif == lib:
        return "same span"
    if lib is None:
        return "the library numbers no whole CDR-H3"
    try:
        d = next(d for d in number(seq) if d.chain == "H")
    except (MLMProbError, StopIteration):
        return "the library numbers no heavy domain"
    at = {r.position: seq[r.index] for r in d.residues if not r.insertion}
    if motif is None:
        if at.get(104) != "C":
            return f"no Cys at IMGT 104 (it holds {at.get(104, 'nothing')}): the motif rule needs the Cys"
        j = seq[lib[1] : lib[1] + 4]
        if not re.fullmatch(r"[WF]G.[GR]", j):
            return f"J motif {j!r} (IMGT 118-121) is not W-G-x-G / [WF]G.[GR]: the motif rule needs it"
        return "the motif rule finds no Cys within 40 residues of its J motif"
    if at.get(104) != "C" and at.get(106) == "C" and lib[0] + 2 == motif[0]:
        return (
            "two residues more before the Cys than the IMGT frame has room for: the library numbers the "
            "Cys 106 (not 104) and starts CDR-H3 two residues before it"
        )
    return "other"


def read_chains(path: Path) -> list[tuple[str, str, str]]:
    """``(name, HC, LC)`` per row with an HC (LC may be empty)."""
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for i, r in enumerate(rows):
        hc, lc = (r.get("HC") or "").strip(), (r.get("LC") or "").strip()
        if hc.lower() in MISSING:
            continue
        out.append((r.get("Therapeutic") or f"row{i + 1}", hc, "" if lc.lower() in MISSING else lc))
    return out


def measure(chains) -> dict:
    """Counts, kinds of disagreement (IMGT and Kabat) and their examples."""
    from mlmprob.errors import MLMProbError
    from mlmprob.numbering import cdr_spans

    res = {
        "n_heavy": len(chains),
        "n_light": sum(1 for _, _, lc in chains if lc),
        "kinds": {},
        "examples": {},
        "light_cdrs": Counter(),
        "heavy_cdrs": Counter(),
        "light_numbered": 0,
        "heavy_numbered": 0,
        "lengths": Counter(),
        "why": Counter(),
        "distinct": len({hc for _, hc, _ in chains}),
    }
    for scheme in ("imgt", "kabat"):
        kinds, examples = Counter(), defaultdict(list)
        for name, hc, _ in chains:
            motif, lib, err = spans(hc, scheme)
            kind = classify(hc, motif, lib, err)
            kinds[kind] += 1
            if scheme == "imgt" and lib is not None and motif is not None and kind != "agree":
                res["lengths"][(lib[1] - lib[0]) - (motif[1] - motif[0])] += 1
            if scheme == "imgt" and kind != "agree":
                res["why"][why(hc, motif, lib)] += 1
            if kind != "agree" and len(examples[kind]) < 3 and hc not in {x[1] for x in examples[kind]}:
                examples[kind].append((name, hc, motif, lib, err))
        res["kinds"][scheme], res["examples"][scheme] = kinds, examples
    for _, hc, lc in chains:
        for seq, key, letter in ((hc, "heavy", "H"), (lc, "light", "L")):
            if not seq:
                continue
            try:
                found = [c for c in cdr_spans(seq) if c.startswith(letter)]
            except MLMProbError:
                found = []
            res[f"{key}_numbered"] += bool(found)
            res[f"{key}_cdrs"].update(found)
    return res


def report(res: dict, command: str, source: str, seconds: float) -> str:
    import anarcism

    n = res["n_heavy"]
    lines = [
        "# Antibody regions: the numbering library against the CDR-H3 motif rule",
        "",
        f"Generated by `{command}` ({seconds:.0f} s on a shared, busy 2-core CPU; no model, no randomness). "
        f"Data: `{source}` "
        f"(Thera-SAbDab, Feb 2025; {n} rows with a heavy chain, {res['distinct']} distinct, {res['n_light']} with a light "
        "chain; counts are over rows). "
        f"Library: anarcism {anarcism.__version__} (ANARCI-compatible IMGT numbering, one wheel, no binaries).",
        "",
        "`--cdr` of `sample`, `infill`, `variants` and the app now take the CDRs from the library "
        "(`mlmprob.numbering`); the motif rule (`find_cdr_h3`: the second Cys ... `W-G-x-G`) stays only in "
        "the experiments that were run with it. Kabat and Chothia numbering are not in the library; Kabat "
        "CDR-H3 is read from IMGT positions 107-117.",
        "",
        "## What numbers",
        "",
        "| chains | given | numbered by the library | with CDR1 / CDR2 / CDR3 whole |",
        "|---|---|---|---|",
    ]
    for key, letter in (("heavy", "H"), ("light", "L")):
        total = res["n_heavy"] if key == "heavy" else res["n_light"]
        cdrs = " / ".join(str(res[f"{key}_cdrs"][f"{letter}{k}"]) for k in (1, 2, 3))
        lines.append(f"| {key} | {total} | {res[f'{key}_numbered']} | {cdrs} |")
    for scheme, title in (("imgt", "IMGT (105-117)"), ("kabat", "Kabat (95-102)")):
        kinds = res["kinds"][scheme]
        lines += [
            "",
            f"## CDR-H3 spans, {title}",
            "",
            f"Exact agreement: **{kinds['agree']} of {n}** heavy chains ({100 * kinds['agree'] / n:.1f}%).",
            "",
            "| kind | count |",
            "|---|---|",
        ]
        lines += [f"| {k} | {c} |" for k, c in sorted(kinds.items(), key=lambda kc: (-kc[1], kc[0]))]
    if res["lengths"]:
        lines += [
            "",
            "IMGT length difference (library minus motif) where both find a CDR-H3 and disagree: "
            + ", ".join(f"{d:+d}: {c}" for d, c in sorted(res["lengths"].items()))
            + ".",
        ]
    if res["why"]:
        lines += ["", "## Why they differ (IMGT)", "", "| reason | chains |", "|---|---|"]
        lines += [f"| {k} | {c} |" for k, c in sorted(res["why"].items(), key=lambda kc: (-kc[1], kc[0]))]
        lines += [
            "",
            "`--cdr` takes the library's span as it is, also where a reason above says the library moved "
            "the conserved Cys into CDR-H3 (anarcism reports exact parity with ANARCI, so "
            "ANARCI should number them alike; not checked here); give `--positions` for such a chain.",
        ]
    lines += [
        "",
        "## Examples (IMGT; at most three distinct chains per kind)",
        "",
        "Residue indices are 0-based. The motif rule starts CDR-H3 after the first Cys (preferably after "
        "`Y`/`F`/`H` two residues before) that lies within 40 residues before the last `W-G-x-G` (or "
        "`[WF]G.[GR]`); the library starts it after the residue its alignment numbers IMGT 104.",
        "",
        "| kind | antibody | motif rule | library | around both spans | library's IMGT 104 | why |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, exs in sorted(res["examples"]["imgt"].items()):
        for name, hc, motif, lib, err in exs:
            lines.append(
                f"| {kind} | {name} | {_cdr(hc, motif)} | {_cdr(hc, lib)} | {_context(hc, motif, lib)} | "
                f"{imgt_104(hc)} | {why(hc, motif, lib) if lib else err} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", help="the shared data folder (default: $MLMPROB_DATA or ../shared/data)")
    p.add_argument("--out", help="the Markdown report (default: print only)")
    p.add_argument("--limit", type=int, help="only the first N rows (a quick look)")
    args = p.parse_args(argv)
    from mlmprob.data import shared_data_dir

    root = Path(args.data) if args.data else shared_data_dir()
    if root is None or not (root / CSV).is_file():
        print(f"skipped: no {CSV} in the shared data folder ({root or 'none found'})", file=sys.stderr)
        return 0
    chains = read_chains(root / CSV)[: args.limit]
    t0 = time.perf_counter()
    res = measure(chains)
    command = "PYTHONPATH=src python bench/numbering_agreement.py " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    text = report(res, command.strip(), f"{CSV}", time.perf_counter() - t0)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

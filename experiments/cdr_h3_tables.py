"""Tables of the CDR-H3 report (``cdr_h3_report``): records grouped by configuration, mean ± standard
error over chains, and the Markdown tables in the shapes of Goyal et al. (2022) Tables 1-5 plus the
unconditional-generation table. Conventions: see ``cdr_h3_report``.
"""

from __future__ import annotations

import math
from collections import defaultdict

from mlmprob.metrics.sequences import corpus_bleu, stutter_rate

from .cdr_h3_common import ANNEALS, CONFIGS, PTEMPS, T5_ANNEAL, TOPPS


def mean_se(values) -> tuple[float, float, int]:
    """Mean, standard error (sample sd / sqrt(n)) and n of the non-missing values.

    >>> m, se, n = mean_se([1.0, 2.0, 3.0]); m, round(se, 6), n
    (2.0, 0.57735, 3)
    """
    xs = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    n = len(xs)
    if n == 0:
        return math.nan, math.nan, 0
    m = sum(xs) / n
    if n == 1:
        return m, math.nan, 1
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, math.sqrt(var / n), n


def _fmt(m: float, se: float, digits: int = 2) -> str:
    if math.isnan(m):
        return "—"
    if math.isnan(se):
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {se:.{digits}f}"


class RecordsByConfig:
    """Records grouped by configuration."""

    def __init__(self, records: list[dict]):
        self.by_config: dict[str, list[dict]] = defaultdict(list)
        for r in records:
            self.by_config[r["config"]].append(r)

    def has(self, name: str) -> bool:
        return bool(self.by_config.get(name))

    def cell(self, name: str, where: str, key: str, digits: int = 2) -> str:
        rs = self.by_config.get(name, [])
        return _fmt(*mean_se([r[where][key] for r in rs])[:2], digits)

    def bleu_post(self, name: str, burn_in: int) -> str:
        hyps, refs = [], []
        for r in self.by_config.get(name, []):
            pe = r["per_epoch"].get("cdr")
            cdrs = pe[burn_in:] if pe and "e_local" in r["per_epoch"] else [r["final"]["cdr"]]
            hyps += cdrs
            refs += [r["cdr_native"]] * len(cdrs)
        return f"{100 * corpus_bleu(hyps, refs):.1f}" if hyps and refs[0] is not None else "—"

    def bleu_final(self, name: str) -> str:
        rs = self.by_config.get(name, [])
        if not rs or rs[0]["cdr_native"] is None:
            return "—"
        return f"{100 * corpus_bleu([r['final']['cdr'] for r in rs], [r['cdr_native'] for r in rs]):.1f}"

    def bleu_at(self, name: str, epoch: int) -> float:
        rs = self.by_config.get(name, [])
        hyps = [r["per_epoch"]["cdr"][epoch - 1] if epoch > 0 else r["start"]["cdr"] for r in rs]
        return 100 * corpus_bleu(hyps, [r["cdr_native"] for r in rs])

    def n(self, name: str) -> int:
        return len(self.by_config.get(name, []))

    def units(self, name: str) -> int:
        return len({r["unit"] for r in self.by_config.get(name, [])})

    def trace(self, name: str, key: str) -> tuple[list[float], list[float], list[float]]:
        """Epochs (0 = warm start), mean and standard error over chains of a per-epoch metric."""
        rs = self.by_config.get(name, [])
        if not rs or key not in rs[0]["per_epoch"]:
            return [], [], []
        E = len(rs[0]["per_epoch"][key])
        start = [r["start"].get(key) for r in rs] if key in rs[0]["start"] else None
        xs, ms, ses = [], [], []
        for e in range(0 if start else 1, E + 1):
            vals = start if e == 0 else [r["per_epoch"][key][e - 1] for r in rs]
            m, se, _ = mean_se(vals)
            xs.append(e)
            ms.append(m)
            ses.append(0.0 if math.isnan(se) else se)
        return xs, ms, ses


# -- tables ----------------------------------------------------------------------------------------


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _sweep_table(res: RecordsByConfig, cols: list[tuple[str, str, str]], burn_in: int) -> str:
    """Rows = metrics, columns = (label, MH config, deg config) pairs: the shape of Tables 1-2."""
    header = [""]
    for label, _, _ in cols:
        header += [f"{label} MH-local", f"{label} deg"]
    metrics = [
        ("E_local ↓ (post)", "e_local"),
        ("E_raw (post)", "e_raw"),
        ("novel rate", "novel"),
        ("acceptance", "accept"),
        ("identity (post)", "identity"),
        ("stutter (post)", "stutter"),
    ]
    rows = []
    for title, key in metrics:
        row = [title]
        for _, mh, deg in cols:
            row += [
                res.cell(mh, "post_burn_in", key, 3 if key in ("novel", "accept", "identity", "stutter") else 2),
                res.cell(deg, "post_burn_in", key, 3 if key in ("novel", "accept", "identity", "stutter") else 2),
            ]
        rows.append(row)
    row = ["BLEU-4 (post, corpus)"]
    for _, mh, deg in cols:
        row += [res.bleu_post(mh, burn_in), res.bleu_post(deg, burn_in)]
    rows.append(row)
    row = ["chains"]
    for _, mh, deg in cols:
        row += [str(res.n(mh)), str(res.n(deg))]
    rows.append(row)
    return _table(header, rows)


def table1(res: RecordsByConfig, burn_in: int) -> str:
    return _sweep_table(res, [(f"T={t}", f"t1/mh-local-pt{t}", f"t1/gibbs-pt{t}") for t in PTEMPS], burn_in)


def table2(res: RecordsByConfig, burn_in: int) -> str:
    cols = [("p=1.0", "t1/mh-local-pt1.0", "t1/gibbs-pt1.0")]
    cols += [(f"p={p}", f"t2/mh-local-topp{p}", f"t2/gibbs-topp{p}") for p in TOPPS[1:]]
    return _sweep_table(res, cols, burn_in)


def table3(res: RecordsByConfig, burn_in: int) -> str:
    cols = [
        ("Deg", "t3/block-gibbs"),
        ("Raw", "t3/block-mh-raw"),
        ("Norm (local)", "t3/block-mh-local"),
        ("single-site Norm (T1, T=1.0)", "t1/mh-local-pt1.0"),
        ("single-site deg (T1, T=1.0)", "t1/gibbs-pt1.0"),
    ]
    rows = []
    for title, key in [
        ("E_local ↓ (post)", "e_local"),
        ("E_raw (post)", "e_raw"),
        ("novel rate", "novel"),
        ("acceptance", "accept"),
        ("identity (post)", "identity"),
        ("stutter (post)", "stutter"),
    ]:
        d = 3 if key in ("novel", "accept", "identity", "stutter") else 2
        rows.append([title] + [res.cell(c, "post_burn_in", key, d) for _, c in cols])
    rows.append(["BLEU-4 (post, corpus)"] + [res.bleu_post(c, burn_in) for _, c in cols])
    rows.append(["chains"] + [str(res.n(c)) for _, c in cols])
    return _table([""] + [label for label, _ in cols], rows)


def table4(res: RecordsByConfig, total_epochs: int) -> str:
    header = [""]
    for r in ANNEALS:
        header += [f"{r}: E_local ↓ (final)", f"{r}: accept", f"{r}: identity (final)", f"{r}: BLEU-4 (final)"]
    rows = []
    for label, e in (("Norm (MH-local)", "local"), ("Raw (MH-raw)", "raw")):
        row = [label]
        for r in ANNEALS:
            c = f"t4/anneal{r}-mh-{e}"
            row += [
                res.cell(c, "final", "e_local"),
                res.cell(c, "post_burn_in", "accept", 3),
                res.cell(c, "final", "identity", 3),
                res.bleu_final(c),
            ]
        rows.append(row)
    temps = ", ".join(f"{r}: {max(0.05, 1 - r * (total_epochs - 1)):.2f}" for r in ANNEALS)
    return _table(header, rows) + f"\n\nTarget temperature at the last epoch (rate: T): {temps}."


def table5(res: RecordsByConfig) -> str:
    rows_cfg = [
        ("Warm-start", "t5/warm-start"),
        ("Degenerate Gibbs (T=0.8)", "t1/gibbs-pt0.8"),
        (f"Mask-predict (beam=1, It={CONFIGS['t5/mask-predict-it10'].iterations})", "t5/mask-predict-it10"),
        (f"Local Energy (MH, proposal T=0.8, anneal {T5_ANNEAL})", f"t5/mh-local-pt0.8-anneal{T5_ANNEAL}"),
        (f"Raw Score Energy (MH, proposal T=0.8, anneal {T5_ANNEAL})", f"t5/mh-raw-pt0.8-anneal{T5_ANNEAL}"),
    ]
    header = [
        "",
        "E_local ↓ (final)",
        "E_raw ↓ (final)",
        "identity (final)",
        "BLEU-4 (final, corpus)",
        "stutter (final)",
        "novel rate",
        "chains",
    ]
    rows = []
    ref = next((c for _, c in rows_cfg if res.has(c)), None)
    if ref is not None:
        rs = res.by_config[ref]
        rows.append(
            [
                "Native CDR-H3 (reference)",
                _fmt(*mean_se([r["native"]["e_local"] for r in rs])[:2]),
                _fmt(*mean_se([r["native"]["e_raw"] for r in rs])[:2]),
                "1.000",
                "100.0",
                _fmt(*mean_se([r["native"]["stutter"] for r in rs])[:2], 3),
                "—",
                str(len(rs)),
            ]
        )
    for label, c in rows_cfg:
        rows.append(
            [
                label,
                res.cell(c, "final", "e_local"),
                res.cell(c, "final", "e_raw"),
                res.cell(c, "final", "identity", 3),
                res.bleu_final(c),
                res.cell(c, "final", "stutter", 3),
                res.cell(c, "post_burn_in", "novel", 3),
                str(res.n(c)),
            ]
        )
    return _table(header, rows)


def table_uncond(res: RecordsByConfig, antibodies: list[dict] | None) -> str:
    cfgs = [
        ("Warm-start (greedy fill of all masks)", "u/warm-start"),
        (f"Mask-predict (It={CONFIGS['u/mask-predict-it10'].iterations})", "u/mask-predict-it10"),
        ("Degenerate Gibbs (T=1.0)", "u/gibbs-pt1.0"),
        ("MH-local (T=1.0)", "u/mh-local-pt1.0"),
    ]
    header = [
        "",
        "stutter (final)",
        "stutter (post)",
        "E_local ↓ (final)",
        "E_raw (final)",
        "acceptance",
        "novel rate",
        "chains",
        "chain 0, final sequence",
    ]
    rows = []
    if antibodies:
        m, se, n = mean_se([stutter_rate(a["hc"]) for a in antibodies])
        rows.append([f"Native heavy chains (the {n} antibodies)", _fmt(m, se, 3)] + ["—"] * 7)
    for label, c in cfgs:
        rs = sorted(res.by_config.get(c, []), key=lambda r: r["chain"])
        rows.append(
            [
                label,
                res.cell(c, "final", "stutter", 3),
                res.cell(c, "post_burn_in", "stutter", 3),
                res.cell(c, "final", "e_local"),
                res.cell(c, "final", "e_raw"),
                res.cell(c, "post_burn_in", "accept", 3),
                res.cell(c, "post_burn_in", "novel", 3),
                str(len(rs)),
                f"`{rs[0]['final']['cdr']}`" if rs else "—",
            ]
        )
    return _table(header, rows)


def _post_designs(r: dict, burn_in: int) -> list[str]:
    """A record's designs after burn-in (its final design for the methods without epochs)."""
    pe = r["per_epoch"]
    return pe["cdr"][burn_in:] if pe.get("cdr") and "e_local" in pe else [r["final"]["cdr"]]


def _hamming(a: str, b: str) -> float:
    return sum(x != y for x, y in zip(a, b)) / max(len(a), 1)


def diversity(res: RecordsByConfig, name: str, burn_in: int) -> tuple[str, str]:
    """Two cells, mean ± SE over antibodies: the mean pairwise Hamming distance (share of CDR-H3 positions)
    between the chains of an antibody at each post-burn-in epoch (averaged over epochs), and the share of
    distinct CDR-H3s among all its chains' post-burn-in designs."""
    by_unit: dict[str, list[list[str]]] = defaultdict(list)
    for r in res.by_config.get(name, []):
        by_unit[r["unit"]].append(_post_designs(r, burn_in))
    dist, distinct = [], []
    for chains in by_unit.values():
        per_epoch = []
        for designs in zip(*chains):
            pairs = [(a, b) for i, a in enumerate(designs) for b in designs[i + 1 :]]
            if pairs:
                per_epoch.append(sum(_hamming(a, b) for a, b in pairs) / len(pairs))
        dist.append(sum(per_epoch) / len(per_epoch) if per_epoch else None)
        every = [d for c in chains for d in c]
        distinct.append(len(set(every)) / len(every))
    return _fmt(*mean_se(dist)[:2], 3), _fmt(*mean_se(distinct)[:2], 3)


def _cost(res: RecordsByConfig, name: str) -> list[str]:
    rs = res.by_config.get(name, [])
    if not rs:
        return ["—"] * 3
    rows, secs = (mean_se([r[k] for r in rs])[0] for k in ("forward_rows_per_chain", "seconds_per_chain"))
    return [f"{rows:.0f}", f"{secs:.2f}", f"{rows / secs:.1f}" if secs > 0 else "—"]


def table6(res: RecordsByConfig, burn_in: int) -> str:
    """Ancestral draws of the chain-rule distributions (l2r and random order) beside MH, degenerate Gibbs
    and the warm start: energies, log-probability, identity, diversity and cost."""
    cols = [
        ("Warm start", "t5/warm-start"),
        ("MH-local (T=1.0)", "t1/mh-local-pt1.0"),
        ("deg Gibbs (T=1.0)", "t1/gibbs-pt1.0"),
        ("ancestral l2r", "t6/ancestral-l2r"),
        ("ancestral random order", "t6/ancestral-random"),
    ]
    rows = []
    for title, key in [
        ("E_local ↓ (post)", "e_local"),
        ("E_raw (post)", "e_raw"),
        ("log p_sigma of the draw (post)", "log_prob"),
        ("identity (post)", "identity"),
        ("stutter (post)", "stutter"),
        ("novel rate", "novel"),
    ]:
        d = 3 if key in ("novel", "identity", "stutter") else 2
        rows.append(
            [title] + [res.cell(c, "post_burn_in", key, d) if key in _post_keys(res, c) else "—" for _, c in cols]
        )
    rows.append(["BLEU-4 (post, corpus)"] + [res.bleu_post(c, burn_in) for _, c in cols])
    div = [diversity(res, c, burn_in) if res.has(c) else ("—", "—") for _, c in cols]
    rows.append(["pairwise distance between chains (post)"] + [d[0] for d in div])
    rows.append(["distinct CDR-H3s / designs (post)"] + [d[1] for d in div])
    cost = [_cost(res, c) for _, c in cols]
    for i, title in enumerate(("model rows per chain", "wall s per chain", "model rows / s")):
        rows.append([title] + [c[i] for c in cost])
    rows.append(["chains"] + [str(res.n(c)) for _, c in cols])
    return _table([""] + [label for label, _ in cols], rows)


def _post_keys(res: RecordsByConfig, name: str) -> set[str]:
    rs = res.by_config.get(name, [])
    return set(rs[0]["post_burn_in"]) if rs else set()

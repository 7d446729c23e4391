"""Uncertainty of the comparisons quoted in the hand-written notes under docs/results (issue 14, §6).

Reads only the raw records committed next to the reports (``results.jsonl``, ``pairs.jsonl``, the
infilling ``*.jsonl``; for the two PLL benchmarks, which record nothing else, the per-round times in
their Markdown) and prints one line per quoted comparison: the estimate, its 95% interval or test,
and ``within noise`` where the interval covers 0 (or the test gives p >= 0.05). The notes cite the
lines by their ``[key]``. Run from anywhere (stdlib + numpy, deterministic, a few seconds):

    python docs/results/uncertainty.py > docs/results/uncertainty.txt

Methods:

- CDR-H3 sampling (``sampling/*``): the antibody is the unit, since the chains of one antibody share
  its warm start. Means and paired differences between configurations are taken over per-antibody
  means; 95% intervals are percentiles of a bootstrap over antibodies (B = 4000; numpy PCG64 seeded
  with the CRC-32 of the line's key, so each line is reproducible on its own). Corpus BLEU-4 is
  recomputed from per-antibody n-gram counts in every replicate; a paired BLEU difference uses the
  same replicates for both configurations.
- Infilling: the gap is the unit. Two methods (or models) on the same gaps: exact two-sided sign test
  on the gaps where only one of them has the gold fill at top-1 (as the generated Table 4 does; it
  gives the verdict) and the paired difference with a continuity-corrected Wald 95% interval. One
  accuracy: binomial SE, stratified by gap length. Pivot averages: bootstrap over gaps.
- Benchmarks: one run per configuration, so no interval; the lines give the spread over rounds and
  the per-sequence wall and CPU times that explain a gap between two runs.
- Ground truth: only per-cell aggregates are committed (200 gaps or pairs per cell, one training seed):
  rates get binomial SEs, two rates an unpaired z; pair-joint KLs have no per-pair records, so no
  interval can be given for them.
- Pair joints: the pair is the unit; bootstrap over the 500 pairs of a scheme, paired across methods.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import zlib
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent  # docs/results
B = 4000
Z95 = 1.959963984540054


class MissingRecords(Exception):
    """A records file a section needs is absent."""


def _without_fills(line: str) -> str:
    """An infilling record without its ``fills`` and ``scores`` lists (unused here; most of the parse time)."""
    i = line.find('"fills": [')
    j = line.find('"rows": ', i) if i >= 0 else -1
    return line[:i] + line[j:] if j > i >= 0 else line


def read_jsonl(path: Path, infill: bool = False) -> list[dict]:
    if not path.exists():
        raise MissingRecords(str(path.relative_to(HERE.parent.parent)))
    with open(path) as f:
        return [json.loads(_without_fills(line) if infill else line) for line in f if line.strip()]


def boot_idx(key: str, n: int, b: int = B) -> np.ndarray:
    """``b`` x ``n`` resampling indices, fixed by ``key``."""
    u = np.random.Generator(np.random.PCG64(zlib.crc32(key.encode()))).random((b, n))
    return np.minimum((u * n).astype(np.int64), n - 1)


def q95(x: np.ndarray) -> tuple[float, float]:
    lo, hi = np.quantile(x, [0.025, 0.975])
    return float(lo), float(hi)


def noise(lo: float, hi: float) -> str:
    return "within noise" if lo <= 0 <= hi else "excludes 0"


def sign_p(b: int, c: int) -> float:
    """Exact two-sided sign test of ``b`` vs ``c`` discordant pairs."""
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n)


def out(key: str, text: str) -> None:
    print(f"[{key}] {text}")


# -- CDR-H3 sampling -------------------------------------------------------------------------------


def _ngrams(s: str, n: int) -> Counter:
    return Counter(s[i : i + n] for i in range(len(s) - n + 1))


def bleu_counts(h: str, r: str) -> np.ndarray:
    """Clipped matches (4), totals (4), hypothesis and reference length: corpus BLEU-4's sums."""
    v = np.zeros(10)
    for n in range(1, 5):
        hc, rc = _ngrams(h, n), _ngrams(r, n)
        v[n - 1] = sum(min(c, rc[g]) for g, c in hc.items())
        v[3 + n] = sum(hc.values())
    v[8], v[9] = len(h), len(r)
    return v


def bleu(S: np.ndarray) -> np.ndarray:
    """Corpus BLEU-4 x 100 (no smoothing, brevity penalty) from summed counts ``S[..., 10]``."""
    m, t, hl, rl = S[..., :4], S[..., 4:8], S[..., 8], S[..., 9]
    ok = (m.min(-1) > 0) & (t.min(-1) > 0)
    logp = np.log(np.where(ok[..., None], m, 1) / np.where(ok[..., None], t, 1)).mean(-1)
    bp = np.where(hl > rl, 1.0, np.exp(1 - rl / np.maximum(hl, 1e-12)))
    return np.where(ok, 100 * bp * np.exp(logp), 0.0)


class Sampling:
    """``results.jsonl`` of one ``cdr_h3`` folder, grouped by configuration and antibody."""

    def __init__(self, name: str):
        self.name = name
        self.by: dict = defaultdict(lambda: defaultdict(list))
        for r in read_jsonl(HERE / "sampling" / name / "results.jsonl"):
            self.by[r["config"]][r["unit"]].append(r)
        self.units = sorted(self.by["t5/warm-start"])
        self.n = len(self.units)

    def per_unit(self, config: str, f) -> np.ndarray:
        d = self.by[config]
        assert sorted(d) == self.units, (config, len(d))
        return np.array([np.mean([f(r) for r in d[u]]) for u in self.units])

    def counts(self, config: str, where: str) -> np.ndarray:
        rows = []
        for u in self.units:
            s = np.zeros(10)
            for r in self.by[config][u]:
                pe = r["per_epoch"].get("cdr")
                hyps = (
                    pe[r["burn_in"] :]
                    if where == "post" and pe and "e_local" in r["per_epoch"]
                    else [r["final"]["cdr"]]
                )
                for h in hyps:
                    s += bleu_counts(h, r["cdr_native"])
            rows.append(s)
        return np.array(rows)

    def _weights(self, key: str) -> np.ndarray:
        idx = boot_idx(key, self.n)
        w = np.zeros((B, self.n))
        np.add.at(w, (np.repeat(np.arange(B), self.n), idx.ravel()), 1.0)
        return w

    def mean(self, key: str, label: str, config: str, f, digits: int = 2) -> None:
        a = self.per_unit(config, f)
        lo, hi = q95(a[boot_idx(key, self.n)].mean(1))
        out(key, f"{label}: {a.mean():.{digits}f}, 95% CI [{lo:.{digits}f}, {hi:.{digits}f}] ({self.n} antibodies)")

    def diff(self, key: str, label: str, c1: str, f1, c2: str, f2, digits: int = 2) -> float:
        a, b = self.per_unit(c1, f1), self.per_unit(c2, f2)
        d = a - b
        lo, hi = q95(d[boot_idx(key, self.n)].mean(1))
        out(
            key,
            f"{label}: {a.mean():.{digits}f} vs {b.mean():.{digits}f}, difference {d.mean():+.{digits}f}, "
            f"95% CI [{lo:+.{digits}f}, {hi:+.{digits}f}] (paired over {self.n} antibodies; first higher "
            f"on {int((d > 0).sum())}): {noise(lo, hi)}",
        )
        return d.mean()

    def bleu_diff(self, key: str, label: str, c1: str, c2: str, where: str = "final") -> None:
        w = self._weights(key)
        A, Bc = self.counts(c1, where), self.counts(c2, where)
        a, b = bleu(A.sum(0)), bleu(Bc.sum(0))
        lo, hi = q95(bleu(w @ A) - bleu(w @ Bc))
        out(
            key,
            f"{label}: corpus BLEU-4 {a:.2f} vs {b:.2f}, difference {a - b:+.2f}, 95% CI [{lo:+.2f}, {hi:+.2f}] "
            f"(paired bootstrap over {self.n} antibodies): {noise(lo, hi)}",
        )


def F(where: str, metric: str):
    return lambda r: r[where][metric]


E_FIN, E_POST, E_NAT = F("final", "e_local"), F("post_burn_in", "e_local"), F("native", "e_local")


def sampling_common(s: Sampling, p: str) -> None:
    """Native CDR-H3 energy vs the designs, and the stutter rates (both one-sweep folders)."""
    t1 = sorted(c for c in s.by if c.startswith(("t1/", "t2/", "t3/", "t4/", "f1/")))
    t5 = ["t5/warm-start", "t5/mask-predict-it10", "t5/mh-local-pt0.8-anneal0.02", "t5/mh-raw-pt0.8-anneal0.02"]
    for c in t5 + ["t1/gibbs-pt0.8"]:
        s.diff(f"{p}.native-vs.{c}", f"E_local native CDR-H3 - {c} (final)", c, E_NAT, c, E_FIN)
    above = [c for c in t1 if s.per_unit(c, E_POST).mean() > s.per_unit(c, E_NAT).mean()]
    for c in above:
        s.diff(f"{p}.design-above-native.{c}", f"E_local {c} (post) - native", c, E_POST, c, E_NAT)
    out(
        f"{p}.native-above-count",
        f"configurations whose mean post-burn-in E_local exceeds the native CDR-H3s': "
        f"{len(above)} of {len(t1)} sampling configurations ({', '.join(above) or 'none'})",
    )
    s.mean(f"{p}.stutter.native", "stutter native CDR-H3", "t5/warm-start", F("native", "stutter"), 3)
    s.mean(f"{p}.stutter.warm", "stutter warm start", "t5/warm-start", F("final", "stutter"), 3)
    for c in t5[1:] + ["t1/gibbs-pt0.8"]:
        s.diff(
            f"{p}.stutter.vs-warm.{c}",
            f"stutter final, {c} - warm start",
            c,
            F("final", "stutter"),
            "t5/warm-start",
            F("final", "stutter"),
            3,
        )
    samp = [c for c in t1 + t5[2:] if not c.startswith("f1/")]
    vals = {c: s.per_unit(c, F("final" if c.startswith("t5/") else "post_burn_in", "stutter")) for c in samp}
    lo_c, hi_c = min(vals, key=lambda c: vals[c].mean()), max(vals, key=lambda c: vals[c].mean())
    for tag, c in (("lowest", lo_c), ("highest", hi_c)):
        where = "final" if c.startswith("t5/") else "post_burn_in"
        s.mean(f"{p}.stutter.{tag}", f"stutter, {tag} sampling configuration ({c}, {where})", c, F(where, "stutter"), 3)
    out(
        f"{p}.stutter.range",
        f"stutter over the {len(samp)} sampling configurations (T1-T4 post, T5 MH final): "
        f"{vals[lo_c].mean():.3f}-{vals[hi_c].mean():.3f}",
    )


def _post_designs(r: dict) -> list[str]:
    pe = r["per_epoch"]
    return pe["cdr"][r["burn_in"] :] if pe.get("cdr") and "e_local" in pe else [r["final"]["cdr"]]


def chain_distance(s: Sampling, config: str):
    """Per record: the mean share of CDR-H3 positions where its post-burn-in designs differ from the other
    chains' of the same antibody at the same epochs (averaged over chains: the mean pairwise distance)."""

    def f(r: dict) -> float:
        mine = _post_designs(r)
        d = [
            sum(x != y for x, y in zip(a, b)) / len(a)
            for o in s.by[config][r["unit"]]
            if o["chain"] != r["chain"]
            for a, b in zip(mine, _post_designs(o))
        ]
        return float(np.mean(d))

    return f


def sampling_ancestral(s: Sampling, p: str) -> None:
    """Ancestral draws (table 6) against MH-local and degenerate Gibbs at T=1.0 and the native CDR-H3s."""
    anc = [c for c in ("t6/ancestral-l2r", "t6/ancestral-random") if c in s.by]
    mh, gb = "t1/mh-local-pt1.0", "t1/gibbs-pt1.0"
    ID, ST = F("post_burn_in", "identity"), F("post_burn_in", "stutter")
    for c in anc:
        t = c.rsplit("-", 1)[1]
        for tag, o in (("gibbs", gb), ("mh", mh)):
            s.diff(f"{p}.anc.{t}-vs-{tag}", f"E_local post, {c} - {o}", c, E_POST, o, E_POST)
            s.diff(f"{p}.anc.identity.{t}-vs-{tag}", f"identity post, {c} - {o}", c, ID, o, ID, 3)
            s.diff(
                f"{p}.anc.distance.{t}-vs-{tag}",
                f"pairwise distance between chains (post), {c} - {o}",
                c,
                chain_distance(s, c),
                o,
                chain_distance(s, o),
                3,
            )
        s.diff(f"{p}.anc.{t}-vs-native", f"E_local, {c} (post) - native CDR-H3", c, E_POST, c, E_NAT)
        s.diff(
            f"{p}.anc.{t}.nlogp-vs-elocal",
            f"-log p_sigma - E_local of the same draws (post), {c}",
            c,
            lambda r: -r["post_burn_in"]["log_prob"],
            c,
            E_POST,
        )
        s.diff(
            f"{p}.anc.stutter.{t}-vs-native",
            f"stutter, {c} (post) - native CDR-H3",
            c,
            ST,
            c,
            F("native", "stutter"),
            3,
        )
    if len(anc) == 2:
        s.diff(f"{p}.anc.l2r-vs-random", "E_local post, ancestral l2r - random order", *anc[:1], E_POST, anc[1], E_POST)
        s.bleu_diff(f"{p}.anc.bleu.l2r-vs-mh", "ancestral l2r - MH-local T=1.0 (post)", anc[0], mh, "post")


def section_antiberty() -> None:
    s, p = Sampling("antiberty"), "ab1"
    sampling_common(s, p)
    for t in ("2.0", "1.5", "1.0", "0.8", "0.5"):
        s.diff(
            f"{p}.mh-vs-gibbs.T{t}",
            f"E_local post, MH-local - Gibbs at T={t}",
            f"t1/mh-local-pt{t}",
            E_POST,
            f"t1/gibbs-pt{t}",
            E_POST,
        )
    s.diff(
        f"{p}.gibbs.T0.5-vs-T1.0",
        "E_local post, Gibbs T=0.5 - Gibbs T=1.0",
        "t1/gibbs-pt0.5",
        E_POST,
        "t1/gibbs-pt1.0",
        E_POST,
    )
    s.diff(
        f"{p}.identity.T1.0",
        "identity post, MH-local - Gibbs at T=1.0",
        "t1/mh-local-pt1.0",
        F("post_burn_in", "identity"),
        "t1/gibbs-pt1.0",
        F("post_burn_in", "identity"),
        3,
    )
    s.bleu_diff(f"{p}.bleu.T1.0", "T=1.0 MH-local - Gibbs (post)", "t1/mh-local-pt1.0", "t1/gibbs-pt1.0", "post")
    for c in ("t1/mh-local-pt1.0", "t1/gibbs-pt1.0"):
        s.diff(f"{p}.vs-warm.{c}", f"E_local {c} (post) - warm start", c, E_POST, "t5/warm-start", E_FIN)
    for c in ("mh-local", "gibbs"):
        s.diff(
            f"{p}.novel.{c}.T1.0-vs-T0.5",
            f"novel rate {c}, T=1.0 - T=0.5",
            f"t1/{c}-pt1.0",
            F("post_burn_in", "novel"),
            f"t1/{c}-pt0.5",
            F("post_burn_in", "novel"),
            3,
        )
    s.diff(
        f"{p}.t5.maskpredict-vs-raw",
        "E_local final, mask-predict - MH-raw",
        "t5/mask-predict-it10",
        E_FIN,
        "t5/mh-raw-pt0.8-anneal0.02",
        E_FIN,
    )
    s.diff(
        f"{p}.identity.warm-vs-maskpredict",
        "identity final, warm start - mask-predict",
        "t5/warm-start",
        F("final", "identity"),
        "t5/mask-predict-it10",
        F("final", "identity"),
        3,
    )
    for c in ("t5/mh-local-pt0.8-anneal0.02", "t5/mh-raw-pt0.8-anneal0.02", "t1/gibbs-pt0.8"):
        s.diff(f"{p}.t5-vs-warm.{c}", f"E_local {c} (final) - warm start", c, E_FIN, "t5/warm-start", E_FIN)
    raw, loc, gib = "t5/mh-raw-pt0.8-anneal0.02", "t5/mh-local-pt0.8-anneal0.02", "t1/gibbs-pt0.8"
    s.diff(
        f"{p}.t5.eraw.raw-vs-local",
        "E_raw final, MH-raw - MH-local",
        raw,
        F("final", "e_raw"),
        loc,
        F("final", "e_raw"),
    )
    s.diff(
        f"{p}.t5.eraw.raw-vs-gibbs",
        "E_raw final, MH-raw - Gibbs T=0.8",
        raw,
        F("final", "e_raw"),
        gib,
        F("final", "e_raw"),
    )
    s.bleu_diff(f"{p}.bleu.raw-vs-local", "Table 5 MH-raw - MH-local (final)", raw, loc)
    s.bleu_diff(f"{p}.bleu.raw-vs-gibbs", "Table 5 MH-raw - Gibbs T=0.8 (final)", raw, gib)
    s.bleu_diff(f"{p}.bleu.maskpredict-vs-raw", "Table 5 mask-predict - MH-raw (final)", "t5/mask-predict-it10", raw)
    s.bleu_diff(f"{p}.bleu.warm-vs-raw", "Table 5 warm start - MH-raw (final)", "t5/warm-start", raw)
    s.diff(
        f"{p}.novel.raw-vs-local",
        "novel rate, MH-raw - MH-local",
        raw,
        F("post_burn_in", "novel"),
        loc,
        F("post_burn_in", "novel"),
        3,
    )
    s.diff(
        f"{p}.identity.raw-vs-local",
        "identity final, MH-raw - MH-local",
        raw,
        F("final", "identity"),
        loc,
        F("final", "identity"),
        3,
    )
    ACC = F("post_burn_in", "accept")
    s.diff(
        f"{p}.accept.T0.8-vs-T1.0", "MH acceptance T=0.8 - T=1.0", "t1/mh-local-pt0.8", ACC, "t1/mh-local-pt1.0", ACC, 3
    )
    s.diff(
        f"{p}.accept.T0.5-vs-T0.8", "MH acceptance T=0.5 - T=0.8", "t1/mh-local-pt0.5", ACC, "t1/mh-local-pt0.8", ACC, 3
    )
    sampling_ancestral(s, p)


def section_sapiens() -> None:
    s, p = Sampling("sapiens-vh"), "sv"
    sampling_common(s, p)
    ACC, NOV = F("post_burn_in", "accept"), F("post_burn_in", "novel")
    for t in ("2.0", "1.5", "1.0", "0.8", "0.5"):
        s.diff(
            f"{p}.mh-vs-gibbs.T{t}",
            f"E_local post, MH-local - Gibbs at T={t}",
            f"t1/mh-local-pt{t}",
            E_POST,
            f"t1/gibbs-pt{t}",
            E_POST,
        )
    s.diff(
        f"{p}.vs-warm.t1/mh-local-pt1.0",
        "E_local t1/mh-local-pt1.0 (post) - warm start",
        "t1/mh-local-pt1.0",
        E_POST,
        "t5/warm-start",
        E_FIN,
    )
    for t in ("2.0", "1.5"):
        s.diff(
            f"{p}.identity.T{t}",
            f"identity post, MH-local - Gibbs at T={t}",
            f"t1/mh-local-pt{t}",
            F("post_burn_in", "identity"),
            f"t1/gibbs-pt{t}",
            F("post_burn_in", "identity"),
            3,
        )
    s.diff(
        f"{p}.novel.T1.0-vs-T1.5",
        "MH novel rate T=1.0 - T=1.5",
        "t1/mh-local-pt1.0",
        F("post_burn_in", "novel"),
        "t1/mh-local-pt1.5",
        F("post_burn_in", "novel"),
        3,
    )
    s.diff(
        f"{p}.identity.T0.5",
        "identity post, Gibbs - MH-local at T=0.5",
        "t1/gibbs-pt0.5",
        F("post_burn_in", "identity"),
        "t1/mh-local-pt0.5",
        F("post_burn_in", "identity"),
        3,
    )
    s.diff(
        f"{p}.accept.T0.8-vs-T0.5", "MH acceptance T=0.8 - T=0.5", "t1/mh-local-pt0.8", ACC, "t1/mh-local-pt0.5", ACC, 3
    )
    s.diff(
        f"{p}.accept.T0.8-vs-T1.0", "MH acceptance T=0.8 - T=1.0", "t1/mh-local-pt0.8", ACC, "t1/mh-local-pt1.0", ACC, 3
    )
    s.diff(
        f"{p}.novel.T1.0-vs-T0.8", "MH novel rate T=1.0 - T=0.8", "t1/mh-local-pt1.0", NOV, "t1/mh-local-pt0.8", NOV, 3
    )
    t2 = ["t1/mh-local-pt1.0"] + [f"t2/mh-local-topp{q}" for q in ("0.99", "0.95", "0.9", "0.8")]
    for c in t2:
        s.mean(f"{p}.accept.{c}", f"MH acceptance {c}", c, ACC, 3)
    t4 = [f"t4/anneal{a}-mh-{e}" for e in ("local", "raw") for a in ("0.02", "0.04", "0.06")]
    for c in t4:
        s.mean(f"{p}.accept.{c}", f"MH acceptance {c}", c, ACC, 3)
    acc = {c: s.per_unit(c, ACC).mean() for c in t2 + t4}
    out(
        f"{p}.accept.range.t2",
        f"MH acceptance over the nucleus settings p = 1.0..0.8: "
        f"{min(acc[c] for c in t2):.3f}-{max(acc[c] for c in t2):.3f}",
    )
    out(
        f"{p}.accept.range.t4",
        f"MH acceptance over the six annealing rows: {min(acc[c] for c in t4):.3f}-{max(acc[c] for c in t4):.3f}",
    )
    s.diff(
        f"{p}.accept.topp0.8-vs-1.0",
        "MH acceptance p=0.8 - p=1.0",
        "t2/mh-local-topp0.8",
        ACC,
        "t1/mh-local-pt1.0",
        ACC,
        3,
    )
    s.diff(
        f"{p}.novel.topp0.8-vs-1.0",
        "MH novel rate p=0.8 - p=1.0",
        "t2/mh-local-topp0.8",
        NOV,
        "t1/mh-local-pt1.0",
        NOV,
        3,
    )
    s.diff(
        f"{p}.gibbs.topp0.8-vs-1.0",
        "Gibbs E_local post p=0.8 - p=1.0",
        "t2/gibbs-topp0.8",
        E_POST,
        "t1/gibbs-pt1.0",
        E_POST,
    )
    for e in ("local", "raw"):
        for a, b in (("0.04", "0.02"), ("0.06", "0.04"), ("0.06", "0.02")):
            s.diff(
                f"{p}.anneal.{e}.{a}-vs-{b}",
                f"final E_local MH-{e}, anneal {a} - {b}",
                f"t4/anneal{a}-mh-{e}",
                E_FIN,
                f"t4/anneal{b}-mh-{e}",
                E_FIN,
            )
    for e in ("local", "raw"):
        s.diff(
            f"{p}.anneal.accept.{e}.0.06-vs-0.02",
            f"acceptance MH-{e}, anneal 0.06 - 0.02",
            f"t4/anneal0.06-mh-{e}",
            ACC,
            f"t4/anneal0.02-mh-{e}",
            ACC,
            3,
        )
    pairs = [
        ("f1", "f1/mh-raw-pt1.0", "t1/mh-local-pt1.0", E_FIN),
        ("block", "t3/block-mh-raw", "t3/block-mh-local", E_POST),
    ]
    pairs += [(f"anneal{a}", f"t4/anneal{a}-mh-raw", f"t4/anneal{a}-mh-local", E_FIN) for a in ("0.02", "0.04", "0.06")]
    pairs += [("t5", "t5/mh-raw-pt0.8-anneal0.02", "t5/mh-local-pt0.8-anneal0.02", E_FIN)]
    for tag, r, loc, f in pairs:
        s.diff(f"{p}.raw-vs-local.{tag}", f"E_local, E_raw target - E_local target ({r} vs {loc})", r, f, loc, f)
    blk, one = "t3/block-mh-local", "t1/mh-local-pt1.0"
    s.diff(f"{p}.block.novel", "novel rate, block MH-local - single-site MH-local", blk, NOV, one, NOV, 3)
    s.diff(f"{p}.block.accept", "acceptance, block MH-local - single-site MH-local", blk, ACC, one, ACC, 3)
    s.diff(f"{p}.block.elocal", "E_local post, block MH-local - single-site MH-local", blk, E_POST, one, E_POST)
    s.diff(
        f"{p}.block.gibbs-vs-mh", "E_local post, block Gibbs - block MH-local", "t3/block-gibbs", E_POST, blk, E_POST
    )
    for c in ("t3/block-mh-local", "t3/block-mh-raw"):
        s.diff(
            f"{p}.block.accept.{c}.sweep4-vs-3",
            f"acceptance {c}, sweep 4 (block 1) - sweep 3 (block 2)",
            c,
            lambda r: r["per_epoch"]["accept"][3],
            c,
            lambda r: r["per_epoch"]["accept"][2],
            3,
        )
    for c in ("t3/block-mh-local", "t3/block-mh-raw"):
        for e in (1, 2, 3, 4):
            s.mean(
                f"{p}.block.accept.{c}.sweep{e}",
                f"acceptance {c}, sweep {e} (block size {5 - e})",
                c,
                lambda r, e=e: r["per_epoch"]["accept"][e - 1],
                3,
            )
    raw, loc, mp = "t5/mh-raw-pt0.8-anneal0.02", "t5/mh-local-pt0.8-anneal0.02", "t5/mask-predict-it10"
    s.diff(f"{p}.t5.maskpredict-vs-raw", "E_local final, mask-predict - MH-raw", mp, E_FIN, raw, E_FIN)
    s.diff(f"{p}.t5.local-vs-gibbs", "E_local final, MH-local - Gibbs T=0.8", loc, E_FIN, "t1/gibbs-pt0.8", E_FIN)
    s.diff(f"{p}.t5.local-vs-warm", "E_local final, MH-local - warm start", loc, E_FIN, "t5/warm-start", E_FIN)
    s.bleu_diff(f"{p}.bleu.maskpredict-vs-raw", "Table 5 mask-predict - MH-raw (final)", mp, raw)
    s.bleu_diff(f"{p}.bleu.maskpredict-vs-warm", "Table 5 mask-predict - warm start (final)", mp, "t5/warm-start")
    s.diff(
        f"{p}.identity.maskpredict-vs-warm",
        "identity final, mask-predict - warm start",
        mp,
        F("final", "identity"),
        "t5/warm-start",
        F("final", "identity"),
        3,
    )
    sampling_ancestral(s, p)


def section_6sweeps() -> None:
    s, p = Sampling("antiberty-6sweeps"), "ab6"
    mh, gb = "t1/mh-local-pt1.0", "t1/gibbs-pt1.0"
    s.diff(f"{p}.mh-vs-gibbs", "E_local post, MH-local - Gibbs (T=1.0)", mh, E_POST, gb, E_POST)
    s.diff(f"{p}.mh-vs-warm", "E_local post, MH-local - warm start", mh, E_POST, "t5/warm-start", E_FIN)
    for e in range(1, 7):
        s.diff(
            f"{p}.sweep{e}.mh-vs-warm",
            f"E_local after sweep {e}, MH-local - warm start",
            mh,
            lambda r, e=e: r["per_epoch"]["e_local"][e - 1],
            "t5/warm-start",
            E_FIN,
        )
    s.diff(
        f"{p}.sweep1.gibbs-vs-warm",
        "E_local after sweep 1, Gibbs - warm start",
        gb,
        lambda r: r["per_epoch"]["e_local"][0],
        "t5/warm-start",
        E_FIN,
    )
    s.diff(
        f"{p}.mh.sweep6-vs-sweep1",
        "E_local MH-local, after sweep 6 - after sweep 1",
        mh,
        lambda r: r["per_epoch"]["e_local"][5],
        mh,
        lambda r: r["per_epoch"]["e_local"][0],
    )
    s.diff(
        f"{p}.novel.mh-vs-gibbs",
        "novel rate post, MH-local - Gibbs",
        mh,
        F("post_burn_in", "novel"),
        gb,
        F("post_burn_in", "novel"),
        3,
    )
    s.bleu_diff(f"{p}.bleu.mh-vs-gibbs", "T=1.0 MH-local - Gibbs (post)", mh, gb, "post")
    for c in (mh, gb):
        s.diff(
            f"{p}.stutter.{c}-vs-warm",
            f"stutter post, {c} - warm start",
            c,
            F("post_burn_in", "stutter"),
            "t5/warm-start",
            F("final", "stutter"),
            3,
        )
    s.diff(
        f"{p}.identity.mh-vs-gibbs",
        "identity post, MH-local - Gibbs",
        mh,
        F("post_burn_in", "identity"),
        gb,
        F("post_burn_in", "identity"),
        3,
    )
    raw, loc = "t5/mh-raw-pt0.8-anneal0.02", "t5/mh-local-pt0.8-anneal0.02"
    mp, ws = "t5/mask-predict-it10", "t5/warm-start"
    s.bleu_diff(f"{p}.bleu.raw-vs-local", "Table 5 MH-raw - MH-local (final)", raw, loc)
    s.bleu_diff(f"{p}.bleu.warm-vs-maskpredict", "Table 5 warm start - mask-predict (final)", ws, mp)
    s.bleu_diff(f"{p}.bleu.maskpredict-vs-raw", "Table 5 mask-predict - MH-raw (final)", mp, raw)
    s.diff(
        f"{p}.novel.raw-vs-local",
        "novel rate, MH-raw - MH-local",
        raw,
        F("post_burn_in", "novel"),
        loc,
        F("post_burn_in", "novel"),
        3,
    )
    s.diff(f"{p}.t5.raw-vs-local", "E_local final, MH-raw - MH-local", raw, E_FIN, loc, E_FIN)
    sampling_ancestral(s, p)


# -- infilling ---------------------------------------------------------------------------------------


class Infill:
    """Infilling records keyed by (model, region, k, gap_id, method); the first record of a key wins."""

    def __init__(self, *names: str):
        self.rec: dict = defaultdict(dict)
        for name in names:
            for r in read_jsonl(HERE / "infill" / name, infill=True):
                self.rec[(r["model"], r["region"], r["method"])].setdefault((r["k"], r["gap_id"]), r)

    def cells(self, model: str, region: str, method: str, max_gap: int | None = None) -> dict:
        """{(k, gap_id): record} of one model, region and method (gaps below ``max_gap`` only)."""
        return {g: r for g, r in self.rec[(model, region, method)].items() if max_gap is None or g[1] < max_gap}


def acc_se(cells: dict, metric: str = "top1") -> tuple[float, float, int]:
    """Mean over k of the per-k accuracies, and its SE (binomial, stratified by k), in percent."""
    byk = defaultdict(list)
    for (k, _), r in cells.items():
        byk[k].append(r[metric])
    ps = {k: float(np.mean(v)) for k, v in byk.items()}
    m = float(np.mean(list(ps.values())))
    se = math.sqrt(sum(ps[k] * (1 - ps[k]) / len(byk[k]) for k in byk)) / len(byk)
    return 100 * m, 100 * se, len(cells)


def paired(key: str, label: str, a: dict, b: dict, extract=lambda r: r["top1"]) -> tuple[int, int]:
    common = sorted(set(a) & set(b))
    x = np.array([extract(a[g]) for g in common])
    y = np.array([extract(b[g]) for g in common])
    n, ba, bb = len(common), int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
    d = (ba - bb) / n
    half = Z95 * math.sqrt(max(ba + bb - (ba - bb) ** 2 / n, 0.0)) / n + 1 / n  # Wald, continuity-corrected
    p = sign_p(ba, bb)
    out(
        key,
        f"{label}: {100 * x.mean():.2f} vs {100 * y.mean():.2f} % on the same {n} gaps, difference "
        f"{100 * d:+.2f} points, 95% CI [{100 * (d - half):+.2f}, {100 * (d + half):+.2f}]; only first right "
        f"{ba}, only second right {bb}, sign test "
        f"p = {p:.2g}: {'within noise' if p >= 0.05 else 'significant'}",
    )
    return ba, bb


def section_infill() -> None:
    inf = Infill("sapiens-vh.jsonl", "antiberty-random.jsonl", "antiberty-cdrh3.jsonl")
    SV, AB = "sapiens-vh", "antiberty@bf16"
    beams = ("hcb-l2r", "hcb-best", "standard-l2r", "standard-best")
    methods = beams + (
        "temperature-0.25",
        "temperature-0.5",
        "temperature-0.75",
        "nucleus-0.9",
        "pure-sampling",
        "ablation-scramble",
        "ablation-swap",
    )
    for region in ("random", "cdrh3"):
        for me in methods:
            m, se, n = acc_se(inf.cells(SV, region, me))
            out(f"inf.sv300.{region}.{me}", f"Sapiens-VH {region} {me}: top-1 {m:.2f} ± {se:.2f} % (SE, {n} gaps)")
        for gaps, tag in ((None, "sv300"), (100, "sv100")):
            vals = [
                100 * np.mean([r["top1"] for (kk, _), r in inf.cells(SV, region, me, gaps).items() if kk == k])
                for me in beams
                for k in range(2, 8)
            ]
            which = "all 300" if gaps is None else "first 100"
            out(
                f"inf.{tag}.{region}.cell-range",
                f"Sapiens-VH {region}, four beams, per-k cells ({which} gaps per "
                f"cell): top-1 {min(vals):.2f}-{max(vals):.2f} %",
            )
        for me in ("hcb", "standard"):
            paired(
                f"inf.sv300.{region}.{me}.best-vs-l2r",
                f"Sapiens-VH {region} {me} best-to-worst - left-to-right",
                inf.cells(SV, region, f"{me}-best"),
                inf.cells(SV, region, f"{me}-l2r"),
            )
        for me in ("temperature-0.25", "temperature-0.5", "nucleus-0.9", "pure-sampling"):
            paired(
                f"inf.sv300.{region}.standard-vs-{me}",
                f"Sapiens-VH {region} standard-l2r - {me}",
                inf.cells(SV, region, "standard-l2r"),
                inf.cells(SV, region, me),
            )
        paired(
            f"inf.sv300.{region}.top5.standard-vs-t0.25",
            f"Sapiens-VH {region} top-5 standard-l2r - T=0.25",
            inf.cells(SV, region, "standard-l2r"),
            inf.cells(SV, region, "temperature-0.25"),
            lambda r: r["top5"],
        )
        for me in ("ablation-scramble", "ablation-swap"):
            paired(
                f"inf.sv300.{region}.hcb-vs-{me}",
                f"Sapiens-VH {region} hcb-l2r - {me}",
                inf.cells(SV, region, "hcb-l2r"),
                inf.cells(SV, region, me),
            )
        for me in methods:
            m, se, n = acc_se(inf.cells(AB, region, me))
            out(f"inf.ab100.{region}.{me}", f"AntiBERTy {region} {me}: top-1 {m:.2f} ± {se:.2f} % (SE, {n} gaps)")
        ab = lambda me: inf.cells(AB, region, me)  # noqa: E731
        paired(
            f"inf.ab100.{region}.hcb-best-vs-l2r",
            f"AntiBERTy {region} hcb-best - hcb-l2r",
            ab("hcb-best"),
            ab("hcb-l2r"),
        )
        paired(
            f"inf.ab100.{region}.hcb-vs-scramble",
            f"AntiBERTy {region} hcb-l2r - ablation-scramble",
            ab("hcb-l2r"),
            ab("ablation-scramble"),
        )
        for me in ("temperature-0.25", "pure-sampling"):
            paired(
                f"inf.ab100.{region}.standard-vs-{me}",
                f"AntiBERTy {region} standard-l2r - {me}",
                ab("standard-l2r"),
                ab(me),
            )
        a, s = inf.cells(AB, region, "standard-l2r"), inf.cells(SV, region, "standard-l2r", 100)
        same = all(
            (a[g]["chain_id"], a[g]["start"], a[g]["gold"]) == (s[g]["chain_id"], s[g]["start"], s[g]["gold"])
            for g in set(a) & set(s)
        )
        out(
            f"inf.models.{region}.same-gaps",
            f"AntiBERTy and Sapiens-VH {region} gaps 0-99: same chain, start and gold in every common gap: {same}",
        )
        paired(f"inf.models.{region}.standard-l2r", f"{region} standard-l2r AntiBERTy - Sapiens-VH", a, s)
    k7 = lambda me: {g: r for g, r in inf.cells(AB, "random", me).items() if g[0] == 7}  # noqa: E731
    paired(
        "inf.ab100.random.k7.hcb-vs-standard",
        "AntiBERTy random k=7 hcb-l2r - standard-l2r",
        k7("hcb-l2r"),
        k7("standard-l2r"),
    )
    for ds in ("snli", "xsum"):
        en = Infill(f"en-small-{ds}.jsonl")
        k1 = lambda me: {g: r for g, r in en.cells("en-small", "random", me).items() if g[0] == 1}  # noqa: E731
        for metric in ("top1", "top20"):
            paired(
                f"inf.en.{ds}.k1.{metric}.standard-vs-pure",
                f"en-small {ds} k=1 {metric} standard-l2r - pure-sampling",
                k1("standard-l2r"),
                k1("pure-sampling"),
                lambda r, m=metric: r[m],
            )


def section_pivots() -> None:
    for name in ("antiberty-cdrh3-k3", "antiberty-random-k3", "sapiens-vh-cdrh3-k3"):
        recs = read_jsonl(HERE / "infill" / "pivots" / f"{name}.jsonl", infill=True)
        by: dict = defaultdict(dict)
        for r in recs:
            by[r["pivot_token"] if r["pivot_token"] is not None else "standard"][r["gap_id"]] = r
        mask = next(r["pivot_token"] for r in recs if r["mask_pivot"])
        aa = sorted(t for t in by if len(t) == 1)
        special = sorted(t for t in by if t not in aa and t != "standard")
        gaps = sorted(by["standard"])
        top = {t: np.array([by[t][g]["top1"] for g in gaps]) for t in by}
        p, std, ng = f"piv.{name}", top["standard"], len(gaps)
        out(
            f"{p}.standard",
            f"{name}: standard beam top-1 {100 * std.mean():.1f} % (binomial SE "
            f"{100 * math.sqrt(std.mean() * (1 - std.mean()) / ng):.1f}, {ng} gaps)",
        )
        rng_aa = [100 * top[t].mean() for t in aa]
        out(
            f"{p}.aa-range",
            f"{name}: amino-acid pivots top-1 {min(rng_aa):.1f}-{max(rng_aa):.1f} %; special pivots "
            + ", ".join(f"{t} {100 * top[t].mean():.1f}" for t in special),
        )
        only = {
            t: (int(((top[t] == 1) & (std == 0)).sum()), int(((top[t] == 0) & (std == 1)).sum()))
            for t in by
            if t != "standard"
        }
        worst = max(only, key=lambda t: sum(only[t]))
        out(
            f"{p}.discordant",
            f"{name}: most gaps on which one pivot and standard differ in top-1 correctness: "
            f"{sum(only[worst])} of {ng} ({worst}); smallest sign-test p vs standard: "
            f"{min(sign_p(*v) for v in only.values()):.2g}",
        )
        best = max(aa, key=lambda t: top[t].mean())
        paired(
            f"{p}.best-aa-vs-mask",
            f"{name}: best amino-acid pivot {best} (chosen after the fact) - mask pivot {mask}",
            {g: by[best][g] for g in gaps},
            {g: by[mask][g] for g in gaps},
        )
        for tag, what, ref in (
            ("aa-vs-special", "mean over special pivots (mask included)", np.mean([top[t] for t in special], 0)),
            ("aa-vs-standard", "standard", std),
        ):
            d = np.mean([top[t] for t in aa], 0) - ref
            lo, hi = q95(d[boot_idx(f"{p}.{tag}", ng)].mean(1))
            out(
                f"{p}.{tag}",
                f"{name}: mean top-1 over amino-acid pivots - {what}: {100 * d.mean():+.2f} points, "
                f"95% CI [{100 * lo:+.2f}, {100 * hi:+.2f}] (bootstrap over gaps): {noise(lo, hi)}",
            )


def section_bf16() -> None:
    recs = read_jsonl(HERE / "infill" / "antiberty-bf16-check.jsonl")
    by = {(r["model"], r["region"], r["k"], r["gap_id"], r["method"]): r for r in recs}
    pairs = [(r, by[("antiberty@bf16",) + k[1:]]) for k, r in by.items() if k[0] == "antiberty"]
    a = np.array([x["seconds"] for x, _ in pairs])
    b = np.array([y["seconds"] for _, y in pairs])
    idx = boot_idx("bf16.cpu-ratio", len(pairs))
    lo, hi = q95(a[idx].sum(1) / b[idx].sum(1))
    out(
        "bf16.cpu-ratio",
        f"CPU seconds float32 / bfloat16 over {len(pairs)} paired records: {a.sum() / b.sum():.2f}x, "
        f"95% CI [{lo:.2f}, {hi:.2f}] (bootstrap over records; one run each, 3 jobs on 2 cores)",
    )


# -- ground truth (per-cell aggregates only) ---------------------------------------------------------


def _rate_z(p1: float, p2: float, n: int) -> tuple[float, float]:
    se = math.sqrt(p1 * (1 - p1) / n + p2 * (1 - p2) / n)
    return se, (p1 - p2) / se if se > 0 else math.inf


def section_ground_truth() -> None:
    recs = {r["unit"]: r for r in read_jsonl(HERE / "ground_truth" / "results.jsonl")}
    Js = ("0.5", "1", "2", "3")
    for J in Js:
        s = recs[f"coupling/J{J}/samplers"]
        out(
            f"gt.floor.J{J}",
            f"J={J}: MH TV to its target {s['mh']['tv_target']:.3f} / i.i.d. floor "
            f"{s['floor_target']:.3f} = {s['mh']['tv_target'] / s['floor_target']:.2f}x; Gibbs TV to "
            f"the truth {s['gibbs']['tv_truth']:.3f} / floor {s['floor_truth']:.3f} = "
            f"{s['gibbs']['tv_truth'] / s['floor_truth']:.2f}x",
        )
    n = 200
    out(
        "gt.rate-se",
        f"binomial SE of one rate over {n} gaps: at most {math.sqrt(0.25 / n):.3f}; of the difference "
        f"of two independent rates: at most {math.sqrt(0.5 / n):.3f} (95% half-width "
        f"{Z95 * math.sqrt(0.5 / n):.3f})",
    )
    wins = total = 0
    for J in Js:
        for k in (2, 3):
            m = recs[f"coupling/J{J}/infill-k{k}"]["methods"]
            for order in ("l2r", "best"):
                ps, ph = m[f"mlm/standard-{order}"]["mode"], m[f"mlm/hcb-{order}"]["mode"]
                se, z = _rate_z(ps, ph, n)
                total += 1
                wins += z > Z95
                out(
                    f"gt.infill.J{J}.k{k}.{order}",
                    f"J={J} k={k} {order}: trained-MLM mode rate standard {ps:.3f} - "
                    f"HCB {ph:.3f} = {ps - ph:+.3f}, SE {se:.3f} (unpaired), z = {z:.1f}: "
                    f"{'within noise' if abs(z) < Z95 else 'significant'}",
                )
            d = [
                m["mlm/hcb-best"]["mode"] - m["mlm/hcb-l2r"]["mode"],
                m["mlm/standard-best"]["mode"] - m["mlm/standard-l2r"]["mode"],
            ]
            out(
                f"gt.infill.J{J}.k{k}.order-gain",
                f"J={J} k={k}: best-to-worst - l2r mode rate: HCB {d[0]:+.3f}, standard {d[1]:+.3f}",
            )
    out(
        "gt.infill.count",
        f"standard's mode rate above HCB's by more than 1.96 unpaired SE in {wins} of {total} (J, k, order) cells",
    )
    rates = ("0.17", "0.34", "0.5", "0.67")
    base = recs["masking/r0.17-dynamic/infill-k3"]["methods"]["mlm/standard-l2r"]["mode"]
    for r in rates:
        mode = recs[f"masking/r{r}-dynamic/infill-k3"]["methods"]["mlm/standard-l2r"]["mode"]
        kl = recs[f"masking/r{r}-dynamic/pairs"]["kl"]
        se, z = _rate_z(mode, base, n)
        out(
            f"gt.masking.r{r}",
            f"dynamic masking rate {r}: infill k=3 standard-l2r mode {mode:.3f} (SE "
            f"{math.sqrt(mode * (1 - mode) / n):.3f}; vs rate 0.17: {mode - base:+.3f}, z = {z:.1f}); pair KL MLM "
            f"{kl['mlm']:.4f}, HCB {kl['hcb']:.4f}, AG {kl['ag']:.4f} (one seed, no per-pair records: no interval)",
        )
    for step in ("250", "3000"):
        m = recs[f"curve/step{step}/infill-k3"]["methods"]
        out(
            f"gt.curve.step{step}",
            f"J=2 step {step}: infill k=3 mode rate standard-l2r "
            f"{m['mlm/standard-l2r']['mode']:.3f}, HCB-l2r {m['mlm/hcb-l2r']['mode']:.3f} (each SE <= 0.035)",
        )
    m0, m1 = (recs[f"curve/step{s}/infill-k3"]["methods"]["mlm/hcb-l2r"]["mode"] for s in ("250", "3000"))
    se, z = _rate_z(m1, m0, n)
    out("gt.curve.hcb", f"HCB-l2r mode rate step 3000 - step 250: {m1 - m0:+.3f}, SE {se:.3f}, z = {z:.1f}")
    m0, m1 = (recs[f"curve/step{s}/infill-k3"]["methods"]["mlm/standard-l2r"]["mode"] for s in ("250", "3000"))
    se, z = _rate_z(m1, m0, n)
    out("gt.curve.standard", f"standard-l2r mode rate step 3000 - step 250: {m1 - m0:+.3f}, SE {se:.3f}, z = {z:.1f}")
    gaps = []
    for J in Js:
        kl = recs[f"coupling/J{J}/pairs"]["kl"]
        gaps.append(min(kl[m] for m in ("mlm", "mrf_logit", "mrf")) / max(kl["hcb"], kl["ag"]))
    out(
        "gt.pairs.gap",
        "KL of the closest of MLM / MRF-logit / MRF over the larger of HCB / AG, J = "
        + ", ".join(f"{J}: {g:.1f}x" for J, g in zip(Js, gaps))
        + " (single measurements)",
    )
    ag_hcb = [recs[f"coupling/J{J}/pairs"]["kl"]["hcb"] / recs[f"coupling/J{J}/pairs"]["kl"]["ag"] for J in Js]
    out(
        "gt.pairs.ag-vs-hcb",
        "KL(HCB) / KL(AG) by coupling: "
        + ", ".join(f"{x:.2f}" for x in ag_hcb)
        + f"; AG lower at {sum(x > 1 for x in ag_hcb)} of 4 couplings (sign test p = "
        f"{sign_p(sum(x > 1 for x in ag_hcb), sum(x < 1 for x in ag_hcb)):.3g}); no per-pair records, so no "
        "interval per coupling",
    )


# -- pair joints -------------------------------------------------------------------------------------


def section_joints() -> None:
    methods = ("mlm", "mrf_logit", "mrf", "hcb", "ag")
    for model in ("sapiens-vh", "antiberty"):
        recs = [r for r in read_jsonl(HERE / "joints" / model / "pairs.jsonl") if r["kind"] == "pair"]
        for scheme in ("random", "contiguous"):
            rs = [r for r in recs if r["scheme"] == scheme]
            n = len(rs)
            M = {
                m: {k: np.array([r["metrics"][m][k] for r in rs]) for k in ("pair_logp", "unary_logp", "akl", "gkl")}
                for m in methods
            }
            p = f"jt.{model}.{scheme}"
            idx = boot_idx(p, n)

            def ppl(m, what="pair_logp", i=None):
                x = M[m][what]
                return np.exp(-(x.mean() if i is None else x[i].mean(1)) / 2)

            def cmp(tag, a, b, what="pair_logp"):
                d = ppl(a, what) - ppl(b, what)
                lo, hi = q95(ppl(a, what, idx) - ppl(b, what, idx))
                name = "P-PPL" if what == "pair_logp" else "U-PPL"
                out(
                    f"{p}.{tag}",
                    f"{model} {scheme} {name} {a} - {b}: {ppl(a, what):.4f} - {ppl(b, what):.4f} = "
                    f"{d:+.4f}, 95% CI [{lo:+.4f}, {hi:+.4f}] (paired bootstrap over {n} pairs): "
                    f"{noise(lo, hi)}",
                )

            cmp("ppl.ag-vs-mlm", "ag", "mlm")
            cmp("ppl.mrfl-vs-mrf", "mrf_logit", "mrf")
            cmp("ppl.mrf-vs-ag", "mrf", "ag")
            cmp("uppl.ag-vs-mlm", "ag", "mlm", "unary_logp")
            for kl in ("akl", "gkl"):
                means = {m: M[m][kl].mean() for m in methods}
                nxt = min((m for m in methods if m != "ag"), key=means.get)
                r = M[nxt][kl][idx].mean(1) / M["ag"][kl][idx].mean(1)
                lo, hi = q95(r)
                out(
                    f"{p}.{kl}.next-over-ag",
                    f"{model} {scheme} {kl.upper()} of the next-lowest method ({nxt}) / AG: "
                    f"{means[nxt] / means['ag']:.1f}x, 95% CI [{lo:.1f}, {hi:.1f}] (paired bootstrap over {n} pairs): "
                    f"{'within noise' if lo <= 1 else 'AG lower'}",
                )


# -- benchmarks (per-round times in the Markdown) ----------------------------------------------------


def _bench_table(md: str, section: str) -> dict:
    block = md.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in block.splitlines():
        c = [x.strip() for x in line.strip("|").split("|")]
        if len(c) == 9 and c[0] in ("mlmprob", "minicons", "naive"):
            rows[c[0]] = {"n": int(c[1]), "seq_s": float(c[2]), "seq_cpu_s": float(c[3]), "seconds": float(c[4])}
    m = re.search(r"seconds per round: (.*)", block)
    for part in m.group(1).split(";"):
        name, vals = part.strip().split(" ", 1)
        rows[name]["rounds"] = [float(v) for v in vals.split(",")]
    return rows


def section_bench() -> None:
    files = {"bench_pll.md": None, "bench_pll_antiberty_rounds.md": None}
    for f in files:
        if not (HERE / f).exists():
            raise MissingRecords(f"docs/results/{f}")
        md = (HERE / f).read_text()
        files[f] = (_bench_table(md, "AntiBERTy"), re.search(r"load average ([\d./]+) at the start, ([\d./]+)", md))
    for f, (t, load) in files.items():
        nv = t["naive"]
        out(
            f"bench.{f}.naive",
            f"{f}: naive AntiBERTy {nv['n']} sequence(s), {nv['seconds']:.1f} s wall = "
            f"{nv['seconds'] / nv['n']:.1f} s per sequence, {1 / nv['seq_cpu_s']:.1f} CPU-s per sequence "
            f"({nv['seq_s'] / nv['seq_cpu_s']:.2f} cores busy on average); minicons {t['minicons']['seq_cpu_s']:.3f} "
            f"and mlmprob {t['mlmprob']['seq_cpu_s']:.3f} sequences per CPU-s; load average {load.group(1)} -> "
            f"{load.group(2)}",
        )
    (a, _), (b, _) = files["bench_pll.md"], files["bench_pll_antiberty_rounds.md"]
    ratio = {m: (a[m]["seq_s"] / b[m]["seq_s"], a[m]["seq_cpu_s"] / b[m]["seq_cpu_s"]) for m in ("naive", "minicons")}
    out(
        "bench.naive-gap",
        f"naive AntiBERTy, bench_pll.md / rounds file: {ratio['naive'][0]:.1f}x in sequences per "
        f"wall second, {ratio['naive'][1]:.1f}x in sequences per CPU-second; the same ratios for minicons (unchanged "
        f"code): {ratio['minicons'][0]:.2f}x and {ratio['minicons'][1]:.2f}x",
    )
    en = _bench_table((HERE / "bench_pll.md").read_text(), "English")
    runs = [("bench_pll.md", "English", en)] + [(f, "AntiBERTy", t) for f, (t, _) in files.items()]
    for f, model, t in runs:
        mp, mc = t["mlmprob"]["rounds"], t["minicons"]["rounds"]
        ratios = [y / x for x in mp for y in mc]
        out(
            f"bench.{f}.{model.lower()}.mlmprob-vs-minicons",
            f"{f}, {model}: round times mlmprob {mp}, minicons "
            f"{mc} s; minicons / mlmprob time over all pairs of rounds: {min(ratios):.2f}-{max(ratios):.2f}x "
            f"({len(mp)} and {len(mc)} rounds)",
        )


# -- English and scoring (aggregates only) -----------------------------------------------------------


def section_english() -> None:
    path = HERE / "english" / "scores.json"
    if not path.exists():
        raise MissingRecords("docs/results/english/scores.json")
    for s in json.loads(path.read_text())["scores"]:
        p, n = s["single_accuracy"], s["tokens"]
        out(
            f"en.{s['name']}",
            f"en-small {s['name']}: single-token accuracy {p:.3f}, binomial SE "
            f"{math.sqrt(p * (1 - p) / n):.4f} over {n} tokens (tokens of one sentence are not independent: a lower "
            "bound)",
        )


def section_scoring() -> None:
    recs = read_jsonl(HERE / "scoring" / "thera_hc_antiberty.jsonl")
    n = sum(r["n_tokens"] for r in recs[:8])
    a, s = 0.865, 0.773  # printed by docs/results/scoring/masked_accuracy.py (no per-residue records)
    se, z = _rate_z(a, s, n)
    out(
        "score.masked-acc",
        f"masked-residue accuracy AntiBERTy {a} vs Sapiens-VH {s} on the {n} residues of the "
        f"first eight chains: difference {a - s:+.3f}, SE {se:.3f} (binomial, unpaired, residues taken as "
        f"independent), z = {z:.1f}",
    )


SECTIONS = {
    "antiberty": section_antiberty,
    "sapiens-vh": section_sapiens,
    "antiberty-6sweeps": section_6sweeps,
    "infill": section_infill,
    "pivots": section_pivots,
    "bf16": section_bf16,
    "ground-truth": section_ground_truth,
    "joints": section_joints,
    "bench": section_bench,
    "english": section_english,
    "scoring": section_scoring,
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "sections", nargs="*", metavar="SECTION", help=f"sections to print: {', '.join(SECTIONS)} (default: all)"
    )
    args = p.parse_args(argv)
    unknown = [name for name in args.sections if name not in SECTIONS]
    if unknown:
        p.error(f"unknown section {unknown[0]!r}; choose from {', '.join(SECTIONS)}")
    print(f"# printed by `python docs/results/uncertainty.py` (B = {B} bootstrap replicates, 95% intervals)")
    for name in args.sections or SECTIONS:
        print(f"\n## {name}")
        try:
            SECTIONS[name]()
        except MissingRecords as e:
            print(f"skipped: records file {e} is absent")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""AntiBERTy numbers quoted in README.md and antiberty-bf16-check.md: the bf16-vs-fp32 agreement, and
the size and CPU time of the full column.
Run from the repository root: python docs/results/infill/antiberty_summary.py"""

import json

D = "docs/results/infill/"

# 1. bf16 vs fp32 on the same gaps (antiberty-bf16-check.jsonl)
recs = [json.loads(line) for line in open(D + "antiberty-bf16-check.jsonl")]
by = {(r["model"], r["region"], r["k"], r["gap_id"], r["method"]): r for r in recs}
pairs = [(r, by[("antiberty@bf16",) + key[1:]]) for key, r in by.items() if key[0] == "antiberty"]
n = len(pairs)
print(f"bf16 check: {n} paired records")
print(f"  same top-1 fill {sum(a['fills'][0] == b['fills'][0] for a, b in pairs)}")
print(
    f"  mean overlap of the returned fills {sum(len(set(a['fills']) & set(b['fills'])) / len(a['fills']) for a, b in pairs) / n:.3f}"
)
d = [abs(a["scores"][0] - b["scores"][0]) for a, b in pairs]
print(f"  top-1 score |difference| mean {sum(d) / n:.3f} max {max(d):.3f}")
for m in ("top1", "top20", "identity"):
    print(f"  {m}: fp32 {sum(a[m] for a, _ in pairs) / n:.3f} bf16 {sum(b[m] for _, b in pairs) / n:.3f}")
print(
    f"  CPU seconds (sum over records): fp32 {sum(a['seconds'] for a, _ in pairs):.1f} "
    f"bf16 {sum(b['seconds'] for _, b in pairs):.1f}"
)

# 2. the full AntiBERTy column: distinct records and CPU time (sum of the records' own seconds)
for f in ("antiberty-random.jsonl", "antiberty-cdrh3.jsonl"):
    rs = [json.loads(line) for line in open(D + f)]
    keys = {(r["model"], r["dataset"], r["region"], r["k"], r["gap_id"], r["method"]) for r in rs}
    print(f"{f}: {len(rs)} records, {len(keys)} distinct keys, {sum(r['seconds'] for r in rs) / 3600:.2f} core-hours")

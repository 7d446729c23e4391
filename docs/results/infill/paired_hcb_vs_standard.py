"""HCB vs standard beam search on the same gaps, from sapiens-vh.jsonl.
Run from the repository root: python docs/results/infill/paired_hcb_vs_standard.py"""
import collections
import json

recs = [json.loads(line) for line in open("docs/results/infill/sapiens-vh.jsonl")]
for region in ("random", "cdrh3"):
    for order in ("l2r", "best"):
        pairs = collections.defaultdict(dict)
        for r in recs:
            if r["region"] == region and r["method"] in (f"hcb-{order}", f"standard-{order}"):
                pairs[(r["k"], r["gap_id"])][r["method"].split("-")[0]] = r
        both = [p for p in pairs.values() if len(p) == 2]
        hcb = sum(p["hcb"]["top1"] > p["standard"]["top1"] for p in both)
        std = sum(p["hcb"]["top1"] < p["standard"]["top1"] for p in both)
        same = sum(p["hcb"]["fills"][0] == p["standard"]["fills"][0] for p in both)
        print(f"{region:7s} {order:5s} gaps {len(both):5d}  same top fill {same:5d}  top-1 only HCB right {hcb:3d}  "
              f"only standard right {std:3d}")

"""Mean E_local over chains after each sweep, per sampler (the numbers behind notes.md's per-sweep line).

python docs/results/sampling/antiberty-6sweeps/per_sweep.py > docs/results/sampling/antiberty-6sweeps/per_sweep.txt
"""

import json
from pathlib import Path

recs = [json.loads(s) for s in (Path(__file__).parent / "results.jsonl").read_text().splitlines() if s.strip()]
for name in ("t1/mh-local-pt1.0", "t1/gibbs-pt1.0"):
    rs = [r for r in recs if r["config"] == name]
    sweeps = len(rs[0]["per_epoch"]["e_local"])
    means = [sum(r["per_epoch"]["e_local"][i] for r in rs) / len(rs) for i in range(sweeps)]
    start = sum(r["start"]["e_local"] for r in rs) / len(rs)
    print(
        f"{name} ({len(rs)} chains): start {start:.2f}; after sweeps 1..{sweeps}: "
        + " ".join(f"{m:.2f}" for m in means)
    )

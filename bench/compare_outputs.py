"""Every command's outputs under two versions of the package, compared: the check a behaviour-keeping refactor runs.

    python bench/compare_outputs.py --base 37ca1a0 --work runs/compare

runs the same commands (fixed seeds, small inputs written under ``--work``) with ``PYTHONPATH`` set to the base
revision's ``src`` (from ``git archive``) and then to this checkout's, and prints each file whose content differs
once the volatile parts are blanked: timings, progress bars, the work folder's name. Exit status 1 if any differs.
It takes about 15 minutes on 2 idle cores (``sample --method adaptive`` is most of it: ``--skip-slow`` leaves it out).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEQ = "EVQLVESGGGLVQPGGSLRLSCAAS"
INPUTS = {
    "dup.fa": f">a\n{SEQ}\n>b\nEVQLVESGG_GLVQPGGSLRLSCAAS\n>a\n{SEQ}\n",
    "gaps.fa": ">g1\nEVQLVESGG__LVQPGGSLRLSCAAS\n>g1\nEVQLVESGG__LVQPGGSLRLSCAAS\n>g2\nEVQLV_SGGGLVQPGGS_RLSCAAS\n",
    "mut.csv": "mutant\nE1A\nV2K\nQ3R:L4A\nX9A\n",
    "wt.fa": f">wt\n{SEQ}\n",
}
SAMPLE = f"sample --seq {SEQ} --chains 2 --epochs 2 --seed 3 --no-progress"
DESIGN = "design CSRWGGDGFYAMDYWGQGTLVTVSS --positions 4-13 --chains 2 --steps 3 --seed 5 --no-progress"
COMMANDS = [
    ("sc", "score dup.fa --dedupe --out sc.jsonl"),
    ("sc1", "score dup.fa --dedupe --pll one-pass --out sc1.jsonl"),
    ("sc2", "score dup.fa --dedupe --shard 1/2 --out sc2.tsv"),
    *[(f"s_{m}", f"{SAMPLE} --method {m} --out s_{m}.jsonl") for m in ("mh", "gibbs", "ancestral", "speculative")],
    *[(f"s_{m}", f"{SAMPLE} --method {m} --out s_{m}.jsonl") for m in ("unmask", "adaptive", "mask-predict")],
    ("s_mh2", f"{SAMPLE} --method mh --sites 2 --informed --out s_mh2.jsonl"),
    ("d", f"{DESIGN} --expert sapiens-vh --out d.jsonl"),
    ("d2", f"{DESIGN} --method replica --temperatures 1,2 --out d2.jsonl"),
    ("inf", "infill --input gaps.fa --dedupe --out inf.jsonl"),
    ("inf2", "infill --input gaps.fa --dedupe --method hcb --out inf2.jsonl"),
    ("v", "variants mut.csv --wild-type wt.fa --skip-invalid --out v.tsv"),
    ("v2", "variants --saturate --wild-type wt.fa --out v2.jsonl"),
    ("cm", "check-model antiberty"),
    ("bad1", "score nonexistent.fa"),
    ("bad2", "sample --seq EVQL --chains 0"),
    *[(f"help_{c}", f"{c} --help") for c in ("score", "sample", "design", "infill", "variants", "joints", "train")],
    *[(f"help_{c}", f"{c} --help") for c in ("calibrate", "merge", "app", "check-model", "demo")],
]
VOLATILE = [
    (re.compile(r'"[a-z_]*(seconds|elapsed|_at|time)[a-z_]*": [^,}]*'), ""),  # timings and clock times
    (re.compile(r"[^\n\r]*\|[^\n\r]*\[[0-9:<?]+[^\n\r]*"), ""),  # tqdm bars
    (re.compile(r"\d+(\.\d+)? ?s\b"), "Ns"),
]


def run_all(src: Path, out: Path, skip_slow: bool) -> None:
    out.mkdir(parents=True)
    for name, text in INPUTS.items():
        (out / name).write_text(text)
    env = {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1"}
    for i, (tag, cmd) in enumerate(COMMANDS, 1):
        if skip_slow and "adaptive" in cmd:
            continue
        print(f"[{out.name}] {i}/{len(COMMANDS)} mlmprob {cmd}", file=sys.stderr, flush=True)
        argv = [sys.executable, "-m", "mlmprob", *shlex.split(cmd)]
        r = subprocess.run(argv, cwd=out, env=env, capture_output=True, text=True)
        (out / f"{tag}.stdout").write_text(r.stdout)
        (out / f"{tag}.stderr").write_text(r.stderr + f"\nexit {r.returncode}\n")


def normalised(p: Path, work: Path) -> str:
    text = p.read_text(errors="replace").replace(str(work), "WORK")
    for pattern, repl in VOLATILE:
        text = pattern.sub(repl, text)
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="HEAD", help="the revision to compare this checkout with (default: HEAD)")
    ap.add_argument("--work", default="runs/compare", help="a new folder for both runs' files")
    ap.add_argument("--skip-slow", action="store_true", help="leave out sample --method adaptive")
    args = ap.parse_args()
    work = Path(args.work).resolve()
    if work.exists():
        ap.error(f"--work {args.work} exists: give a new folder")
    with tempfile.TemporaryDirectory() as tmp:
        tar = Path(tmp) / "base.tar"
        subprocess.run(["git", "archive", "-o", str(tar), args.base, "src"], cwd=ROOT, check=True)
        with tarfile.open(tar) as t:
            t.extractall(Path(tmp) / "base", filter="data")
        run_all(Path(tmp) / "base" / "src", work / "base", args.skip_slow)
    run_all(ROOT / "src", work / "head", args.skip_slow)
    differ = []
    for f in sorted((work / "base").iterdir()):
        g = work / "head" / f.name
        if f.suffix in (".png", ".lock"):
            continue
        if not g.exists() or normalised(f, work / "base") != normalised(g, work / "head"):
            differ.append(f.name)
    differ += [g.name for g in sorted((work / "head").iterdir()) if not (work / "base" / g.name).exists()]
    print("\n".join(f"differs: {n}" for n in differ) or f"every output the same ({len(COMMANDS)} commands)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

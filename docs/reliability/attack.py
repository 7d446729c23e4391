"""Attack every command as a hostile new user would, and count what happens (issue 27).

    python docs/reliability/attack.py --out docs/reliability/attack.jsonl     # about 5 minutes on 2 cores

Each case is one command line with an expectation:

- ``refuse``: bad input. It must end with exit status 2 and exactly one stderr line ``error: ...`` that
  names the problem (``says``: words the line must contain). Exit 0 is a *silent acceptance*; a
  ``Traceback`` on stderr is a *traceback*; any other status, or several lines, is a *wrong refusal*; a
  refusal without the expected words is a *misleading message*.
- ``ok``: good (if unusual) input. It must end with status 0 (and pass ``check``, when given).

Then the runs that die: each streaming command is held at a known committed row (``MLMPROB_HOLD``,
:mod:`mlmprob.runtime.hold`), a second writer is started on the same output (it must be refused), the
run is killed with SIGKILL and resumed; rows lost or duplicated are counted against an uninterrupted run.
A ``--workers 2`` run is killed the same way and every process it started must be gone within 30 s.

Every case runs on a tiny random BERT built here (one residue per token) or on the embedded
``sapiens-vh``; nothing is downloaded. One JSON line per case goes to ``--out``; the counts table is
printed at the end (docs/reliability.md quotes it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

AA = "ACDEFGHIKLMNPQRSTVWY"
VH = ("EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSRWGGDGFYA"
      "MDYWGQGTLVTVSS")


# -- fixtures ---------------------------------------------------------------------------------------------

def tiny_bert(d: Path) -> Path:
    """A tiny random BERT with a one-residue-per-token vocabulary, saved for ``load_mlm(d)``."""
    import torch
    import transformers

    d.mkdir(parents=True, exist_ok=True)
    toks = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(AA)
    (d / "vocab.txt").write_text("\n".join(toks) + "\n")
    tok = transformers.BertTokenizer(str(d / "vocab.txt"), do_lower_case=False)
    torch.manual_seed(0)        # the fixture's weights only
    cfg = transformers.BertConfig(vocab_size=len(toks), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=160)
    transformers.BertForMaskedLM(cfg).save_pretrained(str(d))
    tok.save_pretrained(str(d))
    return d


def fasta(path: Path, n: int, seed: int = 0, lo: int = 8, hi: int = 40, ids=None) -> Path:
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            name = ids[i] if ids else f"s{i}"
            f.write(f">{name}\n{''.join(rng.choice(AA) for _ in range(rng.randint(lo, hi)))}\n")
    return path


# -- one case ----------------------------------------------------------------------------------------------

@dataclass
class Case:
    name: str
    argv: list
    expect: str = "refuse"                  # refuse | ok
    says: tuple[str, ...] = ()              # words a refusal must contain (case-insensitive)
    check: Callable[[str, str], str | None] | None = None   # (stdout, stderr) -> problem or None
    stdin: bytes | None = None              # run as a subprocess with this standard input
    group: str = "input"


def _in_process(argv: list, cwd: Path) -> tuple[int, str, str]:
    from mlmprob.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in argv])
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 2
            except BaseException:       # noqa: BLE001 - an escaped exception is what this script counts
                import traceback
                traceback.print_exc()
                code = 99
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def _cli(argv: list, extra_env: dict | None = None) -> tuple[list[str], dict]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", **(extra_env or {})}
    return [sys.executable, "-m", "mlmprob", "--threads", "1", *map(str, argv)], env


def _subprocess(argv: list, stdin: bytes | None, cwd: Path) -> tuple[int, str, str]:
    cmd, env = _cli(argv)
    p = subprocess.run(cmd, env=env, input=stdin, capture_output=True, cwd=cwd, timeout=600)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def judge(case: Case, code: int, out: str, err: str) -> str:
    """The outcome of one case: ok, traceback, silent, wrong-refusal, misleading, failed."""
    if "Traceback" in err:
        return "traceback"
    lines = [x for x in err.strip().splitlines() if x.strip() and not x.startswith("warning:")]
    if case.expect == "refuse":
        if code == 0:
            return "silent"
        if code != 2 or len(lines) != 1 or not lines[0].startswith("error: "):
            return "wrong-refusal"
        if any(w.lower() not in lines[0].lower() for w in case.says):
            return "misleading"
        return "ok"
    if code != 0:
        return "failed"
    if case.check is not None and (problem := case.check(out, err)):
        return f"failed: {problem}"
    return "ok"


def run_case(case: Case, cwd: Path) -> dict:
    t = time.monotonic()
    code, out, err = (_subprocess(case.argv, case.stdin, cwd) if case.stdin is not None
                      else _in_process(case.argv, cwd))
    outcome = judge(case, code, out, err)
    return {"group": case.group, "case": case.name, "expect": case.expect, "status": code, "outcome": outcome,
            "stderr": err.strip().splitlines()[-1][:300] if err.strip() else "", "s": round(time.monotonic() - t, 2)}


# -- the catalogue -----------------------------------------------------------------------------------------

def input_cases(d: Path, model: Path) -> list[Case]:
    m = ["--model", str(model), "--no-progress", "--device", "cpu"]
    good = fasta(d / "good.fasta", 6)
    dup = fasta(d / "dup.fasta", 5, ids=["a", "b", "a", "c", "d"])
    (d / "tab.jsonl").write_text(json.dumps({"id": "x\ty", "sequence": "ACDEFG"}) + "\n"
                                 + json.dumps({"id": "z", "sequence": "ACDEF"}) + "\n")
    (d / "lower.fasta").write_text(">a\nacdefg\n")
    (d / "na.csv").write_text("id,HC\na,EVQLVESGG\nb,na\nc,NA\n")
    (d / "empty_cell.csv").write_text("id,sequence\na,ACDEF\nb,\nc,ACD\n")
    (d / "empty.jsonl").write_text('{"id": "a", "sequence": "ACDE"}\n{"id": "b", "sequence": ""}\n')
    (d / "wt2.fasta").write_text(f">one\n{VH}\n>two\n{VH}\n")
    (d / "muts.csv").write_text("mutant,score\nE1A,0.1\nV2C,0.5\n")
    (d / "dir_out.jsonl").mkdir(exist_ok=True)
    (d / "empty_model").mkdir(exist_ok=True)
    long_wt = "".join(random.Random(3).choice(AA) for _ in range(300))
    swap = lambda a: "A" if a != "A" else "C"  # noqa: E731
    (d / "long_muts.csv").write_text("mutant\n" + "".join(f"{long_wt[i]}{i + 1}{swap(long_wt[i])}\n" for i in (0, 150, 299)))
    vh = ["--model", "sapiens-vh", "--no-progress", "--device", "cpu"]

    def rows_at_least(n):
        return lambda out, err: None if out.count("\n") >= n else f"{out.count(chr(10))} rows, expected {n}"

    return [
        Case("score: duplicate ids", ["score", dup, *m], says=("duplicate",)),
        Case("score: duplicate ids --dedupe", ["score", dup, *m, "--dedupe"], expect="ok", check=rows_at_least(4)),
        Case("score: TSV id holding a tab", ["score", d / "tab.jsonl", *m, "--out", d / "tab.tsv"], says=("id",)),
        Case("score: lowercase residues", ["score", d / "lower.fasta", *vh], says=("lower",)),
        Case("score: 'na' placeholders in a CSV", ["score", d / "na.csv", "--column", "HC", *vh], says=("na",)),
        Case("score: empty CSV cell", ["score", d / "empty_cell.csv", *m], says=("empty",)),
        Case("score: empty JSONL value", ["score", d / "empty.jsonl", *m], says=("empty",)),
        Case("score: from a pipe (-)", ["score", "-", "--format", "fasta", *m], expect="ok",
             stdin=good.read_bytes(), check=rows_at_least(6)),
        Case("score: /dev/stdin", ["score", "/dev/stdin", "--format", "fasta", *m], expect="ok",
             stdin=good.read_bytes(), check=rows_at_least(6)),
        Case("variants: 300-residue inline wild type", ["variants", d / "long_muts.csv", "--wild-type", long_wt,
                                                          "--methods", "wt_marginals", *m],
             expect="ok", check=rows_at_least(2)),
        Case("variants: two-record wild-type FASTA", ["variants", d / "muts.csv", "--wild-type", d / "wt2.fasta", *vh],
             says=("more than one",)),
        Case("variants: --methods ''", ["variants", d / "muts.csv", "--wild-type", VH, "--methods", "", *vh],
             says=("methods",)),
        Case("sample: -o x.fasta", ["sample", "--seq", "ACDEFGHIK", "--epochs", "1", "-o", d / "x.fasta", *m],
             says=("x.fasta",)),
        Case("sample: -o x.csv", ["sample", "--seq", "ACDEFGHIK", "--epochs", "1", "-o", d / "x.csv", *m],
             says=("x.csv",)),
        Case("sample: -o x.jsonl.gz", ["sample", "--seq", "ACDEFGHIK", "--epochs", "1", "-o", d / "x.jsonl.gz", *m],
             says=("x.jsonl.gz",)),
        Case("sample: --block-size 99 on 30 residues", ["sample", "--seq", VH[:30], "--epochs", "1", "--block-size",
                                                         "99", *m], says=("block",)),
        Case("train: --text /bin/ls", ["train", "--text", "/bin/ls", "--out", d / "tr", "--steps", "1"],
             says=("/bin/ls",)),
        Case("joints: a sequence too long", ["joints", "--data", fasta(d / "long.fasta", 2, lo=400, hi=420),
                                             "--out", d / "jl", *vh, "--n-pairs", "1"], says=("at most",)),
        Case("--model /nonexistent", ["score", good, "--model", "/nonexistent", "--no-progress"],
             says=("/nonexistent",)),
        Case("--model an empty folder", ["score", good, "--model", d / "empty_model", "--no-progress"],
             says=("empty_model",)),
        Case("--out naming a folder", ["score", good, *m, "--out", d / "dir_out.jsonl"], says=("folder",)),
        Case("variants --evaluate on two rows", ["variants", d / "muts.csv", "--wild-type", VH, "--label", "score",
                                                  "--evaluate", "--methods", "wt_marginals", "--out", d / "ev.jsonl", *vh],
             expect="ok", check=lambda out, err: None if "warning" in err.lower() else "no warning about 2 rows"),
        Case("score --help: one --batch-tokens default", ["score", "--help"], expect="ok",
             check=lambda out, err: None if " ".join(out.split()).count("default") and
             " ".join(out[out.find("--batch-tokens"):].split())[:400].count("default") <= 1 else "two defaults"),
    ]


def resume_cases(d: Path, model: Path) -> list[dict]:
    """Runs killed at a held row and resumed with a changed option, and merges of mixed parts."""
    from mlmprob.cli import main

    res = []
    m = ["--model", str(model), "--no-progress", "--device", "cpu"]
    inp = fasta(d / "resume.fasta", 40, seed=5)
    out = d / "mixed.jsonl"
    _held_kill(["score", inp, *m, "--out", out, "--dtype", "float32"], rows=16)
    c = Case("resume with another --dtype", ["score", inp, *m, "--out", out, "--resume", "--dtype", "bfloat16"],
             says=("dtype",), group="mixing")
    res.append(run_case(c, d))
    parts = []
    for i, dt in [(1, "float32"), (2, "bfloat16")]:
        parts.append(d / f"part{i}.jsonl")
        _in_process(["score", inp, *m, "--out", parts[-1], "--shard", f"{i}/2", "--dtype", dt], d)
    res.append(run_case(Case("merge float32 + bfloat16 shards", ["merge", "--out", d / "merged.jsonl", *parts],
                             says=("dtype",), group="mixing"), d))
    folder = d / "sample_run"
    _in_process(["sample", "--seq", "ACDEFGHIKL", "--epochs", "2", "--out", folder, *m, "--no-plot"], d)
    res.append(run_case(Case("folder sample rerun with another --seed",
                             ["sample", "--seq", "ACDEFGHIKL", "--epochs", "2", "--out", folder, *m, "--no-plot",
                              "--seed", "7"], says=("seed",), group="mixing"), d))
    # a killed merge (a partial output left behind) can be run again
    good = [d / f"g{i}.jsonl" for i in (1, 2)]
    for i, p in enumerate(good, 1):
        _in_process(["score", inp, *m, "--out", p, "--shard", f"{i}/2"], d)
    merged = d / "merged_ok.jsonl"
    staging = merged.with_name(f"{merged.name}.merging{merged.suffix}")
    staging.write_text('{"id": "s0", "pll"')         # what a merge killed in its first write leaves
    res.append(run_case(Case("merge rerun after a kill", ["merge", "--out", merged, *good], expect="ok",
                             group="mixing"), d))
    del main
    return res


# -- held runs, kills, processes ------------------------------------------------------------------------------

class _Hold:
    def __init__(self, rows: int):
        self.r_held, w_held = os.pipe()
        r_go, self.w_go = os.pipe()
        self.child_fds = (w_held, r_go)
        self.env = {"MLMPROB_HOLD": f"{rows}:{w_held}:{r_go}"}

    def start(self, argv: list, **kw) -> subprocess.Popen:
        cmd, env = _cli(argv, self.env)
        proc = subprocess.Popen(cmd, env=env, pass_fds=self.child_fds, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, **kw)
        for fd in self.child_fds:
            os.close(fd)
        self.proc = proc
        return proc

    def wait(self, limit: float = 300) -> bool:
        t0, buf = time.monotonic(), b""
        while not buf.endswith(b"\n"):
            if select.select([self.r_held], [], [], 0.5)[0]:
                chunk = os.read(self.r_held, 4096)
                if not chunk:
                    return False
                buf += chunk
            elif self.proc.poll() is not None or time.monotonic() - t0 > limit:
                return False
        return True

    def close(self) -> None:
        for fd in (self.r_held, self.w_go):
            with contextlib.suppress(OSError):
                os.close(fd)


def _held_kill(argv: list, rows: int, second: list | None = None) -> dict:
    """Start ``argv`` held at ``rows`` committed rows; run ``second`` meanwhile; SIGKILL. What happened."""
    hold = _Hold(rows)
    proc = hold.start(argv)
    rec: dict = {}
    try:
        rec["held"] = hold.wait()
        if not rec["held"]:
            rec["error"] = (proc.stderr.read() or b"").decode(errors="replace")[-300:]
        if second is not None and rec["held"]:
            cmd, env = _cli(second)
            s = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            lines = s.stderr.strip().splitlines()
            rec["second_writer"] = ("refused" if s.returncode == 2 and len(lines) == 1
                                    and "being written by another process" in lines[0] else
                                    f"NOT refused (status {s.returncode}): {s.stderr.strip()[-200:]}")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        hold.close()
    return rec


def _ids(path: Path) -> list[str]:
    from mlmprob.runtime.writers import read_results

    return [str(r["id"]) for r in read_results(path)] if path.exists() or Path(str(path) + ".parts").exists() else []


def kill_cases(d: Path, model: Path, rounds: int) -> list[dict]:
    m = ["--model", str(model), "--no-progress", "--device", "cpu"]
    inp = fasta(d / "kill.fasta", 120, seed=9)
    wt = VH[:40].replace("Q", "A")
    commands = {
        "score .jsonl": lambda out: ["score", inp, *m, "--out", out, "--batch-tokens", "64"],
        "score .tsv": lambda out: ["score", inp, *m, "--out", out, "--batch-tokens", "64"],
        "score .parquet": lambda out: ["score", inp, *m, "--out", out, "--part-rows", "8", "--batch-tokens", "64"],
        "variants --saturate": lambda out: ["variants", "--wild-type", wt, "--saturate", *m, "--out", out,
                                            "--methods", "wt_marginals,masked_marginals"],
        "infill --input": lambda out: ["infill", "--input", _gaps(d), *m,
                                       "--out", out, "--gaps", "each", "--beam-size", "2"],
        "sample (streamed)": lambda out: ["sample", "--input", fasta(d / "samp.fasta", 40, seed=2, lo=8, hi=12), *m,
                                          "--epochs", "2", "--chains", "2", "--out", out],
    }
    suffix = {"score .tsv": ".tsv", "score .parquet": ".parquet"}
    res = []
    for name, argv in commands.items():
        ref = d / f"ref-{len(res)}{suffix.get(name, '.jsonl')}"
        _in_process(argv(ref), d)
        want = _ids(ref)
        for k in range(rounds):
            out = d / f"kill-{len(res)}{suffix.get(name, '.jsonl')}"
            rows = random.Random(f"{name}:{k}").randint(1, max(1, len(want) // 2))
            rec = _held_kill(argv(out), rows, second=argv(out) + ["--resume"])
            code, _, err = _in_process(argv(out) + ["--resume"], d)
            got = _ids(out)
            rec.update(group="kill", case=name, round=k, hold_rows=rows, resume_status=code,
                       rows=len(want), lost=len(set(want) - set(got)), duplicated=len(got) - len(set(got)),
                       extra=len(set(got) - set(want)))
            if code != 0:
                rec["resume_error"] = err.strip()[-300:]
            res.append(rec)
    return res


def _gaps(d: Path) -> Path:
    p = d / "gaps.txt"
    if not p.exists():
        rng = random.Random(4)
        p.write_text("".join("".join(rng.choice(AA) for _ in range(10)) + "__" + "".join(rng.choice(AA) for _ in range(8))
                             + "\n" for _ in range(30)))
    return p


def _children(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (from /proc)."""
    parent = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                parent[int(p.name)] = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        x = todo.pop()
        kids = [c for c, pp in parent.items() if pp == x]
        out += kids
        todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def process_cases(d: Path, model: Path) -> list[dict]:
    m = ["--model", str(model), "--no-progress", "--device", "cpu"]
    inp = fasta(d / "procs.fasta", 200, seed=11)
    res = []
    hold = _Hold(32)
    proc = hold.start(["score", inp, *m, "--workers", "2", "--out", d / "w.jsonl", "--batch-tokens", "64"])
    try:
        held = hold.wait()
        kids = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        t0 = time.monotonic()
        while any(_alive(k) for k in kids) and time.monotonic() - t0 < 30:
            time.sleep(0.2)       # waiting for deaths that must happen, not for progress
        left = [k for k in kids if _alive(k)]
        res.append({"group": "processes", "case": "SIGKILL of a --workers 2 parent", "held": held,
                    "children": len(kids), "left_behind": len(left),
                    "outcome": "ok" if held and kids and not left else f"{len(left)} of {len(kids)} processes left"})
        for k in left:
            with contextlib.suppress(OSError):
                os.kill(k, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        hold.close()
    cmd, env = _cli(["score", fasta(d / "few.fasta", 3), *m, "--workers", "100"])
    t = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    capped = "capped" in p.stderr.lower() or "warning" in p.stderr.lower()
    res.append({"group": "processes", "case": "--workers 100 on 3 records", "status": p.returncode,
                "s": round(time.monotonic() - t, 1), "stderr": p.stderr.strip()[-300:],
                "outcome": "ok" if p.returncode == 0 and capped else "not capped" if p.returncode == 0 else "failed"})
    return res


# -- main ------------------------------------------------------------------------------------------------------

def summarize(records: list[dict]) -> str:
    inputs = [r for r in records if r["group"] in ("input", "mixing")]
    kills = [r for r in records if r["group"] == "kill"]
    procs = [r for r in records if r["group"] == "processes"]
    count = lambda rs, what: sum(1 for r in rs if str(r.get("outcome", "")).startswith(what))  # noqa: E731
    lines = ["| what | count |", "|---|---|",
             f"| bad- and odd-input cases tried | {len(inputs)} |",
             f"| tracebacks | {count(inputs, 'traceback')} |",
             f"| silent acceptances | {count(inputs, 'silent')} |",
             f"| wrong refusals (status or lines) | {count(inputs, 'wrong-refusal')} |",
             f"| misleading messages | {count(inputs, 'misleading')} |",
             f"| good input refused or wrong | {count(inputs, 'failed')} |",
             f"| SIGKILLs at a held row, then resume | {len(kills)} |",
             f"| second writers refused | {sum(r.get('second_writer') == 'refused' for r in kills)} of {len(kills)} |",
             f"| rows lost | {sum(r.get('lost', 0) for r in kills)} |",
             f"| rows duplicated | {sum(r.get('duplicated', 0) for r in kills)} |",
             f"| resumes that failed | {sum(r.get('resume_status') != 0 for r in kills)} |",
             f"| processes left behind after SIGKILL of the parent | "
             f"{sum(r.get('left_behind', 0) for r in procs)} |",
             f"| --workers capped with a message | {'yes' if count(procs[1:], 'ok') else 'no'} |"]
    bad = [r for r in records if str(r.get("outcome", "ok")) != "ok" or r.get("lost") or r.get("duplicated")]
    if bad:
        lines += ["", "Not as expected:", ""]
        lines += [f"- {r['case']}: {r.get('outcome', '')} {r.get('stderr', r.get('resume_error', ''))}".rstrip()
                  for r in bad]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="one JSON line per case")
    ap.add_argument("--rounds", type=int, default=2, help="kill rounds per streaming command")
    ap.add_argument("--only", choices=("input", "mixing", "kill", "processes"), action="append")
    args = ap.parse_args(argv)
    os.environ.setdefault("MLMPROB_DTYPE", "float32")
    import torch

    torch.set_num_threads(1)
    records: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        model = tiny_bert(d / "tiny-bert")
        groups = args.only or ["input", "mixing", "kill", "processes"]
        if "input" in groups:
            records += [run_case(c, d) for c in input_cases(d, model)]
        if "mixing" in groups:
            records += resume_cases(d, model)
        if "kill" in groups:
            records += kill_cases(d, model, args.rounds)
        if "processes" in groups:
            records += process_cases(d, model)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    print(summarize(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())

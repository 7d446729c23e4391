"""The runs of ``attack.py`` that die: runs held at a known committed row (``MLMPROB_HOLD``) and killed with
SIGKILL, then resumed (rows lost or duplicated against an uninterrupted run); the parent of a
``--workers 2`` run killed (every process it started must be gone); ``--workers 100`` on three records."""

from __future__ import annotations

import contextlib
import os
import random
import select
import signal
import subprocess
import time
from pathlib import Path

from attack_harness import AA, VH, cli, fasta, in_process


class Hold:
    def __init__(self, rows: int):
        self.r_held, w_held = os.pipe()
        r_go, self.w_go = os.pipe()
        self.child_fds = (w_held, r_go)
        self.env = {"MLMPROB_HOLD": f"{rows}:{w_held}:{r_go}"}

    def start(self, argv: list, env: dict | None = None, **kw) -> subprocess.Popen:
        cmd, env = cli(argv, {**self.env, **(env or {})})
        proc = subprocess.Popen(
            cmd, env=env, pass_fds=self.child_fds, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw
        )
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

    def kill(self) -> None:
        """SIGKILL the held run and reap it."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        for fd in (self.r_held, self.w_go):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> Hold:
        return self

    def __exit__(self, *exc) -> None:
        """Whatever happened: the run is not left alive, and the pipes are closed."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.close()


def held_kill(argv: list, rows: int, second: list | None = None) -> dict:
    """Start ``argv`` held at ``rows`` committed rows; run ``second`` meanwhile; SIGKILL. What happened."""
    hold = Hold(rows)
    proc = hold.start(argv)
    rec: dict = {}
    with hold:
        rec["held"] = hold.wait()
        if not rec["held"]:
            rec["error"] = (proc.stderr.read() or b"").decode(errors="replace")[-300:]
        if second is not None and rec["held"]:
            cmd, env = cli(second)
            s = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            lines = s.stderr.strip().splitlines()
            rec["second_writer"] = (
                "refused"
                if s.returncode == 2 and len(lines) == 1 and "being written by another process" in lines[0]
                else f"NOT refused (status {s.returncode}): {s.stderr.strip()[-200:]}"
            )
        hold.kill()
    return rec


def ids_of(path: Path) -> list[str]:
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
        "variants --saturate": lambda out: [
            "variants",
            "--wild-type",
            wt,
            "--saturate",
            *m,
            "--out",
            out,
            "--methods",
            "wt_marginals,masked_marginals",
        ],
        "infill --input": lambda out: [
            "infill",
            "--input",
            _gaps(d),
            *m,
            "--out",
            out,
            "--gaps",
            "each",
            "--beam-size",
            "2",
        ],
        "sample (streamed)": lambda out: [
            "sample",
            "--input",
            fasta(d / "samp.fasta", 40, seed=2, lo=8, hi=12),
            *m,
            "--epochs",
            "2",
            "--chains",
            "2",
            "--out",
            out,
        ],
    }
    suffix = {"score .tsv": ".tsv", "score .parquet": ".parquet"}
    res = []
    for name, argv in commands.items():
        ref = d / f"ref-{len(res)}{suffix.get(name, '.jsonl')}"
        in_process(argv(ref), d)
        want = ids_of(ref)
        for k in range(rounds):
            out = d / f"kill-{len(res)}{suffix.get(name, '.jsonl')}"
            rows = random.Random(f"{name}:{k}").randint(1, max(1, len(want) // 2))
            rec = held_kill(argv(out), rows, second=argv(out) + ["--resume"])
            code, _, err = in_process(argv(out) + ["--resume"], d)
            got = ids_of(out)
            rec.update(
                group="kill",
                case=name,
                round=k,
                hold_rows=rows,
                resume_status=code,
                rows=len(want),
                lost=len(set(want) - set(got)),
                duplicated=len(got) - len(set(got)),
                extra=len(set(got) - set(want)),
            )
            if code != 0:
                rec["resume_error"] = err.strip()[-300:]
            res.append(rec)
    return res


def _gaps(d: Path) -> Path:
    p = d / "gaps.txt"
    if not p.exists():
        rng = random.Random(4)
        p.write_text(
            "".join(
                "".join(rng.choice(AA) for _ in range(10)) + "__" + "".join(rng.choice(AA) for _ in range(8)) + "\n"
                for _ in range(30)
            )
        )
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
    hold = Hold(32)
    proc = hold.start(["score", inp, *m, "--workers", "2", "--out", d / "w.jsonl", "--batch-tokens", "64"])
    with hold:
        held = hold.wait()
        kids = _children(proc.pid)
        hold.kill()
        t0 = time.monotonic()
        while any(_alive(k) for k in kids) and time.monotonic() - t0 < 30:
            time.sleep(0.2)  # waiting for deaths that must happen, not for progress
        left = [k for k in kids if _alive(k)]
        res.append(
            {
                "group": "processes",
                "case": "SIGKILL of a --workers 2 parent",
                "held": held,
                "children": len(kids),
                "left_behind": len(left),
                "outcome": "ok" if held and kids and not left else f"{len(left)} of {len(kids)} processes left",
            }
        )
        for k in left:
            with contextlib.suppress(OSError):
                os.kill(k, signal.SIGKILL)
    cmd, env = cli(["score", fasta(d / "few.fasta", 3), *m, "--workers", "100"])
    t = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    capped = "capped" in p.stderr.lower() or "warning" in p.stderr.lower()
    res.append(
        {
            "group": "processes",
            "case": "--workers 100 on 3 records",
            "status": p.returncode,
            "s": round(time.monotonic() - t, 1),
            "stderr": p.stderr.strip()[-300:],
            "outcome": "ok" if p.returncode == 0 and capped else "not capped" if p.returncode == 0 else "failed",
        }
    )
    return res

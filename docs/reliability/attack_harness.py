"""What every case of ``attack.py`` shares: the fixtures (a tiny BERT, FASTA files), one case, how it runs
(in this process, or as a subprocess with a standard input, an environment, resource limits and a time
limit), how its outcome is judged, and what it must leave untouched (``guard``)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

AA = "ACDEFGHIKLMNPQRSTVWY"
VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSRWGGDGFYA"
    "MDYWGQGTLVTVSS"
)
NEVER_CLOSED = b"<a standard input that is never closed>"  # Case.stdin: a pipe the script keeps open
GiB = 1 << 30


# -- fixtures ---------------------------------------------------------------------------------------------


def tiny_bert(d: Path, seed: int = 0, **config) -> Path:
    """A tiny random BERT with a one-residue-per-token vocabulary, saved for ``load_mlm(d)``."""
    import torch
    import transformers

    d.mkdir(parents=True, exist_ok=True)
    toks = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(AA)
    (d / "vocab.txt").write_text("\n".join(toks) + "\n")
    tok = transformers.BertTokenizer(str(d / "vocab.txt"), do_lower_case=False)
    torch.manual_seed(seed)  # the fixture's weights only
    cfg = transformers.BertConfig(
        vocab_size=len(toks),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=160,
        **config,
    )
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


def model_args(model) -> list:
    return ["--model", str(model), "--no-progress", "--device", "cpu"]


# -- one case ----------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One command line and what it must do.

    ``expect``: ``refuse`` (exit 2, one ``error:`` line holding every word of ``says``; ``a|b``: either),
    ``ok`` (exit 0, ``check`` passes) or ``any`` (either of them: a refusal is judged as ``refuse``, an exit 0
    must pass ``check``, and a wrong result with exit 0 is a *silent acceptance*). ``never``: words no
    stderr line may hold (a *misleading message*). ``guard``: paths (files, folders, symlinks) whose
    presence, bytes and mtime must be the same after the case (else *files altered*). ``lost``: rows
    lost, counted after the case. A case runs in this process unless it needs a standard input, an
    environment of its own, resource limits or a time limit (``timeout``: past it, a *hang*).
    """

    name: str
    argv: list
    expect: str = "refuse"  # refuse | ok | any
    says: tuple[str, ...] = ()  # words a refusal must contain (case-insensitive; "a|b": either)
    check: Callable[[str, str], str | None] | None = None  # (stdout, stderr) -> problem or None
    stdin: bytes | None = None  # run as a subprocess with this standard input (or NEVER_CLOSED)
    stdin_file: bool = False  # stdin a regular file (``< x``), not a pipe
    group: str = "input"
    never: tuple[str, ...] = ()  # words no stderr line may contain
    env: dict = field(default_factory=dict)  # extra environment
    limits: dict = field(default_factory=dict)  # {resource.RLIMIT_*: bytes}: run as a subprocess
    timeout: float | None = None  # seconds: run as a subprocess, a hang past it
    guard: tuple = ()  # paths that must be left as they were
    lost: Callable[[], int] | None = None  # rows lost (after the case)
    subprocess: bool = False  # run as a subprocess even without the above
    hold: int | None = None  # MLMPROB_HOLD at this row, its controller letting go at once

    def in_process(self) -> bool:
        return not (
            self.subprocess
            or self.stdin is not None
            or self.limits
            or self.timeout is not None
            or self.hold is not None
        )


@contextlib.contextmanager
def _environment(extra: dict):
    old = {k: os.environ.get(k) for k in extra}
    os.environ.update({k: str(v) for k, v in extra.items()})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def in_process(argv: list, cwd: Path, env: dict | None = None) -> tuple[int, str, str]:
    from mlmprob.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with _environment(env or {}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in argv])
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 2
            except BaseException:  # noqa: BLE001 - an escaped exception is what this script counts
                import traceback

                traceback.print_exc()
                code = 99
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def cli(argv: list, extra_env: dict | None = None) -> tuple[list[str], dict]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", **(extra_env or {})}
    return [sys.executable, "-m", "mlmprob", "--threads", "1", *map(str, argv)], env


def _limited(limits: dict):
    def apply():
        for what, n in limits.items():
            resource.setrlimit(what, (n, n))

    return apply if limits else None


def _feed(data: bytes) -> int:
    """The read end of a pipe that a thread fills with ``data`` and then closes (``cat x | mlmprob ...``)."""
    import threading

    r, w = os.pipe()

    def write():
        with contextlib.suppress(OSError), os.fdopen(w, "wb") as f:
            f.write(data)

    threading.Thread(target=write, daemon=True).start()
    return r


def run_subprocess(
    argv: list,
    stdin: bytes | None,
    cwd: Path,
    *,
    env: dict | None = None,
    limits: dict | None = None,
    timeout: float | None = None,
    stdin_file: bool = False,
    hold: int | None = None,
) -> tuple[int | None, str, str]:
    """``(status, stdout, stderr)`` of ``python -m mlmprob argv``; status None when it ran past ``timeout``
    (its whole process group is then killed). ``stdin``: bytes given through a pipe (a regular file with
    ``stdin_file``, as ``< x`` gives it), or NEVER_CLOSED: a pipe kept open until the run ends. ``hold``: the run
    is held at that row (``MLMPROB_HOLD``) by a controller that has let go already (its end of the pipe closed)."""
    cmd, full_env = cli(argv, env)
    keep_open = None
    hold_fds: tuple[int, ...] = ()
    if hold is not None:
        held_r, held_w = os.pipe()
        go_r, go_w = os.pipe()
        os.close(go_w)  # the controller lets go at once
        hold_fds = (held_w, go_r)
        full_env["MLMPROB_HOLD"] = f"{hold}:{held_w}:{go_r}"
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        if stdin is NEVER_CLOSED:
            given, keep_open = os.pipe()
        elif stdin is not None and stdin_file:
            given = tempfile.TemporaryFile()
            given.write(stdin)
            given.seek(0)
        elif stdin is not None:
            given = _feed(stdin)
        else:
            given = subprocess.DEVNULL
        try:
            proc = subprocess.Popen(
                cmd,
                env=full_env,
                stdin=given,
                stdout=out,
                stderr=err,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_limited(limits or {}),
                pass_fds=hold_fds,
            )
        finally:
            for fd in hold_fds:
                os.close(fd)
            if isinstance(given, int) and given >= 0:
                os.close(given)
            elif hasattr(given, "close"):
                given.close()
        try:
            code = proc.wait(timeout=timeout or 600)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, 9)
            proc.wait()
            code = None
        finally:
            if keep_open is not None:
                os.close(keep_open)
            if hold is not None:
                os.close(held_r)
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, 9)  # what the run left in its group (workers)
        out.seek(0)
        err.seek(0)
        return code, out.read().decode(errors="replace"), err.read().decode(errors="replace")


def setup(d: Path, argv: list, stdin: bytes | None = None) -> None:
    """A set-up run (in this process; with ``stdin``, a subprocess reading it through a pipe). It must
    succeed: else the case that follows would test nothing."""
    if stdin is None:
        code, _, err = in_process(argv, d)
    else:
        (d / "subprocess-temp").mkdir(exist_ok=True)
        code, _, err = run_subprocess(argv, stdin, d, env={"TMPDIR": str(d / "subprocess-temp")}, timeout=600)
    if code != 0:
        raise RuntimeError(f"set-up {' '.join(map(str, argv[:2]))} failed: {err.strip()[-300:]}")


# -- judging --------------------------------------------------------------------------------------------------


def _holds(line: str, word: str) -> bool:
    return any(w.lower() in line.lower() for w in word.split("|"))


def judge(case: Case, code: int | None, out: str, err: str) -> str:
    """The outcome of one case: ok, hang, killed, traceback, silent, wrong-refusal, misleading, failed."""
    if code is None:
        return "hang"
    if "Traceback" in err:
        return "traceback"
    if code < 0:
        return f"killed (signal {-code})"
    lines = [x for x in err.strip().splitlines() if x.strip() and not x.startswith("warning:")]
    if any(_holds(x, w) for x in lines for w in case.never):
        return "misleading"
    if case.expect == "ok" or (case.expect == "any" and code == 0):
        if code != 0:
            return "failed"
        if case.check is not None and (problem := case.check(out, err)):
            return f"{'failed' if case.expect == 'ok' else 'silent'}: {problem}"
        return "ok"
    if code == 0:
        return "silent"
    if code != 2 or len(lines) != 1 or not lines[0].startswith("error: "):
        return "wrong-refusal"
    if not all(_holds(lines[0], w) for w in case.says):
        return "misleading"
    return "ok"


def snapshot(path: Path):
    """What a guarded path is: None (absent), a symlink's target, a folder's entries, a file's digest and mtime."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    if path.is_symlink():
        return ("symlink", os.readlink(path))
    if path.is_dir():
        return ("folder", {p.name: snapshot(p) for p in sorted(path.iterdir())})
    return ("file", hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)


def run_case(case: Case, cwd: Path) -> dict:
    before = [snapshot(p) for p in case.guard]
    t = time.monotonic()
    if case.in_process():
        code, out, err = in_process(case.argv, cwd, case.env)
    else:
        tmp = cwd / "subprocess-temp"  # what a killed run leaves stays in the script's own folder
        tmp.mkdir(exist_ok=True)
        code, out, err = run_subprocess(
            case.argv,
            case.stdin,
            cwd,
            env={"TMPDIR": str(tmp), **case.env},
            limits=case.limits,
            timeout=case.timeout,
            stdin_file=case.stdin_file,
            hold=case.hold,
        )
    outcome = judge(case, code, out, err)
    rec = {
        "group": case.group,
        "case": case.name,
        "expect": case.expect,
        "status": code,
        "outcome": outcome,
        "stderr": err.strip().splitlines()[-1][:300] if err.strip() else "",
        "s": round(time.monotonic() - t, 2),
    }
    altered = [str(p) for p, b in zip(case.guard, before) if snapshot(p) != b]
    if altered:
        rec["altered"] = altered
        if outcome == "ok":
            rec["outcome"] = "altered"
    if case.lost is not None:
        rec["lost"] = case.lost()
    return rec


def rows_of(path: Path) -> list[dict]:
    """The rows of a result file (JSONL, TSV, Parquet), [] when it is missing or unreadable."""
    from mlmprob.runtime.writers import read_results

    try:
        return list(read_results(path))
    except Exception:  # noqa: BLE001 - a missing or damaged file holds no rows
        return []


def lost_rows(out: Path, want: int) -> Callable[[], int]:
    """Rows an output holds fewer than ``want`` (0 when it does not exist: a refusal loses nothing)."""
    return lambda: max(0, want - len({str(r.get("id")) for r in rows_of(out)})) if out.exists() else 0


def jsonl_rows(out: str) -> list[dict]:
    return [json.loads(x) for x in out.splitlines() if x.startswith("{")]

"""Issue 49's cases (the third red-team round): the same number whatever the spread in every dtype, resume and
merge that trust only what they check, design's oracle and motifs, sizes checked before allocating, and the
last tracebacks. Each function yields its cases one by one (a case's set-up runs just before it)."""

from __future__ import annotations

import json
from pathlib import Path

from attack_harness import VH, Case, fasta, model_args, setup


def _meta_config(p: Path) -> dict:
    return json.loads(p.with_name(p.name + ".meta.json").read_text()).get("config", {})


def spread_cases(d: Path, model: Path):
    """bfloat16 records its thread count and budget (item 1); unchecked merges say so (item 3); a merge whose
    input is gone says so (item 9)."""
    import torch

    d.mkdir(parents=True, exist_ok=True)
    m = model_args(model)
    inp = fasta(d / "in.fasta", 24, seed=11)
    threads = torch.get_num_threads()
    try:
        parts = []
        for i, t in ((1, 1), (2, 2)):
            parts.append(d / f"bf{i}.jsonl")
            setup(d, ["--threads", t, "score", inp, *m, "--out", parts[-1], "--shard", f"{i}/2", "--dtype", "bfloat16"])
        yield Case(
            "merge bfloat16 shards of --threads 1 and --threads 2",
            ["merge", "--out", d / "bf-merged.jsonl", *parts],
            says=("threads",),
            group="round3",
        )
        out = d / "bf-resume.jsonl"
        setup(d, ["--threads", 1, "score", inp, *m, "--out", out, "--dtype", "bfloat16", "--limit", "5"])
        yield Case(
            "resume bfloat16 at another thread count",
            ["--threads", 2, "score", inp, *m, "--out", out, "--dtype", "bfloat16", "--resume"],
            says=("threads",),
            guard=(out,),
            group="round3",
        )
        yield Case(
            "resume bfloat16 with another --batch-tokens",
            ["--threads", 1, "score", inp, *m, "--out", out, "--dtype", "bfloat16", "--resume", "--batch-tokens", 64],
            says=("batch_tokens",),
            guard=(out,),
            group="round3",
        )
    finally:
        torch.set_num_threads(threads)
    yield from _merge_cases(d, m, inp)


def _merge_cases(d: Path, m: list, inp: Path):
    p1, p2 = d / "f1.jsonl", d / "f2.jsonl"
    setup(d, ["score", inp, *m, "--out", p1, "--shard", "1/2"])
    setup(d, ["score", inp, *m, "--out", p2, "--shard", "2/2", "--dtype", "bfloat16"])
    p2.with_name(p2.name + ".meta.json").unlink()
    merged = d / "unchecked.jsonl"
    yield Case(
        "merge --no-meta-check marks its output unchecked",
        ["merge", "--no-meta-check", "--out", merged, p1, p2],
        expect="ok",
        check=lambda out, err: None if _meta_config(merged).get("unchecked") else "the merged meta claims checks",
        group="round3",
    )
    yield Case(
        "merge of an unchecked merge's output",
        ["merge", "--out", d / "again.jsonl", merged],
        says=("without checks",),
        group="round3",
    )
    yield Case(
        "resume onto an unchecked merge's output",
        ["score", inp, *m, "--out", merged, "--resume"],
        says=("unchecked",),
        guard=(merged,),
        group="round3",
    )
    gone = fasta(d / "gone.fasta", 12, seed=12)
    q1, q2 = d / "g1.jsonl", d / "g2.jsonl"
    for i, q in ((1, q1), (2, q2)):
        setup(d, ["score", gone, *m, "--out", q, "--shard", f"{i}/2"])
    gone.unlink()
    yield Case(
        "merge after the input file was deleted",
        ["merge", "--out", d / "gone-merged.jsonl", q1, q2],
        says=("no longer exists",),
        group="round3",
    )


def design_cases(d: Path, model: Path):
    """Design's motifs of unbounded cost, weights beyond any use, oracles that exit or change (items 2, 4, 5, 7-9)."""
    d.mkdir(parents=True, exist_ok=True)
    m = model_args(model)
    design = ["design", VH, *m, "--chains", "1", "--steps", "1"]
    for name, motif, says in [
        ("nested quantifier", "(.+)+Z", "quantifier"),
        ("alternation repeated", "(?:A|AA)+D", "alternation"),
        ("repetition count 99999999999", "a{99999999999}", "10,000"),
        ("adjacent wildcards", ".*.*.*.*Z", "would take"),
        ("lower case", "ng", "upper-case"),
    ]:
        yield Case(f"design --forbid: {name}", [*design, "--forbid", motif], says=(says,), timeout=60, group="round3")
    parent = "A" * 28 + "C"
    yield Case(
        "design --forbid '(A+)+D' --keep-parent-motifs on 28 A then C",
        ["design", parent, *m, "--forbid", "(A+)+D", "--keep-parent-motifs", "--chains", "1", "--steps", "1"],
        says=("quantifier",),
        timeout=60,
        group="round3",
    )
    yield Case(
        "design --require '(A+)+C'", [*design, "--require", "(A+)+C"], says=("quantifier",), timeout=60, group="round3"
    )
    yield Case("design --expert M:1e308", [*design, "--expert", f"{model}:1e308"], says=("1e+09",), group="round3")
    yield Case(
        "design --expert M --expert M:raw",
        [*design, "--expert", str(model), "--expert", f"{model}:raw"],
        expect="ok",
        group="round3",
    )
    yield Case(
        "design --expert M --expert M:2", [*design, "--expert", str(model), "--expert", f"{model}:2"],
        says=("twice",), group="round3",
    )  # fmt: skip
    yield from _oracle_cases(d, m)


def _oracle_cases(d: Path, m: list):
    (d / "exit3.py").write_text("def f(seqs):\n    raise SystemExit(3)\n")
    env = {"PYTHONPATH": str(d)}
    run = ["design", VH, *m, "--chains", "1", "--steps", "1", "--allow-code"]
    yield Case(
        "design --oracle raising SystemExit(3)",
        [*run, "--oracle", "exit3:f"],
        says=("SystemExit",),
        env=env,
        subprocess=True,
        group="round3",
    )
    edited, out = d / "edited.py", d / "oracle.jsonl"
    edited.write_text("def f(seqs):\n    return [s.count('G') for s in seqs]\n")
    base = ["design", "EVQLVESGGGLVQPGGSLRLS", *m, "--chains", "3", "--steps", "2", "--allow-code"]
    import os

    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(d), before]))
    try:  # a subprocess (an empty stdin) that imports the oracle from ``d``
        setup(d, [*base, "--oracle", "edited:f", "--out", out], stdin=b"")
    finally:
        os.environ.pop("PYTHONPATH") if before is None else os.environ.update(PYTHONPATH=before)
    edited.write_text("def f(seqs):\n    return [-s.count('G') for s in seqs]\n")
    yield Case(
        "design --resume after the oracle's code changed",
        [*base, "--oracle", "edited:f", "--out", out, "--resume"],
        says=("oracle", "changed"),
        guard=(out,),
        env=env,
        subprocess=True,
        group="round3",
    )


def size_cases(d: Path, model: Path):
    """Sizes checked before anything is built (item 6), the last tracebacks (item 7) and ``--positions`` on resume
    (item 9)."""
    import resource

    d.mkdir(parents=True, exist_ok=True)
    m, vh = model_args(model), model_args("sapiens-vh")
    ok = fasta(d / "ok.fasta", 2, seed=13)
    six_gib = {resource.RLIMIT_AS: 6 << 30}
    yield Case("infill: a gap of [MASK]x999999999", ["infill", "EVQLV[MASK]x999999999GG", *vh],
               says=("999,999,999",), limits=six_gib, timeout=120, group="round3")  # fmt: skip
    yield Case("infill: a gap longer than the model reads", ["infill", "EVQLV[MASK]x1000GG", *vh],
               says=("longer than the model reads",), group="round3")  # fmt: skip
    yield Case(
        "sample --chains 1000000",
        ["sample", "--seq", "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSY", "--chains", "1000000", "--epochs", "1", *vh],
        says=("1,000,000 chains",),
        limits=six_gib,
        timeout=300,
        group="round3",
    )
    noline = d / "noline.txt"
    with open(noline, "wb") as f:
        f.write(b"A" * (9 << 20))
    yield Case("score: a 9 MiB line without a newline", ["score", noline, *m], says=("longer than",),
               limits=six_gib, timeout=120, group="round3")  # fmt: skip
    (d / "n1.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    (d / "n2.jsonl").write_text('{"a":' * 100_000 + "1" + "}" * 100_000 + "\n")
    for name in ("n1.jsonl", "n2.jsonl"):
        yield Case(f"score: a JSONL line nested 100,000 deep ({name})", ["score", d / name, *m],
                   says=("nested too deeply",), group="round3")  # fmt: skip
    for flag, dev in (("--device", "meta"), ("--device", "xla"), ("--devices", "meta")):
        argv = ["score", ok, "--model", str(model), "--no-progress", flag, dev]
        yield Case(f"score {flag} {dev}", argv, says=(flag, dev), group="round3")
    yield from _positions_cases(d, vh)


def _positions_cases(d: Path, vh: list):
    seq = "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSY"  # 32 residues
    inp = d / "s32.fasta"
    inp.write_text("".join(f">r{i}\n{seq}\n" for i in range(3)))
    out = d / "positions.jsonl"
    run = ["sample", "--input", inp, "--epochs", "1", "--burn-in", "0", "--chains", "2", "--out", out, *vh]
    setup(d, run)
    whole = out.read_text().splitlines()
    out.write_text("\n".join(whole[:2]) + "\n")  # a run cut after two rows
    meta = out.with_name(out.name + ".meta.json")
    data = json.loads(meta.read_text())
    data["complete"], data["rows"] = False, 2
    meta.write_text(json.dumps(data))
    yield Case(
        "sample --resume --positions 1-32 on a run started without it",
        [*run, "--resume", "--positions", "1-32"],
        expect="ok",
        check=lambda o, e: None if out.read_text().splitlines() == whole else "rows differ from the whole run",
        group="round3",
    )


def closed_stdout_record(d: Path, model: Path) -> dict:
    """``mlmprob score ok.fasta >&-``: one line and exit 2, never a traceback (item 7)."""
    import subprocess
    import sys

    from attack_harness import judge

    ok = fasta(d / "closed.fasta", 2, seed=14)
    argv = [sys.executable, "-m", "mlmprob", "score", str(ok), *map(str, model_args(model))]
    p = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *argv], stderr=subprocess.PIPE, text=True, timeout=300)
    case = Case("score with standard output closed (>&-)", [], says=("standard output",), group="round3")
    err = p.stderr.strip()
    return {"group": "round3", "case": case.name, "expect": "refuse", "status": p.returncode,
            "outcome": judge(case, p.returncode, "", p.stderr), "stderr": err.splitlines()[-1][:300] if err else ""}  # fmt: skip


def _nothing_left(d: Path, name: str):
    return lambda out, err: (
        (", ".join(sorted(x.name for x in d.glob(name + "*"))) + " left") if any(d.glob(name + "*")) else None
    )


def file_cases(d: Path, model: Path):
    """A full disk names the file and leaves no lock or temporary file (item 10). The limits leave room for the
    case's own stderr file (the harness captures it in a file under the same limit)."""
    import resource

    d.mkdir(parents=True, exist_ok=True)
    ok = fasta(d / "ok.fasta", 60, seed=15)  # rows that never fit the limits below
    for name, limit, says in (("full.tsv", 1000, "full.tsv"), ("full.parquet", 300, "meta.json.tmp"),
                              ("full.jsonl", 1000, "full.jsonl")):  # fmt: skip
        yield Case(
            f"score --out {name} with {limit} bytes of room",
            ["score", ok, *model_args(model), "--out", d / name],
            says=(says,),
            check=_nothing_left(d, name),
            limits={resource.RLIMIT_FSIZE: limit},
            timeout=300,
            group="round3",
        )


def closed_stdin_hold_record(d: Path, model: Path) -> dict:
    """``MLMPROB_HOLD=1:2:0`` with standard input closed: it completes with its summary and exit 0 (item 8)."""
    import os
    import subprocess
    import sys

    ok, out = fasta(d / "hold.fasta", 6, seed=16), d / "hold-closed.jsonl"
    argv = [sys.executable, "-m", "mlmprob", "score", str(ok), *map(str, model_args(model)), "--out", str(out)]
    env = {**os.environ, "MLMPROB_HOLD": "1:2:0"}
    p = subprocess.run(["sh", "-c", 'exec "$@" 0<&-', "sh", *argv], stderr=subprocess.PIPE, text=True, env=env,
                       timeout=300)  # fmt: skip
    lines = p.stderr.strip().splitlines()
    good = p.returncode == 0 and lines and lines[-1].startswith("scored") and len(out.read_text().splitlines()) == 6
    return {"group": "round3", "case": "MLMPROB_HOLD=1:2:0 with standard input closed", "expect": "ok",
            "status": p.returncode, "outcome": "ok" if good else f"failed: {lines[-1:] or p.returncode}",
            "stderr": lines[-1][:300] if lines else ""}  # fmt: skip


def round3_cases(d: Path, model: Path):
    """Every case of issue 49, group by group."""
    yield from spread_cases(d / "spread", model)
    yield from design_cases(d / "design", model)
    yield from size_cases(d / "sizes", model)
    yield closed_stdout_record(d / "sizes", model)
    yield from file_cases(d / "files", model)
    yield closed_stdin_hold_record(d / "files", model)

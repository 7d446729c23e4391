"""Attack every command as a hostile new user (and a hostile neighbour) would, and count what happens
(issues 27 and 35).

    python docs/reliability/attack.py --out docs/reliability/attack.jsonl     # about 20 minutes on 2 cores
    python docs/reliability/attack.py --only identity --only files            # some groups
    python docs/reliability/attack.py --only stdin --case /dev/stdin          # some cases of a group

Each case is one command line with an expectation (``attack_harness.Case``):

- ``refuse``: bad input. It must end with exit status 2 and exactly one stderr line ``error: ...`` that
  names the problem (``says``: words the line must contain, ``a|b`` either). Exit 0 is a *silent
  acceptance*; a ``Traceback`` on stderr is a *traceback*; any other status, or several lines, is a *wrong
  refusal*; a refusal without the expected words is a *misleading message*.
- ``ok``: good (if unusual) input. It must end with status 0 (and pass ``check``, when given).
- ``any``: either of them (where the fix may refuse or do the right thing); a wrong result with exit 0
  is a silent acceptance.

A case may also guard paths (a user's file, a symlink's target, a folder behind a symlink, a refused
run's output: their presence, bytes and mtime must not change: else *files altered*), count the *rows
lost* of what it wrote, and run as a subprocess with a standard input (a pipe, a file, or a pipe never
closed), an environment, resource limits (``RLIMIT_AS`` for sizes of 1e9, ``RLIMIT_FSIZE`` for a full
temp folder) and a time limit (past it, a *hang*; the whole process group is killed).

Groups: ``input`` and ``mixing`` (issue 27, here); ``identity`` (resume and merge check the input, the
weights, each part's meta and row count and format) and ``files`` (foreign outputs, symlinked lock, meta
and parts): ``attack_cases.py``; ``limits`` (sizes of 1e9, NaN probabilities, ``--devices``, ``--limit``),
``models`` (damaged or foreign model files): ``attack_limits.py``, and ``stdin`` (stdin read once, spooled
copies, ``MLMPROB_HOLD``, messages): ``attack_stdin.py`` (issue 35). Then the runs that die (``attack_runs.py``): each streaming
command is held at a known committed row (``MLMPROB_HOLD``, :mod:`mlmprob.runtime.hold`), a second writer
is started on the same output (it must be refused), the run is killed with SIGKILL and resumed; rows lost
or duplicated are counted against an uninterrupted run. A ``--workers 2`` run is killed the same way and
every process it started must be gone within 30 s; a run reading stdin is killed and no spooled copy of
it may be left.

Every case runs on a tiny random BERT built here (one residue per token) or on the embedded
``sapiens-vh``; nothing is downloaded. One JSON line per case goes to ``--out``; the counts table is
printed at the end (docs/reliability.md quotes it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the helper modules beside this script

import attack_cases  # noqa: E402
import attack_limits  # noqa: E402
import attack_round3  # noqa: E402
import attack_stdin  # noqa: E402
from attack_harness import AA, VH, Case, fasta, in_process, run_case, tiny_bert  # noqa: E402
from attack_runs import held_kill, kill_cases, process_cases  # noqa: E402

# -- the catalogue -----------------------------------------------------------------------------------------


def _rows_at_least(n):
    return lambda out, err: None if out.count("\n") >= n else f"{out.count(chr(10))} rows, expected {n}"


def _input_files(d: Path) -> tuple[Path, Path, str]:
    """The input cases' files in ``d``: ``(good.fasta, dup.fasta, a 300-residue wild type)`` and the others
    the cases name."""
    good = fasta(d / "good.fasta", 6)
    dup = fasta(d / "dup.fasta", 5, ids=["a", "b", "a", "c", "d"])
    (d / "tab.jsonl").write_text(
        json.dumps({"id": "x\ty", "sequence": "ACDEFG"}) + "\n" + json.dumps({"id": "z", "sequence": "ACDEF"}) + "\n"
    )
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
    (d / "long_muts.csv").write_text(
        "mutant\n" + "".join(f"{long_wt[i]}{i + 1}{swap(long_wt[i])}\n" for i in (0, 150, 299))
    )
    return good, dup, long_wt


def input_cases(d: Path, model: Path) -> list[Case]:
    m = ["--model", str(model), "--no-progress", "--device", "cpu"]
    vh = ["--model", "sapiens-vh", "--no-progress", "--device", "cpu"]
    good, dup, long_wt = _input_files(d)
    return [
        Case("score: duplicate ids", ["score", dup, *m], says=("duplicate",)),
        Case("score: duplicate ids --dedupe", ["score", dup, *m, "--dedupe"], expect="ok", check=_rows_at_least(4)),
        Case("score: TSV id holding a tab", ["score", d / "tab.jsonl", *m, "--out", d / "tab.tsv"], says=("id",)),
        Case("score: lowercase residues", ["score", d / "lower.fasta", *vh], says=("lower",)),
        Case("score: 'na' placeholders in a CSV", ["score", d / "na.csv", "--column", "HC", *vh], says=("na",)),
        Case("score: empty CSV cell", ["score", d / "empty_cell.csv", *m], says=("empty",)),
        Case("score: empty JSONL value", ["score", d / "empty.jsonl", *m], says=("empty",)),
        Case(
            "score: from a pipe (-)",
            ["score", "-", "--format", "fasta", *m],
            expect="ok",
            stdin=good.read_bytes(),
            check=_rows_at_least(6),
        ),
        Case(
            "score: /dev/stdin",
            ["score", "/dev/stdin", "--format", "fasta", *m],
            expect="ok",
            stdin=good.read_bytes(),
            check=_rows_at_least(6),
        ),
        Case(
            "variants: 300-residue inline wild type",
            ["variants", d / "long_muts.csv", "--wild-type", long_wt, "--methods", "wt_marginals", *m],
            expect="ok",
            check=_rows_at_least(2),
        ),
        Case(
            "variants: two-record wild-type FASTA",
            ["variants", d / "muts.csv", "--wild-type", d / "wt2.fasta", *vh],
            says=("more than one",),
        ),
        Case(
            "variants: --methods ''",
            ["variants", d / "muts.csv", "--wild-type", VH, "--methods", "", *vh],
            says=("methods",),
        ),
    ] + _output_cases(d, m, vh, good)


def _output_cases(d: Path, m: list, vh: list, good: Path) -> list[Case]:
    """The input cases about outputs, other commands, model paths and --help (after score's and variants')."""
    return [
        Case(
            "sample: -o x.fasta",
            ["sample", "--seq", "ACDEFGHIK", "--epochs", "1", "-o", d / "x.fasta", *m],
            says=("x.fasta",),
        ),
        Case(
            "sample: -o x.csv",
            ["sample", "--seq", "ACDEFGHIK", "--epochs", "1", "-o", d / "x.csv", *m],
            says=("x.csv",),
        ),
        Case(
            "sample: -o x.jsonl.gz",
            ["sample", "--seq", "ACDEFGHIK", "--epochs", "1", "-o", d / "x.jsonl.gz", *m],
            says=("x.jsonl.gz",),
        ),
        Case(
            "sample: --block-size 99 on 30 residues",
            ["sample", "--seq", VH[:30], "--epochs", "1", "--block-size", "99", *m],
            says=("block",),
        ),
        Case(
            "train: --text /bin/ls",
            ["train", "--text", "/bin/ls", "--out", d / "tr", "--steps", "1"],
            says=("/bin/ls",),
        ),
        Case(
            "joints: a sequence too long",
            ["joints", "--data", fasta(d / "long.fasta", 2, lo=400, hi=420), "--out", d / "jl", *vh, "--n-pairs", "1"],
            says=("at most",),
        ),
        Case(
            "--model /nonexistent", ["score", good, "--model", "/nonexistent", "--no-progress"], says=("/nonexistent",)
        ),
        Case(
            "--model an empty folder",
            ["score", good, "--model", d / "empty_model", "--no-progress"],
            says=("empty_model",),
        ),
        Case("--out naming a folder", ["score", good, *m, "--out", d / "dir_out.jsonl"], says=("folder",)),
        Case(
            "variants --evaluate on two rows",
            [
                "variants",
                d / "muts.csv",
                "--wild-type",
                VH,
                "--label",
                "score",
                "--evaluate",
                "--methods",
                "wt_marginals",
                "--out",
                d / "ev.jsonl",
                *vh,
            ],
            expect="ok",
            check=lambda out, err: None if "warning" in err.lower() else "no warning about 2 rows",
        ),
        Case(
            "score --help: one --batch-tokens default",
            ["score", "--help"],
            expect="ok",
            check=lambda out, err: (
                None
                if " ".join(out.split()).count("default")
                and " ".join(out[out.find("--batch-tokens") :].split())[:400].count("default") <= 1
                else "two defaults"
            ),
        ),
    ]


def resume_cases(d: Path, model: Path) -> list[dict]:
    """Runs killed at a held row and resumed with a changed option, and merges of mixed parts."""
    from mlmprob.cli import main

    res = []
    m = ["--model", str(model), "--no-progress", "--device", "cpu"]
    inp = fasta(d / "resume.fasta", 40, seed=5)
    out = d / "mixed.jsonl"
    held_kill(["score", inp, *m, "--out", out, "--dtype", "float32"], rows=16)
    c = Case(
        "resume with another --dtype",
        ["score", inp, *m, "--out", out, "--resume", "--dtype", "bfloat16"],
        says=("dtype",),
        group="mixing",
    )
    res.append(run_case(c, d))
    parts = []
    for i, dt in [(1, "float32"), (2, "bfloat16")]:
        parts.append(d / f"part{i}.jsonl")
        in_process(["score", inp, *m, "--out", parts[-1], "--shard", f"{i}/2", "--dtype", dt], d)
    res.append(
        run_case(
            Case(
                "merge float32 + bfloat16 shards",
                ["merge", "--out", d / "merged.jsonl", *parts],
                says=("dtype",),
                group="mixing",
            ),
            d,
        )
    )
    folder = d / "sample_run"
    in_process(["sample", "--seq", "ACDEFGHIKL", "--epochs", "2", "--out", folder, *m, "--no-plot"], d)
    res.append(
        run_case(
            Case(
                "folder sample rerun with another --seed",
                ["sample", "--seq", "ACDEFGHIKL", "--epochs", "2", "--out", folder, *m, "--no-plot", "--seed", "7"],
                says=("seed",),
                group="mixing",
            ),
            d,
        )
    )
    # a killed merge (a partial output left behind) can be run again
    good = [d / f"g{i}.jsonl" for i in (1, 2)]
    for i, p in enumerate(good, 1):
        in_process(["score", inp, *m, "--out", p, "--shard", f"{i}/2"], d)
    merged = d / "merged_ok.jsonl"
    staging = merged.with_name(f"{merged.name}.merging{merged.suffix}")
    staging.write_text('{"id": "s0", "pll"')  # what a merge killed in its first write leaves
    res.append(
        run_case(Case("merge rerun after a kill", ["merge", "--out", merged, *good], expect="ok", group="mixing"), d)
    )
    del main
    return res


# -- main ------------------------------------------------------------------------------------------------------

GROUPS = ("input", "mixing", "identity", "files", "limits", "models", "stdin", "round3", "kill", "processes")
CASE_GROUPS = ("input", "mixing", "identity", "files", "limits", "models", "stdin", "round3")  # one command, judged


def summarize(records: list[dict]) -> str:
    inputs = [r for r in records if r["group"] in CASE_GROUPS]
    kills = [r for r in records if r["group"] == "kill"]
    procs = [r for r in records if r["group"] == "processes"]
    count = lambda rs, what: sum(1 for r in rs if str(r.get("outcome", "")).startswith(what))  # noqa: E731
    workers = [r for r in procs if r["case"].startswith("--workers")]
    devices = [r for r in records if r["case"].startswith("--devices")]
    spools = [r for r in records if "spooled" in r["case"]]
    lines = [
        "| what | count |",
        "|---|---|",
        f"| bad- and odd-input cases tried | {len(inputs)} |",
        f"| tracebacks | {count(inputs, 'traceback')} |",
        f"| silent acceptances | {count(inputs, 'silent')} |",
        f"| wrong refusals (status or lines) | {count(inputs, 'wrong-refusal')} |",
        f"| misleading messages | {count(inputs, 'misleading')} |",
        f"| good input refused or wrong | {count(inputs, 'failed')} |",
        f"| hangs (past the case's time limit) or killed (memory limit) | "
        f"{count(inputs, 'hang') + count(inputs, 'killed')} |",
        f"| files altered (a user's file, a symlink's target, a refused run's output) | "
        f"{sum(bool(r.get('altered')) for r in records)} |",
        f"| rows lost (kills, resumes, merges) | {sum(r.get('lost') or 0 for r in records)} |",
        f"| SIGKILLs at a held row, then resume | {len(kills)} |",
        f"| second writers refused | {sum(r.get('second_writer') == 'refused' for r in kills)} of {len(kills)} |",
        f"| rows duplicated | {sum(r.get('duplicated', 0) for r in kills)} |",
        f"| resumes that failed | {sum(r.get('resume_status') != 0 for r in kills)} |",
        f"| processes left behind after SIGKILL of the parent | {sum(r.get('left_behind', 0) for r in procs)} |",
        f"| spooled stdin copies left behind after SIGKILL | {sum(r.get('left', 0) for r in spools)} |",
        f"| --workers capped with a message | {'yes' if count(workers, 'ok') else 'no'} |",
        f"| --devices capped with a message | {'yes' if count(devices, 'ok') else 'no'} |",
    ]
    bad = [
        r
        for r in records
        if str(r.get("outcome", "ok")) != "ok" or r.get("lost") or r.get("duplicated") or r.get("altered")
    ]
    if bad:
        lines += ["", "Not as expected:", ""]
        lines += [
            f"- {r['case']}: {r.get('outcome', '')}"
            + (f" (lost {r['lost']})" if r.get("lost") else "")
            + (f" (altered {', '.join(Path(a).name for a in r['altered'])})" if r.get("altered") else "")
            + f" {r.get('stderr', r.get('resume_error', ''))}".rstrip()
            for r in bad
        ]
    return "\n".join(lines)


def _run_all(cases, d: Path, group: str, only: list[str] | None = None) -> list[dict]:
    """Run the cases a generator yields (a case's set-up runs just before it); a set-up that fails ends
    its group with one record ``script error`` rather than the whole run."""
    records = []
    try:
        for c in cases:
            if only and not any(w in (c["case"] if isinstance(c, dict) else c.name) for w in only):
                continue
            records.append(c if isinstance(c, dict) else run_case(c, d))
            print(f"{records[-1]['case']}: {records[-1]['outcome']}", file=sys.stderr, flush=True)
    except Exception as e:  # noqa: BLE001 - a bug of this script (or a set-up that fails), reported
        import traceback

        records.append(
            {
                "group": group,
                "case": f"set-up after {len(records)} case(s)",
                "outcome": f"script error: {type(e).__name__}: {e}"[:300],
            }
        )
        traceback.print_exc()
    return records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="one JSON line per case")
    ap.add_argument("--rounds", type=int, default=2, help="kill rounds per streaming command")
    ap.add_argument("--only", choices=GROUPS, action="append", help="run only these groups (repeatable)")
    ap.add_argument("--case", action="append", help="of the issue-35 groups, run only the cases whose name holds this")
    args = ap.parse_args(argv)
    os.environ.setdefault("MLMPROB_DTYPE", "float32")
    import torch

    torch.set_num_threads(1)
    records: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        model = tiny_bert(d / "tiny-bert")
        groups = args.only or GROUPS
        if "input" in groups:
            records += [run_case(c, d) for c in input_cases(d, model)]
        if "mixing" in groups:
            records += resume_cases(d, model)
        for name, cases in [
            ("identity", attack_cases.identity_cases),
            ("files", attack_cases.file_cases),
            ("limits", attack_limits.limit_cases),
            ("models", attack_limits.model_cases),
            ("stdin", attack_stdin.stdin_cases),
            ("round3", attack_round3.round3_cases),
        ]:
            if name in groups:
                records += _run_all(cases(d / name, model), d, name, args.case)
        if "kill" in groups:
            records += kill_cases(d, model, args.rounds)
        if "processes" in groups:
            records += process_cases(d, model)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w") as f:
            for r in records:  # the temporary folder as $TMP: no path of the machine that ran it
                f.write(json.dumps(r).replace(str(d), "$TMP") + "\n")
    print(summarize(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())

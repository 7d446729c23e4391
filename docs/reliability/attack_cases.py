"""Issue 35's cases of a run's identity and of files mlmprob did not write: ``--resume`` and ``merge`` must
check what they can verify (the input, the weights, each part's meta and row count, the parts' format) and
never alter a user's file (a foreign output, a symlink's target, a folder behind a symlink).

Each function yields its cases one by one (a case's set-up runs just before it): :class:`Case` objects,
judged by ``attack_harness.run_case``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from attack_harness import Case, fasta, lost_rows, model_args, rows_of, setup, tiny_bert
from attack_runs import held_kill

LINK = "symlink|symbolic|link"  # how a refusal of a symlink may name it


def _shards(d: Path, inp: Path, m: list, n: int, name: str, suffixes=None, dtypes=None) -> list[Path]:
    parts = []
    for i in range(1, n + 1):
        p = d / f"{name}{i}{(suffixes or {}).get(i, '.jsonl')}"
        setup(d, ["score", inp, *m, "--out", p, "--shard", f"{i}/{n}", "--dtype", (dtypes or {}).get(i, "float32")])
        parts.append(p)
    return parts


def _meta(p: Path) -> Path:
    return p.with_name(p.name + ".meta.json")


def identity_cases(d: Path, model: Path):
    """Resumes and merges that must check the run's identity: the input, the weights, the parts."""
    d.mkdir(parents=True, exist_ok=True)
    m = model_args(model)
    a, b = fasta(d / "a.fasta", 6, seed=1), fasta(d / "b.fasta", 6, seed=2, ids=[f"b{i}" for i in range(6)])
    out = d / "stdin.jsonl"
    setup(d, ["score", "-", *m, "--out", out], stdin=a.read_bytes())
    yield Case(
        "resume with another standard input",
        ["score", "-", *m, "--out", out, "--resume"],
        stdin=b.read_bytes(),
        says=("input",),
        guard=(out,),
        group="identity",
    )

    edited, out = fasta(d / "edited.fasta", 6, seed=3), d / "edited.jsonl"
    setup(d, ["score", edited, *m, "--out", out])
    text = edited.read_text().splitlines()
    text[3] = text[3][::-1] + "A"  # the sequence of s1 changes, its id stays
    edited.write_text("\n".join(text) + "\n")
    yield Case(
        "resume after the input file was edited",
        ["score", edited, *m, "--out", out, "--resume"],
        says=("input",),
        guard=(out,),
        group="identity",
    )

    folder, out = tiny_bert(d / "changing-model"), d / "weights.jsonl"
    mw, many = model_args(folder), fasta(d / "many.fasta", 40, seed=8)
    killed = held_kill(["score", many, *mw, "--out", out], rows=16)  # SIGKILL after 16 (or 32) rows
    if not killed["held"]:
        raise RuntimeError(f"set-up: the run was not held: {killed.get('error')}")
    other = tiny_bert(d / "other-weights", seed=1)
    st = (folder / "model.safetensors").stat()
    shutil.copyfile(other / "model.safetensors", folder / "model.safetensors")  # the weights change in place
    os.utime(folder / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    yield Case(
        "resume after the model folder's weights changed",
        ["score", many, *mw, "--out", out, "--resume"],
        says=("weights",),
        guard=(out,),
        group="identity",
    )
    yield from _merge_identity_cases(d, m)


def _merge_identity_cases(d: Path, m: list):
    """Merges that must check each part's meta, shard, row count and format; the input as the output."""
    inp = fasta(d / "parts.fasta", 24, seed=4)
    p32, p16 = _shards(d, inp, m, 2, "mixed", dtypes={2: "bfloat16"})
    _meta(p16).unlink()
    merged = d / "merged-nometa.jsonl"
    yield Case(
        "merge of a bfloat16 part whose meta was removed, among float32",
        ["merge", "--out", merged, p32, p16],
        says=("meta",),
        group="identity",
    )

    s1, s2, s3 = _shards(d, inp, m, 3, "third")
    _meta(s1).unlink()
    merged = d / "merged-missing.jsonl"
    yield Case(
        "merge of a part without meta, shard 3/3 missing",
        ["merge", "--out", merged, s1, s2],
        says=("meta|shard",),
        lost=lost_rows(merged, 24),
        group="identity",
    )

    for torn in (False, True):
        t1, t2 = _shards(d, inp, m, 2, f"cut{int(torn)}-")
        lines = t1.read_bytes().splitlines(keepends=True)
        t1.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2] if torn else b"".join(lines[:-2]))
        merged = d / f"merged-cut{int(torn)}.jsonl"
        what = "a torn last line" if torn else "a part cut by 2 rows"
        yield Case(
            f"merge --no-input-check of {what}",
            ["merge", "--out", merged, "--no-input-check", t1, t2],
            says=(t1.name,),
            lost=lost_rows(merged, 24),
            group="identity",
        )

    same = d / "same.jsonl"
    same.write_text(json.dumps({"id": "x", "sequence": "ACDEFGHIK"}) + "\n")
    link = d / "same-link.jsonl"
    link.symlink_to(same)
    yield Case(
        "input and output the same file (through a symlink), --resume",
        ["score", same, *m, "--out", link, "--resume"],
        says=("input",),
        guard=(same,),
        group="identity",
    )

    mixed = _shards(d, inp, m, 3, "fmt", suffixes={2: ".tsv"})
    merged = d / "merged-fmt.jsonl"
    yield Case(
        "merge of a .tsv part with .jsonl parts",
        ["merge", "--out", merged, *mixed],
        expect="any",
        check=lambda out, err: _faithful(merged, mixed[0]),
        lost=lost_rows(merged, 24),
        group="identity",
    )


def _faithful(merged: Path, jsonl_part: Path) -> str | None:
    """A problem when the merged rows differ in their keys or value types from a JSONL part's rows."""
    want = rows_of(jsonl_part)[0]
    for row in rows_of(merged):
        if set(row) != set(want):
            return f"row {row.get('id')!r} has keys {sorted(set(row) ^ set(want))} differing from a .jsonl part's"
        bad = [k for k in want if type(row[k]) is not type(want[k]) and row[k] is not None and want[k] is not None]
        if bad:
            return f"row {row.get('id')!r}: {', '.join(bad)} of another type than in a .jsonl part (e.g. text)"
    return None


def file_cases(d: Path, model: Path):
    """``--resume`` onto files mlmprob did not write, and symlinks where it writes its lock, meta and parts."""
    d.mkdir(parents=True, exist_ok=True)
    m = model_args(model)
    good = fasta(d / "good.fasta", 6, seed=5)
    foreign = d / "foreign.jsonl"
    foreign.write_bytes(b'{"name": "mine", "value": 1}\n{"name": "also mine", "value": 2}')
    yield Case(
        "--resume onto a foreign JSONL without a final newline",
        ["score", good, *m, "--out", foreign, "--resume"],
        says=("foreign.jsonl",),
        guard=(foreign,),
        group="files",
    )
    foreign = d / "foreign.tsv"
    foreign.write_text("name\tvalue\nmine\t1\n")
    yield Case(
        "--resume onto a foreign TSV",
        ["score", good, *m, "--out", foreign, "--resume"],
        says=("foreign.tsv",),
        guard=(foreign,),
        group="files",
    )
    foreign = d / "foreign.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"name": ["mine"], "value": [1]}), foreign)
    yield Case(
        "--resume onto a foreign Parquet file",
        ["score", good, *m, "--out", foreign, "--resume"],
        says=("foreign.parquet",),
        guard=(foreign, foreign.with_name(foreign.name + ".parts")),
        group="files",
    )

    for what, name in (("OUT.lock", "locked.jsonl.lock"), ("OUT.meta.json.tmp", "locked2.jsonl.meta.json.tmp")):
        victim = d / f"victim-of-{what}.txt"
        victim.write_text("a user's file, not mlmprob's\n")
        (d / name).symlink_to(victim)
        out = d / name.split(".jsonl")[0]
        yield Case(
            f"a pre-existing {what} that is a symlink",
            ["score", good, *m, "--out", f"{out}.jsonl"],
            expect="any",
            says=(LINK,),
            guard=(victim,),
            group="files",
        )

    victim = d / "victim-folder"
    victim.mkdir()
    (victim / "draft.tmp").write_text("a user's unfinished work\n")
    (victim / "notes.txt").write_text("a user's notes\n")
    out = d / "linked.parquet"
    (d / "linked.parquet.parts").symlink_to(victim)
    yield Case(
        "OUT.parts a symlink to a folder holding *.tmp files",
        ["score", good, *m, "--out", out, "--resume"],
        expect="any",
        says=(LINK,),
        guard=(victim,),
        group="files",
        check=lambda o, e: None if len(rows_of(out)) == 6 else f"{len(rows_of(out))} rows, expected 6",
    )

"""Property-based fuzzing of every CLI command with bad input (issue 14 §2).

Every generated case must end with status 0, 1 (data) or 2 (usage); a non-zero status prints exactly one
line on stderr, ``error: ...``, and never a traceback. Hypothesis runs derandomized (fixed seed), so a CI
run is reproducible; the number of cases run is printed at the end of the session (conftest).
Models are loaded once per process (a cache around ``load_mlm``) and the parser is built once, so that thousands
of cases fit in a few minutes; ``sapiens-vh`` is the small embedded model every case uses.
"""

from __future__ import annotations

import functools
import gzip
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings  # noqa: E402 - a dev dependency: never skipped
from hypothesis import strategies as st

import mlmprob.models as models  # noqa: E402
from mlmprob.cli import main  # noqa: E402

COUNT = {"cases": 0}
FUZZ = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

VH = "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSRWGGDGFYAMDYWGQGTLVTVSS"


@pytest.fixture(scope="module", autouse=True)
def cached_models():
    """Every module's ``load_mlm`` (bound at import or looked up at call time) loads each model once."""
    import sys

    original = models.load_mlm
    cached = functools.lru_cache(maxsize=8)(lambda name, device, dtype, kw: original(name, device, dtype, **dict(kw)))

    def load(name, device="auto", dtype=None, *args, **kw):
        if args:  # alphabet given positionally
            kw["alphabet"] = args[0]
        return cached(str(name), str(device), None if dtype is None else str(dtype), tuple(sorted(kw.items())))

    patched = [m for m in list(sys.modules.values()) if getattr(m, "load_mlm", None) is original]
    for m in patched:
        m.load_mlm = load
    yield
    for m in patched:
        m.load_mlm = original


@pytest.fixture(scope="module", autouse=True)
def one_parser():
    """The command line's parser built once for the module's thousands of cases (``main`` builds every command's
    parser anew on each call, about as long as a case's own work; parsing only reads it)."""
    import mlmprob.cli as cli

    original = cli.build_parser
    parser = original()
    cli.build_parser = lambda: parser
    yield
    cli.build_parser = original


def run_case(argv, capsys) -> None:
    """One CLI call: status in {0, 1, 2}; failures are one ``error:`` line and no traceback."""
    COUNT["cases"] += 1
    capsys.readouterr()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse
        code = e.code if isinstance(e.code, int) else 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, (argv, err)
    assert code in (0, 1, 2), (argv, code, err)
    if code != 0:
        lines = [x for x in err.strip().splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), (argv, err)


# -- generated bad files --------------------------------------------------------------------------
SEQ_TEXT = st.one_of(
    st.sampled_from(
        [
            "",
            VH[:30],
            VH[:30].lower(),
            "ACDXZ*",
            "AC DE",
            "\u00e9\u00e8",
            "A" * 400,
            "_" * 5,
            "EVQLV_____GGLVQ",
            "EVQLV[MASK]x3GG",
            "[MASK]x0",
            VH,
        ]
    ),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
)


@st.composite
def bad_file(draw):
    suffix = draw(st.sampled_from([".txt", ".fasta", ".csv", ".tsv", ".jsonl", ".parquet", ".fa.gz", ".bin"]))
    kind = draw(
        st.sampled_from(
            ["binary", "nul", "bom", "crlf", "empty", "header", "hugeline", "records", "badjson", "badgzip"]
        )
    )
    seqs = draw(st.lists(SEQ_TEXT, min_size=1, max_size=3))
    if kind == "binary":
        data = draw(st.binary(min_size=1, max_size=64)) + b"\xff\xfe\x00"
    elif kind == "nul":
        data = b"ACD\x00EF\n"
    elif kind == "empty":
        data = b""
    elif kind == "header":
        data = b"name,HC\n" if suffix != ".tsv" else b"name\tHC\n"
    elif kind == "hugeline":
        data = b"A" * 1_000_000 + b"\n"
    elif kind == "badjson":
        data = b'{"sequence": "ACD"\n[1, 2]\n'
    elif kind == "badgzip":
        data = b"\x1f\x8b\x08garbage"
    else:
        if suffix in (".csv", ".tsv"):
            sep = "," if suffix == ".csv" else "\t"
            body = f"name{sep}HC\n" + "".join(f"r{i}{sep}{s.replace(sep, ' ')}\n" for i, s in enumerate(seqs))
        elif suffix == ".jsonl":
            import json

            body = "".join(json.dumps({"id": f"r{i}", "sequence": s}) + "\n" for i, s in enumerate(seqs))
        elif suffix in (".fasta", ".fa.gz"):
            body = "".join(f">r{i}\n{s}\n" for i, s in enumerate(seqs))
        else:
            body = "".join(s.replace("\n", " ") + "\n" for s in seqs)
        data = body.encode()
        if kind == "bom":
            data = b"\xef\xbb\xbf" + data
        if kind == "crlf":
            data = data.replace(b"\n", b"\r\n")
        if suffix == ".fa.gz":
            data = gzip.compress(data)
    path = Path(tempfile.mkdtemp(prefix="fuzz")) / f"in{suffix}"
    path.write_bytes(data)
    return path


COLUMN = st.sampled_from([[], ["--column", "HC"], ["--column", "nope"], ["--column", "HC", "--id-column", "name"]])


@settings(FUZZ, max_examples=150)
@given(path=bad_file(), column=COLUMN, out=st.sampled_from(["", "o.jsonl", "o.tsv", "o.parquet", "o.txt"]))
def test_fuzz_score_files(path, column, out, capsys):
    argv = ["score", path, "--model", "sapiens-vh", "--no-progress", *column]
    if out:
        argv += ["--out", path.parent / out]
    run_case(argv, capsys)


@settings(FUZZ, max_examples=120)
@given(path=bad_file(), column=COLUMN, out=st.sampled_from(["o.jsonl", "dir", ""]))
def test_fuzz_sample_files(path, column, out, capsys):
    argv = [
        "sample",
        "--input",
        path,
        "--model",
        "sapiens-vh",
        "--chains",
        "1",
        "--epochs",
        "1",
        "--burn-in",
        "0",
        "--positions",
        "1-3",
        "--no-progress",
        *column,
    ]
    if out == "dir":
        argv += ["--out", path.parent / "run", "--no-plot"]
    elif out:
        argv += ["--out", path.parent / out]
    run_case(argv, capsys)


@settings(FUZZ, max_examples=120)
@given(path=bad_file(), column=COLUMN)
def test_fuzz_infill_files(path, column, capsys):
    run_case(["infill", "--input", path, "--model", "sapiens-vh", "-k", "2", "--no-progress", *column], capsys)


@settings(FUZZ, max_examples=100)
@given(path=bad_file(), column=COLUMN)
def test_fuzz_joints_files(path, column, capsys):
    run_case(
        [
            "joints",
            "--data",
            path,
            "--model",
            "sapiens-vh",
            "--n-pairs",
            "1",
            "--top-k",
            "4",
            "--ag-max-steps",
            "50",
            "--out",
            path.parent / "j",
            "--quiet",
            *column,
        ],
        capsys,
    )


# -- generated bad options ------------------------------------------------------------------------
BAD_NUMBERS = [
    "0",
    "-1",
    "-0",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e30",
    "99999999999999999999",
    "abc",
    "",
    "1.5",
    "0x10",
    "1e-400",
    " 3",
    "3,4",
]

NUMERIC = {
    "score": ["--batch-tokens", "--limit", "--workers", "--part-rows"],
    "sample": [
        "--chains",
        "--epochs",
        "--burn-in",
        "--thin",
        "--proposal-temperature",
        "--top-p",
        "--target-temperature",
        "--anneal",
        "--temperature-floor",
        "--seed",
        "--batch-tokens",
        "--block-size",
        "--tokens-per-step",
        "--steps",
        "--block-length",
        "--remask",
        "--remask-steps",
        "--threshold",
        "--max-tokens",
        "--pair-top-k",
    ],
    "infill": ["--beam-size", "--batch-tokens", "--pivot"],
    "joints": ["--n-pairs", "--top-k", "--ag-steps", "--ag-tol", "--ag-max-steps", "--max-sequences", "--seed"],
    "train": ["--steps", "--batch-size", "--lr", "--seed"],
    "demo": ["--n", "--epochs", "--seed"],
}
OTHER = {
    "score": [
        ["--shard", "0/2"],
        ["--shard", "3/2"],
        ["--shard", "x"],
        ["--devices", ""],
        ["--format", "xml"],
        ["--dtype", "int8"],
        ["--device", "gpu9"],
        ["--device", "cuda:7"],
        ["--model", "no/such/model"],
        ["--out", "/proc/nope/o.jsonl"],
        ["--out", "o.gz"],
        ["--resume"],
        ["--engine", "spark"],
    ],
    "sample": [
        ["--positions", "999"],
        ["--positions", "3,3"],
        ["--positions", "5-2"],
        ["--positions", "a-b"],
        ["--positions", ","],
        ["--method", "hmc"],
        ["--energy", "global"],
        ["--cdr", "H3", "--numbering", "chothia"],
        ["--init", "zeros"],
        ["--positions", "1", "--cdr", "H3"],
        ["--order", "r2l"],
        ["--tokens-per-step", "2"],
        ["--method", "ancestral", "--block-size", "2"],
        ["--method", "ancestral", "--init", "greedy"],
        ["--method", "ancestral", "--target-temperature", "0.5"],
        ["--method", "unmask", "--block-size", "2"],
        ["--method", "unmask", "--remask", "1.5"],
        ["--method", "adaptive", "--order", "l2r"],
        ["--steps", "3"],
        ["--method", "unmask", "--steps", "2", "--score", "entropy"],
        ["--method", "adaptive", "--threshold", "1"],
    ],
    "infill": [
        ["--method", "greedy"],
        ["--order", "r2l"],
        ["--pivot", "ZZZ"],
        ["--pivot", "-5"],
        ["--pivot", "100000"],
    ],
    "joints": [["--schemes", "diagonal"], ["--pivot", "median"], ["--shard", "2/1"]],
    "train": [["--synthetic", "ising"], ["--text", "/nonexistent.txt"]],
    "demo": [["--model", "nope"], ["--dtype", "fp8"]],
}


def _base(command: str, tmp: Path) -> list:
    seqs = tmp / "s.fasta"
    seqs.write_text(f">a\n{VH[:40]}\n")
    return {
        "score": ["score", seqs, "--model", "sapiens-vh", "--no-progress"],
        "sample": [
            "sample",
            "--seq",
            VH[:40],
            "--model",
            "sapiens-vh",
            "--chains",
            "1",
            "--epochs",
            "1",
            "--burn-in",
            "0",
            "--positions",
            "1-3",
            "--no-progress",
        ],
        "infill": ["infill", VH[:20] + "___" + VH[23:40], "--model", "sapiens-vh", "-k", "2"],
        "joints": [
            "joints",
            "--data",
            seqs,
            "--model",
            "sapiens-vh",
            "--n-pairs",
            "1",
            "--top-k",
            "4",
            "--ag-max-steps",
            "50",
            "--out",
            tmp / "j",
            "--quiet",
        ],
        "train": [
            "train",
            "--synthetic",
            "potts",
            "--steps",
            "1",
            "--out",
            tmp / "t",
            "--no-progress",
            "--vocab-size",
            "3",
            "--length",
            "4",
            "--n-train",
            "40",
            "--n-heldout",
            "8",
            "--hidden",
            "8",
            "--layers",
            "1",
            "--heads",
            "1",
            "--intermediate",
            "8",
            "--kl-sequences",
            "4",
            "--batch-size",
            "8",
        ],
        "demo": ["demo", "--model", "sapiens-vh", "--n", "0", "--epochs", "1"],
    }[command]


@settings(FUZZ, max_examples=1500)
@given(command=st.sampled_from(sorted(NUMERIC)), data=st.data())
def test_fuzz_numeric_options(command, data, capsys, tmp_path_factory):
    option = data.draw(st.sampled_from(NUMERIC[command]))
    value = data.draw(
        st.one_of(  # every one must be refused, or is a cheap valid run
            st.sampled_from(BAD_NUMBERS),
            st.integers(max_value=-1).map(str),
            st.floats(max_value=-1e-9, allow_nan=False).map(repr),
            st.text(alphabet="abxyz,;_ ", max_size=6),
        )
    )
    tmp = tmp_path_factory.mktemp("opt")
    if command in ("train", "demo") and value in ("0", "-0", "1.5", "1e-400", " 3"):
        value = "-1"  # values that may be valid would start a real training run or the whole demo
    run_case(_base(command, tmp) + [option, value], capsys)


@settings(FUZZ, max_examples=300)
@given(command=st.sampled_from(sorted(OTHER)), data=st.data())
def test_fuzz_other_options(command, data, capsys, tmp_path_factory):
    extra = data.draw(st.sampled_from(OTHER[command]))
    run_case(_base(command, tmp_path_factory.mktemp("opt")) + extra, capsys)


@settings(FUZZ, max_examples=350)
@given(data=st.data())
def test_fuzz_sequences_on_the_command_line(data, capsys):
    seq = data.draw(SEQ_TEXT)
    command = data.draw(st.sampled_from(["sample", "infill", "merge", "nosuch"]))
    if command == "sample":
        argv = [
            "sample",
            "--seq",
            seq,
            "--model",
            "sapiens-vh",
            "--chains",
            "1",
            "--epochs",
            "1",
            "--burn-in",
            "0",
            "--positions",
            "1-3",
            "--no-progress",
        ]
    elif command == "infill":
        argv = ["infill", seq, "--model", "sapiens-vh", "-k", "2"]
    elif command == "merge":
        argv = ["merge", "--out", Path(tempfile.mkdtemp()) / "m.jsonl", Path(tempfile.mkdtemp()) / (seq[:20] or "x")]
    else:
        argv = [seq or "nosuch"]
    run_case(argv, capsys)

"""The runtime layer: device/dtype choice, streamed inputs, shards, writers, locks, merge, pool, OOM back-off."""

import gzip
import json

import pytest
import torch
from conftest import OOMAbove

from mlmprob import MLMProbError, defaults
from mlmprob.runtime import device as rdev
from mlmprob.runtime.engine import chunked
from mlmprob.runtime.inputs import iter_records, read_records
from mlmprob.runtime.lock import OutputLocked, WriterLock
from mlmprob.runtime.merge import merge_parts
from mlmprob.runtime.pool import map_ordered, parse_devices
from mlmprob.runtime.shard import Shard, parse_shard
from mlmprob.runtime.writers import open_writer, read_results


# -- device and dtype -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "flags,speedup,expected",
    [
        ({"avx2", "fma"}, None, torch.float32),  # AMD EPYC without AVX-512: never bf16, not measured
        ({"avx512f", "avx512_bf16"}, 2.1, torch.bfloat16),  # native units, measured faster
        ({"amx_bf16", "amx_tile"}, 3.0, torch.bfloat16),
        ({"avx512f", "avx512_bf16"}, 1.2, torch.float32),  # native units, but not measured faster enough
        (set(), None, torch.float32),
    ],
)
def test_auto_dtype_on_cpus(monkeypatch, flags, speedup, expected):
    def measured():
        assert speedup is not None, "a CPU without native bf16 units must not be measured"
        return speedup

    monkeypatch.setattr(rdev, "cpu_flags", lambda: frozenset(flags))
    monkeypatch.setattr(rdev, "cpu_bf16_speedup", measured)
    monkeypatch.delenv("MLMPROB_DTYPE", raising=False)
    assert rdev.auto_dtype(torch.device("cpu")) == expected
    assert rdev.resolve_dtype("auto", "cpu") == expected
    monkeypatch.setenv("MLMPROB_DTYPE", "float16")  # the pin overrides auto everywhere (load_mlm too)
    assert rdev.resolve_dtype("auto", "cpu") == torch.float16


def test_the_measurement_key_is_the_same_in_every_process():
    """Workers are separate processes, each with its own string-hash salt: the key must not depend on it."""
    import subprocess
    import sys

    code = (
        "import torch; torch.set_num_threads(1); from mlmprob.runtime.device import machine_key; print(machine_key())"
    )
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:  # the two processes side by side
        keys = set(
            pool.map(
                lambda seed: subprocess.run(
                    [sys.executable, "-c", code],
                    capture_output=True,
                    text=True,
                    check=True,
                    env={**__import__("os").environ, "PYTHONHASHSEED": str(seed)},
                ).stdout.strip(),
                (1, 2),
            )
        )
    assert len(keys) == 1 and "|" in keys.pop()


def test_cpu_bf16_speedup_is_measured_once_per_machine(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls = []
    monkeypatch.setattr(
        rdev, "_matmul_seconds", lambda dtype, **k: calls.append(dtype) or (2.0 if dtype == torch.float32 else 1.0)
    )
    rdev.cpu_bf16_speedup.cache_clear()
    try:
        assert rdev.cpu_bf16_speedup() == 2.0 and len(calls) == 2
        rdev.cpu_bf16_speedup.cache_clear()  # a new process reads the stored measurement
        assert rdev.cpu_bf16_speedup() == 2.0 and len(calls) == 2
        assert (tmp_path / "mlmprob" / "cpu-dtype.json").exists()
    finally:
        rdev.cpu_bf16_speedup.cache_clear()


def test_auto_dtype_on_gpus_and_names(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert rdev.auto_dtype(torch.device("cuda")) == torch.float16  # older GPU
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert rdev.auto_dtype(torch.device("cuda")) == torch.bfloat16
    assert rdev.auto_dtype(torch.device("mps")) == torch.float32
    assert rdev.resolve_dtype("BF16") == torch.bfloat16 and rdev.resolve_dtype(None) is None
    assert rdev.resolve_dtype("int8") == torch.int8  # linear layers quantized (models/precision.py)
    with pytest.raises(MLMProbError, match="unknown dtype 'int4'"):
        rdev.resolve_dtype("int4")


def test_auto_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(rdev, "_mps_available", lambda: False)
    assert rdev.resolve_device("auto") == torch.device("cpu")
    monkeypatch.setattr(rdev, "_mps_available", lambda: True)
    assert rdev.resolve_device("auto") == torch.device("mps")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert rdev.resolve_device("auto") == torch.device("cuda")
    with pytest.raises(MLMProbError, match="unknown device"):
        rdev.resolve_device("gpu9")


def test_cli_dtype_default_comes_from_env(monkeypatch):
    monkeypatch.setenv("MLMPROB_DTYPE", "bfloat16")
    assert defaults.default_dtype_spec() == "bfloat16"
    monkeypatch.delenv("MLMPROB_DTYPE")
    assert defaults.default_dtype_spec() == "weights"  # the weights' own dtype, the same on every machine


# -- streamed inputs ------------------------------------------------------------------------------
def test_every_format_and_gzip(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    want = [("a", "ACD"), ("b", "KLM")]
    (tmp_path / "x.fasta").write_text(">a\nAC\nD\n>b\nKLM\n")
    with gzip.open(tmp_path / "x.fa.gz", "wt") as f:
        f.write(">a\nACD\n>b\nKLM\n")
    (tmp_path / "x.csv").write_text("name,seq\na,ACD\nb,KLM\n")
    (tmp_path / "x.tsv").write_text("name\tseq\r\na\tACD\r\nb\tKLM\r\n")  # CRLF
    (tmp_path / "x.jsonl").write_text('{"id": "a", "sequence": "ACD"}\n\n{"id": "b", "sequence": "KLM"}\n')
    pq.write_table(pa.table({"id": ["a", "b"], "sequence": ["ACD", "KLM"]}), tmp_path / "x.parquet")
    (tmp_path / "x.txt").write_bytes("\ufeffACD\r\nKLM\n".encode())  # BOM + CRLF
    got = lambda name, **kw: [(r.id, r.seq) for r in iter_records(tmp_path / name, **kw)]  # noqa: E731
    assert got("x.fasta") == got("x.fa.gz") == want
    assert got("x.csv", column="seq", id_column="name") == got("x.tsv", column="seq", id_column="name") == want
    assert got("x.jsonl") == got("x.parquet") == want
    assert got("x.txt") == [("line1", "ACD"), ("line2", "KLM")]


@pytest.mark.parametrize(
    "content,msg",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "not UTF-8 text"),
        (b"ACD\x00EF\n", "NUL byte"),
    ],
)
def test_binary_inputs_are_one_clear_error(tmp_path, content, msg):
    p = tmp_path / "bad.txt"
    p.write_bytes(content)
    with pytest.raises(MLMProbError, match=msg):
        read_records(p)


def test_table_and_jsonl_errors(tmp_path):
    (tmp_path / "h.csv").write_text("name,seq\n")
    assert read_records(tmp_path / "h.csv", column="seq") == []  # header only: no records
    (tmp_path / "big.csv").write_text("seq\n" + "A" * 1_000_000 + "\n")  # a 1 MB cell is fine
    assert len(read_records(tmp_path / "big.csv", column="seq")[0].seq) == 1_000_000
    (tmp_path / "x.jsonl").write_text('{"id": 1, "sequence": "AC"}\n[1, 2]\n')
    with pytest.raises(MLMProbError, match="line 2 is not a JSON object"):
        read_records(tmp_path / "x.jsonl")
    (tmp_path / "y.jsonl").write_text('{"name": "q", "aa": "AC"}\n')
    with pytest.raises(MLMProbError, match="no sequence/seq field"):
        read_records(tmp_path / "y.jsonl")
    assert [(r.id, r.seq) for r in read_records(tmp_path / "y.jsonl", column="aa")] == [("q", "AC")]
    with pytest.raises(MLMProbError, match="is a folder"):
        read_records(tmp_path)


def test_reading_is_streamed(tmp_path):
    """The reader hands out the first record without reading the rest: the tail is invalid here."""
    p = tmp_path / "x.txt"
    p.write_bytes(b"ACD\n" + b"KLM\n" * 1000 + b"\xff\xfe\n")
    it = iter_records(p)
    assert next(it).seq == "ACD"
    with pytest.raises(MLMProbError, match="line 1002 is not UTF-8"):
        list(it)


# -- shards ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_items", [0, 1, 7, 100])
@pytest.mark.parametrize("count", [1, 2, 3, 8])
def test_shards_are_disjoint_and_cover(n_items, count):
    parts = [list(Shard(i, count).take(range(n_items))) for i in range(1, count + 1)]
    flat = [x for p in parts for x in p]
    assert sorted(flat) == list(range(n_items)) and len(flat) == len(set(flat))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1  # balanced
    assert all(p == sorted(p) for p in parts)  # input order kept


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "a/b", "2", "-1/3"])
def test_bad_shard_specs(text):
    with pytest.raises(MLMProbError, match="--shard"):
        parse_shard(text)


# -- writers, locks, resume -----------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".jsonl", ".tsv", ".parquet"])
def test_writer_commits_resumes_and_is_strict_json(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"r{suffix}"
    w = open_writer(out, config={"model": "m"}, fields=("id", "x"))
    w.write([{"id": "a", "x": 1.5}, {"id": "b", "x": float("nan")}])
    w.close(complete=False)  # a run that stopped early
    with pytest.raises(MLMProbError, match="exists; pass --resume"):
        open_writer(out, config={"model": "m"}, fields=("id", "x"))
    with pytest.raises(MLMProbError, match="written with model='m'"):
        open_writer(out, resume=True, config={"model": "other"}, fields=("id", "x"))
    w = open_writer(out, resume=True, config={"model": "m"}, fields=("id", "x"))
    assert w.done_ids() == {"a", "b"}
    w.write([{"id": "c", "x": 2.0}])
    w.close(complete=True)
    rows = list(read_results(out))
    assert [r["id"] for r in rows] == ["a", "b", "c"]
    meta = json.loads((tmp_path / f"r{suffix}.meta.json").read_text(), parse_constant=_no_nan)
    assert meta["complete"] is True and meta["rows"] == 3
    if suffix == ".jsonl":
        for line in out.read_text().splitlines():
            json.loads(line, parse_constant=_no_nan)  # no NaN token anywhere
        assert json.loads(out.read_text().splitlines()[1])["x"] is None


def _no_nan(token):
    raise AssertionError(f"non-strict JSON constant {token}")


def test_jsonl_writer_drops_a_torn_line_and_refuses_damage(tmp_path):
    out = tmp_path / "r.jsonl"
    w = open_writer(out)  # mlmprob's output (its meta): a foreign one is refused
    w.write([{"id": "a"}])
    w.close(complete=False)
    out.write_text('{"id": "a"}\n{"id": "b", "x')
    w = open_writer(out, resume=True)
    assert w.done_ids() == {"a"}
    w.write([{"id": "b"}])
    w.close()
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["a", "b"]
    out.write_text('{"id": "a"}\n{"id": \n{"id": "c"}\n')
    with pytest.raises(MLMProbError, match="line 2 is damaged"):
        open_writer(out, resume=True)


def test_a_run_that_fails_before_its_first_row_leaves_nothing(tmp_path):
    out = tmp_path / "r.jsonl"
    open_writer(out).close(complete=False)
    assert list(tmp_path.iterdir()) == []
    w = open_writer(out)
    w.write([{"id": "a"}])
    w.close(complete=False)
    assert out.exists()  # rows written are kept


def test_second_writer_is_refused(tmp_path):
    out = tmp_path / "r.jsonl"
    w = open_writer(out)
    with pytest.raises(OutputLocked, match="being written by another process"):
        open_writer(out, resume=True)
    with pytest.raises(OutputLocked):
        WriterLock(out).acquire()
    w.close()
    open_writer(out, resume=True).close()  # free again once closed


def test_parquet_parts_survive_an_unfinished_run(tmp_path):
    pytest.importorskip("pyarrow")
    out = tmp_path / "r.parquet"
    w = open_writer(out)
    w.part_rows = 2
    w.write([{"id": str(i), "v": [float(i)] * i} for i in range(5)])  # parts of 2 rows are committed
    w._buf.clear()  # what a kill loses: the part in flight
    w.lock.release()
    assert not out.exists() and len(list((tmp_path / "r.parquet.parts").glob("part-*.parquet"))) == 1
    w = open_writer(out, resume=True)
    assert w.done_ids() == {str(i) for i in range(5)}
    w.close()
    assert sorted(r["id"] for r in read_results(out)) == [str(i) for i in range(5)]
    assert not (tmp_path / "r.parquet.parts").exists()


# -- merge ----------------------------------------------------------------------------------------
def _part(path, shard, ids, complete=True):
    w = open_writer(path, config={"command": "t", "shard": shard})
    w.write([{"id": i, "v": 1.0} for i in ids])
    w.close(complete=complete, shard=shard)


def test_merge_checks_shards_ids_and_input(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _part(a, "1/2", ["x", "z"])
    _part(b, "2/2", ["y"])
    expect = lambda cfg, limit: ["x", "y", "z"]  # noqa: E731
    assert merge_parts(tmp_path / "m.jsonl", [b, a], expected_ids=expect) == 3
    assert [r["id"] for r in read_results(tmp_path / "m.jsonl")] == ["x", "y", "z"]  # input order
    with pytest.raises(MLMProbError, match=r"shard\(s\) 2/2 missing"):
        merge_parts(tmp_path / "m2.jsonl", [a])
    with pytest.raises(MLMProbError, match=r"1 input id\(s\) appear in no part: 'w'"):
        merge_parts(tmp_path / "m3.jsonl", [a, b], expected_ids=lambda c, n: ["x", "y", "z", "w"])
    assert not (tmp_path / "m3.jsonl").exists()  # nothing half-merged is left
    c = tmp_path / "c.jsonl"
    _part(c, "2/2", ["y", "x"])
    with pytest.raises(MLMProbError, match=r"1 id\(s\) appear more than once.*'x'"):
        merge_parts(tmp_path / "m4.jsonl", [a, c])
    d = tmp_path / "d.jsonl"
    _part(d, "2/2", ["y"], complete=False)
    with pytest.raises(MLMProbError, match="unfinished"):
        merge_parts(tmp_path / "m5.jsonl", [a, d])


# -- pool -----------------------------------------------------------------------------------------
def _init(device):
    return {"device": device}


def _square(state, item):
    if item == -1:
        raise MLMProbError("bad item -1")
    return item * item, state["device"]


def test_pool_keeps_input_order_and_reports_errors():
    out = []
    with pytest.raises(MLMProbError, match="bad item -1"):  # one pool: spawning is slow
        for x in map_ordered(_init, _square, [*range(12), -1, 5], ["cpu", "cpu"], threads_per_worker=1):
            out.append(x)
    assert [x for x, _ in out] == [i * i for i in range(12)]
    assert list(map_ordered(_init, _square, [3], ["cpu"])) == [(9, "cpu")]
    assert parse_devices(2, None) == ["cpu", "cpu"] and list(chunked("abcde", 2)) == [list("ab"), list("cd"), ["e"]]
    with pytest.raises(MLMProbError, match="not both"):
        parse_devices(2, "cuda:0")


# -- out-of-memory back-off -----------------------------------------------------------------------
def test_oom_halves_the_sub_batch_and_loses_nothing(capsys):
    from mlmprob import LookupMLM, pll

    V, T = 3, 6
    lm = LookupMLM(V, T, seed=1)
    ids = torch.randint(0, V, (5, T), generator=torch.Generator().manual_seed(0))
    ref = pll(lm, ids)
    fake = OOMAbove(lm, 4)
    got = pll(fake, ids)
    assert torch.allclose(got, ref, atol=1e-12, rtol=0)
    ok = [c for c in fake.calls if c <= 4]
    # a record's 6 copies form its own sub-batch (batch independence): 6 -> 3, then kept small
    assert fake.calls[:2] == [6, 3] and fake.calls[1:] == ok and sum(ok) == 30
    err = capsys.readouterr().err
    assert err.count("out of memory") == 1  # reported once
    one = OOMAbove(lm, 0)
    with pytest.raises(MLMProbError, match="out of memory even for one copy"):
        pll(one, ids)

"""``mlmprob variants`` on the runtime layer, on the tiny protein-like BERT of conftest: ``merge`` checks the
ids of ``--saturate`` shards (every single mutant of the wild type, exactly once), and ``--workers 2`` writes
the rows and values of one process."""

import csv
import json

import pytest
import torch

from mlmprob.alphabet import AMINO_ACIDS
from mlmprob.cli import main
from mlmprob.runtime.writers import read_results
from mlmprob.variants.units import saturation_units

pytestmark = pytest.mark.usefixtures("one_thread")

WT = "MKTAYIAKQRQISFVKSHFS"  # 20 residues: 380 single mutants, two chunks of the command's 256


def _variants(model, *args):
    return main(["variants", *map(str, args), "--model", str(model), "--no-progress", "--device", "cpu"])


def _lines(path):
    return path.read_text().splitlines()


@pytest.fixture(scope="module")
def saturate_parts(tiny_bert_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("sat")
    parts = [d / f"part{i}.jsonl" for i in (1, 2)]
    for i, p in enumerate(parts, 1):
        assert _variants(tiny_bert_dir, "--saturate", "--wild-type", WT, "--shard", f"{i}/2", "--out", p) == 0
    return parts


def test_saturate_shards_merge_to_every_single_mutant(saturate_parts, tmp_path):
    merged = tmp_path / "all.jsonl"
    assert main(["merge", "--out", str(merged), *map(str, saturate_parts)]) == 0
    ids = [r["id"] for r in read_results(merged)]
    assert sorted(ids) == sorted(u.id for u in saturation_units(WT)) and len(ids) == 19 * len(WT)


def test_merge_names_a_saturate_row_missing_from_every_part(saturate_parts, tmp_path, capsys):
    one, two = saturate_parts
    short = tmp_path / "part2.jsonl"
    rows = _lines(two)
    dropped = json.loads(rows[3])["id"]
    short.write_text("\n".join(rows[:3] + rows[4:]) + "\n")
    (tmp_path / "part2.jsonl.meta.json").write_text((two.parent / "part2.jsonl.meta.json").read_text())
    capsys.readouterr()
    assert main(["merge", "--out", str(tmp_path / "bad.jsonl"), str(one), str(short)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: 1 input id(s) appear in no part: {dropped!r}"
    assert not (tmp_path / "bad.jsonl").exists()
    # without the input check the input is not read again, but the part's row count is still checked against
    # its metadata (issue 35: a truncated part is refused even with --no-input-check)
    assert main(["merge", "--no-input-check", "--out", str(tmp_path / "loose.jsonl"), str(one), str(short)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: part {short} holds {len(rows) - 1} rows but its run wrote "
        f"{len(rows)} (part2.jsonl.meta.json): it was truncated or changed "
        "since; rerun its shard"
    )
    assert not (tmp_path / "loose.jsonl").exists()


def test_merge_refuses_a_saturate_row_given_twice(saturate_parts, tmp_path, capsys):
    one, two = saturate_parts
    extra = tmp_path / "part2.jsonl"
    first = _lines(one)[0]
    extra.write_text(two.read_text() + first + "\n")
    (tmp_path / "part2.jsonl.meta.json").write_text((two.parent / "part2.jsonl.meta.json").read_text())
    capsys.readouterr()
    assert main(["merge", "--out", str(tmp_path / "bad.jsonl"), str(one), str(extra)]) == 2
    assert (
        capsys.readouterr().err.strip() == f"error: 1 id(s) appear more than once across the parts: "
        f"{json.loads(first)['id']!r}"
    )


def test_merge_refuses_a_saturate_row_of_another_wild_type(saturate_parts, tmp_path, capsys):
    one, two = saturate_parts
    odd = tmp_path / "part2.jsonl"
    row = json.loads(_lines(two)[0])
    row["id"] = "W999A"
    odd.write_text(two.read_text() + json.dumps(row) + "\n")
    (tmp_path / "part2.jsonl.meta.json").write_text((two.parent / "part2.jsonl.meta.json").read_text())
    capsys.readouterr()
    assert main(["merge", "--out", str(tmp_path / "bad.jsonl"), str(one), str(odd)]) == 2
    assert capsys.readouterr().err.strip() == "error: 1 id(s) in the parts are not in the input: 'W999A'"


def _random_mutants(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = set()
    while len(out) < n:
        k = int(torch.randint(1, 4, (1,), generator=g))
        sites = sorted(torch.randperm(len(WT), generator=g)[:k].tolist())
        muts = []
        for s in sites:
            alt = [c for c in AMINO_ACIDS if c != WT[s]]
            muts.append(f"{WT[s]}{s + 1}{alt[int(torch.randint(len(alt), (1,), generator=g))]}")
        out.add(":".join(muts))
    return sorted(out)


def test_two_workers_write_the_rows_and_values_of_one_process(tiny_bert_dir, tmp_path):
    inp = tmp_path / "dms.csv"
    with open(inp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mutant"])
        w.writerows([m] for m in _random_mutants(300))  # > 256 rows: both workers get a chunk
    methods = "wt_marginals,masked_marginals,masked_marginals_mt,mutant_marginals,hcb,epistasis,pll_delta"
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert _variants(tiny_bert_dir, inp, "--wild-type", WT, "--methods", methods, "--out", one) == 0
    assert _variants(tiny_bert_dir, inp, "--wild-type", WT, "--methods", methods, "--out", two, "--workers", "2") == 0
    a, b = list(read_results(one)), list(read_results(two))
    assert len(a) == 300 and [r["id"] for r in a] == [r["id"] for r in b]
    assert {r["n_mutations"] for r in a} == {1, 2, 3}
    for ra, rb in zip(a, b):
        assert {k: ra[k] for k in ("mutant", "n_mutations", "window")} == {
            k: rb[k] for k in ("mutant", "n_mutations", "window")
        }
        for m in methods.split(","):
            x, y = ra[m], rb[m]
            assert (x is None) == (y is None), (ra["id"], m)
            if x is not None:
                assert abs(x - y) <= 1e-6, (ra["id"], m, x, y)

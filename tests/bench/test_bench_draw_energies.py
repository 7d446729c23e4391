"""bench/bench_draw_energies.py on a short input: the energy pass adds one row per scored position and one call
per draw, and nothing else (the same draws)."""

import pytest

from tests.conftest import load_bench

pytestmark = pytest.mark.usefixtures("one_thread")


def test_energy_pass_adds_one_row_per_position_and_one_call(monkeypatch, capsys):
    bench = load_bench("bench_draw_energies")
    monkeypatch.setattr(bench, "SEQUENCE", "EVQLVESG")
    assert bench.main(["--methods", "ancestral,unmask", "--rounds", "1", "--chains", "1"]) == 0
    rows = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    rows = {r[0].strip(): [float(x) for x in r[1:]] for r in rows if r[0].strip() in ("ancestral", "unmask")}
    assert set(rows) == {"ancestral", "unmask"}
    for _s, _se, _ratio, fwd, fwd_e, calls, calls_e in rows.values():
        assert fwd_e == fwd + len("EVQLVESG") and calls_e == calls + 1
    assert rows["ancestral"][3] == len("EVQLVESG")  # one row per position, one at a time

"""Progress of long sampling runs (issue 50, part 3): ``mlmprob sample`` streamed (``--out x.jsonl`` or stdout) shows
a bar over every epoch of every record, moved epoch by epoch, so one record sampled for many epochs is not silent (the
bar counted records and was off for fewer than two); stdout stays the rows alone; ``--no-progress`` turns it off."""

from __future__ import annotations

import json

from bar_recorder import recording_bars

from mlmprob.cli import main

SEQ = "ACDEFGHIKL"


def _argv(model, *extra) -> list[str]:
    argv = ["sample", "--seq", SEQ, "--model", str(model), "--method", "mh", "--epochs", "3", "--burn-in", "1"]
    return [*argv, "--chains", "2", "--device", "cpu", *extra]


def test_one_streamed_record_shows_its_epochs_on_stderr(tiny_bert_dir, capsys):
    assert main(_argv(tiny_bert_dir)) == 0
    out = capsys.readouterr()
    assert [json.loads(line)["id"] for line in out.out.splitlines()] == ["seq1/chain0", "seq1/chain1"]
    assert "4/4" in out.err and "epoch" in out.err and "acc=" in out.err
    assert main(_argv(tiny_bert_dir, "--no-progress")) == 0
    quiet = capsys.readouterr()
    assert quiet.out == out.out
    assert "4/4" not in quiet.err and "acc=" not in quiet.err


def test_the_bar_moves_an_epoch_at_a_time_over_every_record(tiny_bert_dir, monkeypatch, capsys):
    bars = recording_bars(monkeypatch)
    assert main(_argv(tiny_bert_dir, "--seq", "GHIKLACDEF")) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4
    (bar,) = bars
    assert (bar.total, bar.unit) == (8, "epoch")  # 2 records x 4 epochs
    assert [n for n in bar.updates if n] == [1] * 8 and len(bar.shown) == 8 and "acc" in bar.shown[0]

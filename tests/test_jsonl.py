"""Result files read and continued after a kill: a cut last line is dropped, a damaged line is an error."""

import pytest

from mlmprob.errors import MLMProbError
from mlmprob.experiments.infill_runner import read_records
from mlmprob.jsonl import read_jsonl, trim_partial_line


def test_cut_last_line_is_skipped_and_trimmed(tmp_path):
    p = tmp_path / "r.jsonl"
    assert read_jsonl(p) == [] and trim_partial_line(p) == "" and not p.exists()
    p.write_text('{"a": 1}\n\n[2, 3]\n{"a": ')
    assert read_jsonl(p) == [{"a": 1}, [2, 3]] == read_records(p)
    assert trim_partial_line(p) == '{"a": 1}\n\n[2, 3]\n' == p.read_text()
    p.write_text('{"a": 1}\n{"a": 2}')                    # a complete last line without its newline is kept
    assert read_jsonl(p) == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize("text", ['{"a": 1}\n{"a": \n{"a": 2}\n', '{"a": 1}\n{"a": \n', 'nonsense\n'])
def test_damaged_line_is_an_error_naming_it(tmp_path, text):
    p = tmp_path / "r.jsonl"
    p.write_text(text)
    line = 1 if text.startswith("nonsense") else 2
    with pytest.raises(MLMProbError, match=f"r.jsonl line {line} is not valid JSON"):
        read_jsonl(p)


def test_command_logs_drop_a_cut_line_before_appending(tmp_path):
    from mlmprob.experiments.cdr_h3 import _append_run
    from mlmprob.experiments.cdr_h3_report import _runs

    (tmp_path / "runs.jsonl").write_text('{"command": "a"}\n{"command": "x", "wa')
    _append_run(tmp_path, {"command": "y"})
    assert _runs(tmp_path) == [{"command": "a"}, {"command": "y"}]

"""bench/precision_all.py on tiny inputs: a small random BERT saved with en-small's tokenizer loads, and
``measure`` gives one row per precision at the chosen positions (float32 against itself: zero error)."""

import pytest

from tests.conftest import load_bench

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def pa():
    return load_bench("precision_all")


def test_measure_rows_on_a_small_random_bert(pa, tmp_path):
    folder = pa.save_random_bert_base(tmp_path, sizes=(1, 32, 2, 64))
    assert folder.name == "bert-1-32-2-64" and pa.save_random_bert_base(tmp_path, sizes=(1, 32, 2, 64)) == folder
    rows = pa.measure(
        str(folder),
        ["the cat sat on the mat .", "a man is here ."],
        ["float32", "int8"],
        1,
        label="tiny",
        positions=[1, 2, 3],
    )
    assert len(rows) == 2
    f32, i8 = (r.split(" | ") for r in rows)
    assert f32[:2] == ["| tiny", "float32"] and f32[3] == "1.00" and f32[5:10] == ["0.0000"] * 3 + ["0.000"] * 2
    assert i8[1] == "int8" and 0 <= float(i8[5]) < 0.5  # a tiny random model: int8 error ~1e-5

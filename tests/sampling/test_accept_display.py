"""A sampler without an accept step shows no acceptance (issue 52, item 4): ``mlmprob sample --method ancestral``
showed ``acc=1.000`` in its bar and an "acceptance" line at 1.0 in ``trace.png``. The registry says which methods
have an accept/reject step (``Method.accepts``); the bars (streamed and folder runs) and the trace plot read it."""

from __future__ import annotations

import pytest
import torch
from bar_recorder import recording_bars
from conftest import tiny_hf

from mlmprob.cli import main
from mlmprob.sampling import sample
from mlmprob.sampling.plots import plot_traces
from mlmprob.sampling.spec import REGISTRY, method_of

pytestmark = pytest.mark.usefixtures("one_thread")
SEQ = "ACDEFGHIKL"


def test_the_registry_says_which_methods_accept():
    assert {name for name, m in REGISTRY.items() if m.accepts} == {"mh", "speculative"}
    for m in REGISTRY.values():  # every method without an accept step says why (the summary's note)
        assert m.accepts or m.no_accept, m.name
    assert method_of("gibbs").rates == "chain"  # its novelty is still a chain's


def _argv(model, method, *extra) -> list[str]:
    argv = ["sample", "--seq", SEQ, "--model", str(model), "--method", method, "--epochs", "2"]
    return [*argv, "--chains", "2", "--device", "cpu", *extra]


@pytest.mark.parametrize("method, acc", [("ancestral", False), ("gibbs", False), ("mh", True)])
def test_the_streamed_bar_shows_acceptance_only_with_an_accept_step(tiny_bert_dir, monkeypatch, capsys, method, acc):
    bars = recording_bars(monkeypatch)
    assert main(_argv(tiny_bert_dir, method)) == 0
    capsys.readouterr()
    (bar,) = bars
    shown = [s for s in bar.shown if s]
    assert shown and all(("acc" in s) == acc for s in shown)
    assert all("logp" in s for s in shown) == (method == "ancestral")  # a draw's log-probability instead


@pytest.mark.parametrize("method, acc", [("ancestral", False), ("mh", True)])
def test_the_folder_run_bar_and_summary(tiny_bert_dir, tmp_path, capsys, method, acc):
    assert main(_argv(tiny_bert_dir, method, "--out", str(tmp_path / "run"), "--no-plot")) == 0
    out = capsys.readouterr()
    assert ("acc=" in out.err) == acc and "epoch" in out.err
    summary = out.out.strip().splitlines()[-1]
    if acc:
        assert '"accept_rate": null' not in summary
    else:
        assert '"accept_rate": null' in summary and "no accept step" in summary


def _traced(monkeypatch, tmp_path, result) -> tuple[list[str], list[str], str]:
    """``plot_traces`` of ``result``: its panels' y labels, its legends' entries and its title."""
    from matplotlib.figure import Figure

    figures = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: figures.append(self))
    plot_traces(result, tmp_path / "trace.png")
    (fig,) = figures
    labels = [ax.get_ylabel() for ax in fig.axes]
    legends = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    return labels, legends, fig.get_suptitle()


@pytest.fixture(scope="module")
def bert():
    return tiny_hf("bert")


@pytest.mark.parametrize("method", ["mh", "gibbs", "ancestral", "speculative"])
def test_the_trace_plot_shows_acceptance_only_with_an_accept_step(bert, monkeypatch, tmp_path, method):
    ids = bert.encode([SEQ, SEQ]).input_ids
    r = sample(bert, ids, method=method, epochs=3, generator=torch.Generator().manual_seed(0), reference=ids)
    labels, legends, title = _traced(monkeypatch, tmp_path, r)
    assert ("acceptance" in legends) == (method in ("mh", "speculative"))
    assert ("novel transitions" in legends) == (method in ("mh", "gibbs"))
    assert ("rate" in labels) == (method != "ancestral") and "identity to reference" in labels
    if method in ("ancestral", "speculative"):  # independent draws: their log-probability, no energy target
        assert "log-probability" in labels and "energy" not in labels and title == f"{method} sampling"
    else:
        assert "E_local (target)" in legends and title == f"{method} sampling, target E_local"

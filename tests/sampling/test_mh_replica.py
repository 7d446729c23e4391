"""Replica exchange in ``sample(method="mh", temperatures=...)`` (the one engine's swap, :mod:`mlmprob.mcmc.engine`)
on a tiny exact model with incompatible conditionals: chains started at the product of the rungs' laws stay there
(the coldest rung samples the target), and the same run with a wrong swap rule (every swap accepted) leaves it;
the ladders it cannot run are refused in one line."""

import pytest
import torch
from sampling_fixtures import exact, gen
from test_mh_moves import empirical, target_law, tv, tv_bound

from mlmprob.cli import main
from mlmprob.errors import MLMProbError
from mlmprob.models.exact import all_sequences
from mlmprob.sampling import MetropolisHastings, sample

pytestmark = pytest.mark.usefixtures("one_thread")
LADDER = (1.0, 4.0)


def _start(m, n):
    """``n`` chains per rung drawn from each rung's exact law (rung-major)."""
    X = all_sequences(3, 3)
    laws = [target_law(m, {"target_temperature": t}) for t in LADDER]
    return torch.cat([X[torch.multinomial(p, n, replacement=True, generator=gen(3 + i))] for i, p in enumerate(laws)])


def test_the_coldest_rung_samples_the_target_and_swaps_happen():
    m, n = exact(3, 3, seed=4), 6000
    pi = target_law(m, {})
    steps = []
    k = MetropolisHastings(m, temperatures=LADDER)
    state, g = k.init(_start(m, n)), gen(11)
    while state.epoch < 2:  # the swap of rungs (0, 1) comes at the end of epoch 2
        state, info = k.step(state, g)
        steps.append(info)
    swaps = sum(i.swaps for i in steps if i.swaps is not None)
    assert int(swaps[0, 0]) == n and int(swaps[1, 0]) > 0.1 * n  # tried by every pair, accepted by many
    assert tv(pi, empirical(m, state.ids[:n])) < tv_bound(pi, n)
    hot = target_law(m, {"target_temperature": LADDER[1]})
    assert tv(hot, empirical(m, state.ids[n:])) < tv_bound(hot, n)
    assert tv(hot, pi) > 3 * tv_bound(pi, n)  # the rungs' laws differ: a swap rule that mixes them is seen


def test_a_wrong_swap_rule_is_caught(monkeypatch):
    """Every swap accepted: the hot rung's states reach the coldest, which leaves the target (the test above has
    power)."""
    from mlmprob.mcmc import engine

    monkeypatch.setattr(engine, "swap_log_acceptance", lambda u_cold, u_hot, t_cold, t_hot: torch.zeros_like(u_cold))
    m, n = exact(3, 3, seed=4), 6000
    r = sample(m, _start(m, n), method="mh", epochs=2, burn_in=0, temperatures=LADDER, generator=gen(11))
    assert tv(target_law(m, {}), empirical(m, r.final_ids[:n])) > tv_bound(target_law(m, {}), n)


def test_sample_takes_a_ladder_and_reports_the_targets_temperature():
    m = exact(3, 3, seed=4)
    r = sample(
        m,
        torch.zeros(6, 3, dtype=torch.long),
        method="mh",
        epochs=3,
        burn_in=1,
        temperatures=(1.0, 2.0, 3.5),
        generator=gen(1),
    )
    assert r.final_ids.shape == (6, 3) and r.target_temperature.tolist() == [1.0] * 4


BAD = [
    ({"temperatures": (2.0, 1.0)}, "temperatures must increase from the target's"),
    ({"temperatures": (1.0,)}, "temperatures must be a tuple of at least two temperatures"),
    ({"temperatures": (1.0, 2.0), "anneal": 0.1}, "give temperatures"),
    ({"temperatures": (1.0, 2.0), "target_temperature": 0.5}, "give temperatures"),
    ({"temperatures": (1.0, 2.0), "anneal": "x"}, "anneal must be a number"),  # checked before it is compared
]


@pytest.mark.parametrize("kw,message", BAD)
def test_ladders_it_cannot_run_are_refused_in_one_line(kw, message):
    with pytest.raises(MLMProbError) as e:
        sample(exact(3, 3), torch.zeros(4, 3, dtype=torch.long), method="mh", **kw)
    assert message in str(e.value) and len(str(e.value).splitlines()) == 1


def test_chains_that_cannot_form_rungs_are_refused():
    m = exact(3, 3)
    with pytest.raises(MLMProbError, match="give a multiple of 2, got 3"):
        sample(m, torch.zeros(3, 3, dtype=torch.long), method="mh", temperatures=(1.0, 2.0))
    free = torch.ones(4, 3, dtype=torch.bool)
    free[3, 0] = False
    k = MetropolisHastings(m, temperatures=(1.0, 2.0))
    with pytest.raises(MLMProbError, match="must have the same free and scored positions"):
        k.init(torch.zeros(4, 3, dtype=torch.long), free)
    free[3, 0] = True
    free[:, 2] = False
    ids = torch.zeros(4, 3, dtype=torch.long)
    ids[2, 2] = 1  # the partner of chain 0 differs at a clamped position: a swap would move it
    with pytest.raises(MLMProbError, match="the same tokens elsewhere"):
        k.init(ids, free)
    ids[2, 2], ids[2, 0] = 0, 1
    k.init(ids, free)  # partners that differ at free positions only are fine


def test_the_command_line_reads_a_ladder(capsys):
    argv = ["sample", "--seq", "EVQLVESGG", "--method", "mh", "--temperatures", "2,1", "--no-progress"]
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert "--temperatures: must increase from the target's" in err and len(err.strip().splitlines()) == 1


def test_streamed_rows_name_each_chains_rung(tmp_path):
    import json

    from tests.conftest import save_tiny_bert

    (tmp_path / "bert").mkdir()
    model = save_tiny_bert(tmp_path / "bert", init=0.5)
    out = tmp_path / "run.jsonl"
    argv = ["sample", "--seq", "EVQLVESGG", "--method", "mh", "--temperatures", "1,2.5", "--chains", "4"]
    argv += ["--epochs", "2", "--burn-in", "0", "--no-progress", "--model", str(model), "--out", str(out)]
    assert main(argv) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["temperature"] for r in rows] == [1.0, 1.0, 2.5, 2.5]
    assert all(r["temperatures"] == [1.0, 2.5] for r in rows)

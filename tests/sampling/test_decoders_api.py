"""The parallel decoders through ``sample(method="unmask" | "adaptive")``: every epoch an independent draw that
follows the enumerated law, costs per draw in the result, settings checked with one-line errors, resume."""

import math

import pytest
import torch
from sampling_fixtures import gen  # noqa: E402  (tests/ is on sys.path)

from mlmprob import LookupMLM
from mlmprob.errors import MLMProbError
from mlmprob.sampling import sample
from mlmprob.sampling.adaptive import Adaptive
from mlmprob.sampling.decoder_exact import exact_output_distribution, model_logprobs
from mlmprob.sampling.unmasking import Unmasking

pytestmark = pytest.mark.usefixtures("one_thread")

V, T = 3, 4


def tv_bound(p: torch.Tensor, n: int, delta: float = 1e-6) -> float:
    return 0.5 * float((p * (1 - p) / n).sqrt().sum()) + math.sqrt(math.log(1 / delta) / (2 * n))


def empirical(ids):
    code = (ids * (V ** torch.arange(T - 1, -1, -1))).sum(-1)
    return torch.bincount(code, minlength=V**T).double() / len(ids)


@pytest.mark.parametrize(
    "method,options,kernel",
    [
        ("unmask", dict(score="margin", steps=2, block_length=3), lambda m: Unmasking(m, "margin", 2, block_length=3)),
        (
            "unmask",
            dict(steps=2, remask=0.4, remask_steps=1),
            lambda m: Unmasking(m, "confidence", 2, remask=0.4, remask_steps=1),
        ),
        ("adaptive", dict(threshold=1.2), lambda m: Adaptive(m, threshold=1.2)),
    ],
)
def test_sample_epochs_are_independent_draws_of_the_enumerated_law(method, options, kernel):
    m = LookupMLM(V, T, seed=7)
    B, E = 2500, 4
    r = sample(m, torch.zeros(B, T, dtype=torch.long), method=method, epochs=E, generator=gen(2), **options)
    law = exact_output_distribution(kernel(m), model_logprobs(m), V, T)
    draws = r.samples.reshape(-1, T)
    assert len(draws) == B * E and r.burn_in == 0
    assert 0.5 * float((empirical(draws) - law.probs).abs().sum()) < tv_bound(law.probs, B * E)
    assert r.log_prob.shape == r.calls.shape == r.rounds.shape == (E, B)
    assert abs(float(r.calls.double().mean()) - law.calls) < 6 * float(r.calls.double().std()) / math.sqrt(B * E) + 1e-9
    first, second = empirical(r.samples[0]), empirical(r.samples[1])  # epochs do not depend on each other
    assert 0.5 * float((first - second).abs().sum()) < 2 * tv_bound(law.probs, B)


def test_costs_in_the_result():
    m = LookupMLM(V, T, seed=7)
    r = sample(m, torch.zeros(5, T, dtype=torch.long), method="unmask", steps=3, epochs=2, generator=gen(0))
    assert (r.calls == 3).all() and (r.rounds == 3).all() and r.forward_rows == 2 * 5 * 3


@pytest.mark.parametrize(
    "options,match",
    [
        (dict(method="mh", steps=3), "steps is for method='unmask'"),
        (dict(method="ancestral", threshold=0.1), "threshold is for method='adaptive'"),
        (dict(method="adaptive", remask=0.1), "remask is for method='unmask'"),
        (dict(method="unmask", score="loud"), "score must be one of"),
        (dict(method="unmask", steps=0), "steps must be a positive integer"),
        (dict(method="adaptive", threshold=-1.0), "threshold must be a number >= 0"),
    ],
)
def test_settings_that_do_not_apply_or_are_bad(options, match):
    with pytest.raises(MLMProbError, match=match):
        sample(LookupMLM(V, T), torch.zeros(2, T, dtype=torch.long), epochs=1, **options)


@pytest.mark.parametrize(
    "method,options",
    [("unmask", dict(steps=3, remask=0.3, remask_steps=1)), ("adaptive", dict(threshold=1.2, pair_top_k=2))],
)
def test_run_file_resumes_and_refuses_other_settings(tmp_path, method, options):
    from mlmprob.sampling.io import RunFile

    m = LookupMLM(V, T, seed=7)
    ids = torch.zeros(6, T, dtype=torch.long)
    kw = dict(method=method, **options)
    full = sample(m, ids, epochs=4, generator=gen(3), **kw)
    path = tmp_path / "s.jsonl"
    sample(m, ids, epochs=2, run_file=RunFile(path), generator=gen(3), **kw)
    resumed = sample(m, ids, epochs=4, run_file=RunFile(path), generator=gen(99), **kw)
    assert torch.equal(full.samples, resumed.samples) and torch.equal(full.log_prob, resumed.log_prob)
    assert torch.equal(full.calls, resumed.calls) and full.forward_rows == resumed.forward_rows
    other = dict(steps=2) if method == "unmask" else dict(threshold=0.5)
    with pytest.raises(MLMProbError, match="another"):
        sample(m, ids, epochs=4, run_file=RunFile(path), generator=gen(3), **{**kw, **other})

"""No allocation from an unchecked number (issue 35): every size option, given ``10**9`` (the largest number the
CLI's number types take), is clamped to the work or refused with one line before any tensor is made. Each case runs
``python -m mlmprob`` in a new process under a 4 GiB address-space limit above what a fresh command holds once
it has imported torch, with a time limit: it must finish (status 0) or refuse (status 2, one ``error:`` line),
never be killed, hang or print a traceback. And a nucleus of a tiny ``top_p`` keeps the top token."""

import math
import os
import resource
import subprocess
import sys
import tempfile
import time

import pytest
import torch

from mlmprob.errors import MLMProbError

BIG = "1000000000"
SEQ = "EVQLVESGGGLVQPGGSLRLSCAA"  # 24 residues
ONE = ["--seq", SEQ, "--epochs", "1", "--chains", "1"]

# case -> (command line after the model options, "runs" | the text the one error line must hold)
CASES = {
    "sample-draft-k": (["sample", *ONE, "--method", "speculative", "--draft-k", BIG], "runs"),
    "sample-remask-steps-without-remask": (
        ["sample", *ONE, "--method", "unmask", "--remask-steps", BIG],
        "remask_steps must be at most",
    ),
    "sample-remask-steps": (
        ["sample", *ONE, "--method", "unmask", "--remask", "0.5", "--remask-steps", BIG],
        "remask_steps must be at most",
    ),
    "sample-steps": (["sample", *ONE, "--method", "unmask", "--steps", BIG], "runs"),
    "sample-block-length": (["sample", *ONE, "--method", "unmask", "--block-length", BIG], "runs"),
    "sample-max-tokens": (["sample", *ONE, "--method", "adaptive", "--max-tokens", BIG, "--pair-top-k", "2"], "runs"),
    "sample-pair-top-k": (["sample", *ONE, "--method", "adaptive", "--pair-top-k", BIG], "runs"),
    "sample-iterations": (
        ["sample", *ONE, "--method", "mask-predict", "--iterations", BIG],
        "iterations must be at most",
    ),
    "sample-tokens-per-step": (["sample", *ONE, "--method", "ancestral", "--tokens-per-step", BIG], "runs"),
    "sample-block-size": (["sample", *ONE, "--block-size", BIG], "--block-size 1000000000 is larger than"),
    "sample-chains": (["sample", "--seq", SEQ, "--epochs", "1", "--chains", BIG], "1,000,000,000 chains would keep"),
    "sample-epochs": (["sample", "--seq", SEQ, "--chains", "1", "--epochs", BIG], "epochs 1,000,000,000"),
    "sample-burn-in": (["sample", *ONE, "--burn-in", BIG], "burn_in 1,000,000,000"),
    "sample-folder-chains": (
        ["sample", "--seq", SEQ, "--epochs", "1", "--chains", BIG, "--out", "{tmp}/run"],
        "1,000,000,000 chains would keep",
    ),
    "sample-workers": (["sample", *ONE, "--workers", BIG, "-o", "{tmp}/w.jsonl"], "runs"),
    "sample-batch-tokens": (["sample", *ONE, "--batch-tokens", BIG], "runs"),
    "infill-beam-size": (["infill", "EVQLV_____GGLVQ", "--beam-size", BIG], "--beam-size/-k: must be at most 10,000"),
    "score-orders": (
        ["score", "{tmp}/s.fasta", "--likelihood", "loglik", "--orders", BIG],
        "--orders: must be at most 100,000",  # the flag checks what the spec checks (argtypes.checked)
    ),
    "variants-chain-orders": (
        ["variants", "{tmp}/m.csv", "--wild-type", SEQ, "--methods", "chain", "--chain-orders", BIG],
        "--chain-orders: must be at most 100,000",  # the flag checks what the spec checks (argtypes.checked)
    ),
    "variants-n-boot": (
        [
            "variants",
            "{tmp}/m.csv",
            "--wild-type",
            SEQ,
            "--label",
            "y",
            "--evaluate",
            "--n-boot",
            BIG,
            "-o",
            "{tmp}/v.jsonl",
        ],
        "--n-boot must be at most",
    ),
    "joints-n-pairs": (
        ["joints", "--data", "{tmp}/s.fasta", "--out", "{tmp}/j", "--quiet", "--n-pairs", BIG],
        "--n-pairs: must be at most 1,000,000",
    ),
    "joints-ag-steps": (
        ["joints", "--data", "{tmp}/s.fasta", "--out", "{tmp}/j", "--quiet", "--n-pairs", "1", "--ag-steps", BIG],
        "--ag-steps: must be at most 1,000,000",
    ),
    "joints-top-k": (
        ["joints", "--data", "{tmp}/s.fasta", "--out", "{tmp}/j", "--quiet", "--n-pairs", "1", "--top-k", BIG],
        "runs",
    ),
}


_BASE: list[int] = []


def _start_bytes() -> int:
    """The address space of a fresh ``python -m mlmprob`` once torch and the command line are imported (measured
    once): the limit of a case is this plus its allowance."""
    if not _BASE:
        probe = (
            "import torch, mlmprob.cli, mlmprob.models.loading\n"
            "print([l for l in open('/proc/self/status') if l.startswith('VmSize:')][0].split()[1])"
        )
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True)
        _BASE.append(int(out.stdout.strip()) * 1024)
    return _BASE[0]


def _start_limited(argv: list[str], extra_bytes: int, stderr) -> subprocess.Popen:
    """``mlmprob argv`` started in a new process (``python -m mlmprob``, never a fork of the test process: a fork
    of a process that ran Ray or torch threads can deadlock on a lock one of them held) limited to ``extra_bytes``
    more address space than a fresh command holds, its stderr into the file ``stderr``. Called from the main
    thread only (``preexec_fn`` is not safe in a process whose other threads run Python)."""
    limit = _start_bytes() + extra_bytes

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "mlmprob", "--threads", "1", *argv],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env=env,
        preexec_fn=limited,
        start_new_session=True,
    )


class LimitedRuns:
    """The module's ``mlmprob`` processes (one per case, each under its own limits as ``run_limited`` starts it),
    run side by side, at most ``slots`` at a time: started ahead in the order of the tests, the one a test asks
    for first when it is still waiting. ``result(key)`` waits for it: ``(exit status, stderr)``, status -9 when it
    ran past its ``timeout`` (killed then). Each case is still one process with one limit and one time limit; only
    the wall time of the module is shorter."""

    def __init__(self, jobs: dict, slots: int):
        self.jobs, self.slots = jobs, max(1, slots)  # key -> (argv, extra_bytes, timeout)
        self.queue, self.running, self.done = list(jobs), {}, {}

    def _start(self, key) -> None:
        argv, extra_bytes, timeout = self.jobs[key]
        err = tempfile.TemporaryFile()
        self.running[key] = (_start_limited(argv, extra_bytes, err), err, time.monotonic() + timeout)

    def _reap(self) -> None:
        for key, (proc, err, deadline) in list(self.running.items()):
            rc = proc.poll()
            if rc is None and time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                rc = -9
            if rc is not None:
                err.seek(0)
                self.done[key] = (rc, err.read().decode(errors="replace"))
                err.close()
                del self.running[key]

    def result(self, key) -> tuple[int, str]:
        if key in self.queue:  # asked for before its turn: next
            self.queue.remove(key)
            self.queue.insert(0, key)
        while key not in self.done:
            while self.queue and len(self.running) < self.slots:
                self._start(self.queue.pop(0))
            self._reap()
            if key not in self.done:
                time.sleep(0.02)
        return self.done.pop(key)

    def close(self) -> None:
        for proc, err, _ in self.running.values():
            proc.kill()
            proc.wait()
            err.close()
        self.queue, self.running = [], {}


def run_limited(argv: list[str], extra_bytes: int = 4 << 30, timeout: float = 180.0) -> tuple[int, str]:
    """``mlmprob argv`` in a new process limited to ``extra_bytes`` more address space than a fresh command holds
    (``_start_limited``); ``(exit status, stderr)``; status -9 when it ran past ``timeout``."""
    runs = LimitedRuns({0: (argv, extra_bytes, timeout)}, 1)
    try:
        return runs.result(0)
    finally:
        runs.close()


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _case_argv(case: str, model_dir, d) -> list[str]:
    """The command line of ``case`` on the tiny model, its input files written into the folder ``d``."""
    (d / "s.fasta").write_text(f">a\n{SEQ}\n>b\n{SEQ[:-1]}S\n")
    (d / "m.csv").write_text("mutant,y\nE1A,0.1\nV2C:Q3D,0.5\nL4A:V5C:E6D,0.2\nS7A,0.9\n")
    args = [a.replace("{tmp}", str(d)) for a in CASES[case][0]]
    model = ["--model", str(model_dir), "--device", "cpu"] + (["--no-progress"] if args[0] != "joints" else [])
    return [args[0], *model, *args[1:]]


def _unmask_argv(score: str, model_dir, out) -> list[str]:
    return [
        "sample",
        "--model",
        str(model_dir),
        "--device",
        "cpu",
        "--no-progress",
        *ONE,
        "--method",
        "unmask",
        "--top-p",
        "1e-12",
        "--score",
        score,
        "-o",
        str(out),
    ]


def _collected(request, test_name: str, param: str) -> list:
    """The values of ``param`` of this module's collected tests named ``test_name``, in their order."""
    return [
        item.callspec.params[param]
        for item in request.session.items
        if getattr(item, "module", None) is request.module
        and getattr(item, "originalname", None) == test_name
        and hasattr(item, "callspec")
    ]


@pytest.fixture(scope="module")
def limited_runs(request, tiny_bert_dir, tmp_path_factory):
    """Every collected case's process of this module, started ahead, one per core (each single-threaded):
    ``(LimitedRuns, {key: its folder})``."""
    _start_bytes()  # measured once, before any case starts
    jobs, dirs = {}, {}
    for case in _collected(request, "test_a_size_option_of_a_billion_is_clamped_or_refused", "case"):
        dirs[case] = d = tmp_path_factory.mktemp(f"size-{case}")
        jobs[case] = (_case_argv(case, tiny_bert_dir, d), 4 << 30, 180.0)
    for score in _collected(request, "test_unmask_with_a_tiny_top_p_runs", "score"):
        dirs[f"unmask-{score}"] = d = tmp_path_factory.mktemp(f"unmask-{score}")
        jobs[f"unmask-{score}"] = (_unmask_argv(score, tiny_bert_dir, d / "rows.jsonl"), 4 << 30, 180.0)
    runs = LimitedRuns(jobs, _cores())
    yield runs, dirs
    runs.close()


@pytest.mark.parametrize("case", list(CASES))
def test_a_size_option_of_a_billion_is_clamped_or_refused(case, limited_runs):
    runs, _ = limited_runs
    expect = CASES[case][1]
    rc, err = runs.result(case)
    assert "Traceback" not in err, err
    if expect == "runs":
        assert rc == 0, (rc, err)
    else:
        lines = err.strip().splitlines()
        assert rc == 2 and len(lines) == 1 and lines[0].startswith("error: ") and expect in lines[0], (rc, err)


def test_remask_steps_without_remask_is_refused():
    from mlmprob.sampling.spec import SamplerSpec

    with pytest.raises(MLMProbError, match="remask_steps .5. needs remask > 0"):
        SamplerSpec(method="unmask", remask_steps=5)
    SamplerSpec(method="unmask", remask=0.1, remask_steps=5)  # with remasking: as before


def test_mask_predict_iterations_are_capped():
    from mlmprob.sampling.options import MAX_ITERATIONS
    from mlmprob.sampling.spec import SamplerSpec

    with pytest.raises(MLMProbError, match="iterations must be at most 10,000"):
        SamplerSpec(method="mask-predict", iterations=MAX_ITERATIONS + 1)
    assert SamplerSpec(method="mask-predict", iterations=MAX_ITERATIONS).iterations == MAX_ITERATIONS


def test_speculative_drafts_are_clamped_to_the_free_positions():
    from mlmprob import ExactMLM
    from mlmprob.sampling.speculative import Speculative

    m = ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))
    k = Speculative(m, order="l2r", draft_k=10**9)
    s, g = k.init(torch.zeros(2, 3, dtype=torch.long)), torch.Generator().manual_seed(0)
    while s.epoch == 0:
        s, _ = k.step(s, g)
    assert torch.allclose(s.log_prob, m.log_prob(s.ids)) and (s.tested <= 2).all()  # at most 3 drafts a round


def test_a_run_too_large_for_memory_is_refused_before_it_starts():
    from mlmprob.sampling.spec import MAX_RUN_BYTES, SamplerSpec

    spec = SamplerSpec(epochs=10**6)
    assert spec.run_bytes(100, 100) > MAX_RUN_BYTES
    with pytest.raises(MLMProbError, match="more than the 16 GiB a run may"):
        spec.check_size(100, 100)
    spec.check_size(1, 10)  # 10**6 epochs of one short chain: about 1.7 GiB, allowed


# -- a nucleus of a tiny top_p (issue 35: NaN probabilities and a traceback) ----------------------------------
def test_a_tiny_nucleus_keeps_the_top_token_and_the_scores_stay_finite():
    from mlmprob.sampling.decoders import scores
    from mlmprob.sampling.options import ProposalConfig
    from mlmprob.sampling.proposals import proposal_log_probs

    logits = torch.randn(5, 12, generator=torch.Generator().manual_seed(0))
    lp = proposal_log_probs(logits, config=ProposalConfig(top_p=1e-12))
    assert torch.equal(lp.exp(), torch.nn.functional.one_hot(logits.argmax(-1), 12).double())
    cand = lp.argmax(-1)
    for kind in ("margin", "entropy", "confidence"):
        assert torch.isfinite(scores(lp, cand, kind)).all(), kind
    assert scores(lp, cand, "margin").tolist() == [1.0] * 5


@pytest.mark.parametrize("score", ["margin", "entropy", "confidence"])
def test_unmask_with_a_tiny_top_p_runs(score, limited_runs):
    runs, dirs = limited_runs
    out = dirs[f"unmask-{score}"] / "rows.jsonl"
    rc, err = runs.result(f"unmask-{score}")
    assert rc == 0 and "Traceback" not in err, err
    import json

    row = json.loads(out.read_text().splitlines()[0])
    assert math.isfinite(row["log_prob"]) and row["log_prob"] == 0.0  # every token the only one allowed

"""The web app's server, through gradio_client: every tab's API on a tiny model, bad input shown as the
CLI's one-line message while the server keeps answering, and a bind to 127.0.0.1 only."""

import socket

import pytest

gradio = pytest.importorskip("gradio", reason="the app extra is not installed (pip install -e '.[app]')")
gradio_client = pytest.importorskip("gradio_client")

from mlmprob import load_mlm  # noqa: E402
from mlmprob.app.compute import mutant_scores, score_text  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def mlm(tiny_bert_dir, one_thread):
    return load_mlm(str(tiny_bert_dir), device="cpu", dtype="float32")


@pytest.fixture(scope="module")
def server(mlm):
    from mlmprob.app.ui import build_app, launch

    demo = build_app(mlm, model_name="tiny")
    port = free_port()
    _, url, _ = launch(demo, port=port, block=False)  # the default host: 127.0.0.1
    # a long read timeout: a cancel is answered only once the held chain's step returns, which on a loaded
    # machine can take longer than httpx's default 5 s (the test then failed with ReadTimeout, not a wrong result)
    client = gradio_client.Client(url, verbose=False, httpx_kwargs={"timeout": 120})
    yield demo, url, port, client
    demo.close()


def test_binds_to_loopback_only(server):
    demo, url, port, _ = server
    assert demo.server_name == "127.0.0.1" and url.startswith(f"http://127.0.0.1:{port}")
    # another address of this machine does not reach the app (when the machine has one)
    try:
        other = socket.gethostbyname(socket.gethostname())
    except OSError:
        other = None
    if other and not other.startswith("127."):
        with pytest.raises(OSError):
            socket.create_connection((other, port), timeout=2).close()


def test_api_endpoints(server):
    """Each tab's endpoint takes exactly the inputs its page offers, in order (what a gradio_client user
    passes by position)."""
    _, _, _, client = server
    api = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    want = {"/score": 1, "/saturate": 1, "/mutant": 2, "/infill": 3, "/sample": 10, "/design": 11, "/pair": 4}
    assert set(want) <= set(api)
    got = {name: len(api[name]["parameters"]) for name in want}
    assert got == want
    assert all(api[name]["returns"] for name in want)  # every endpoint answers something


def test_score(server, mlm):
    table, html, csv_path = server[3].predict("ACDEFGHIK\nMNPQ", api_name="/score")
    want = score_text(mlm, "ACDEFGHIK\nMNPQ").table()
    assert table["headers"] == ["id", "tokens", "PLL", "PLL per token", "E_raw", "loglik", "loglik per token"]
    assert table["data"] == want
    assert html.count("<span title=") == 13
    with open(csv_path) as fh:
        assert fh.readline().startswith("id,n_tokens,pll")


def test_mutations(server, mlm):
    _, _, _, client = server
    plot, heat, note = client.predict("ACDEFGHIK", api_name="/saturate")  # (the page state is not in the API)
    assert plot
    assert heat["headers"][:3] == ["residue", "A", "C"] and len(heat["data"]) == 9 and "9 residues" in note
    table, head = client.predict("ACDEFGHIK", "C2W:K9A", api_name="/mutant")
    want = mutant_scores(mlm, "ACDEFGHIK", "C2W:K9A").scores
    got = {r[0]: r[1] for r in table["data"]}
    assert got["hcb"] == round(want["hcb"], 4) and got["epistasis"] == round(want["epistasis"], 4)
    assert "C2W:K9A" in head and "pll_delta" in head


def test_infill_sample_pair(server):
    _, _, _, client = server
    standard, hcb, summary = client.predict("ACDEFGHIK", "4-5", 3, api_name="/infill")
    assert len(standard["data"]) == len(hcb["data"]) == 3 and len(hcb["headers"]) == 5
    assert "Native fill `EF`" in summary
    summary, plot, samples = client.predict(
        "ACDEFGHIK", "2-4", "local", 3, 2, 0, "given", "mh", "", 0, api_name="/sample"
    )
    assert summary.startswith("Epoch 3/3; acceptance rate") and len(samples["data"]) == 2 and plot
    summary, _, samples = client.predict(
        "ACDEFGHIK", "2-4", "local", 2, 2, 0, "given", "unmask", "margin", 2, api_name="/sample"
    )
    assert summary.startswith("Epoch 2/2; acceptance rate n/a") and summary.endswith("method unmask.")
    assert len(samples["data"]) == 2
    plot, table, summary = client.predict("ACDEFGHIK", 2, 5, 5, api_name="/pair")
    assert [r[0] for r in table["data"]] == ["MLM", "MRF", "MRF-logit", "HCB", "AG"] and plot
    assert "Positions 2 (holds `C`) and 5 (holds `F`)" in summary


def test_design(server):
    """The Sample tab's design section: experts with weights, constraints, the parent; each term's energy per chain
    and the sequences with the changed residues highlighted."""
    experts = {"headers": ["model", "energy (local/raw)", "weight"], "data": [["tiny", "local", 1.0]]}
    args = ("ACDEFGHIK", experts, "2-5", 2, ["deamidation"], "", "mh", 1.0, 5, 2, 0)
    summary, table, page = server[3].predict(*args, api_name="/design")
    assert "2 chain(s) of 5 steps (mh); terms tiny" in summary
    assert table["headers"][:4] == ["chain", "mutant", "mutations", "E_tiny"] and len(table["data"]) == 2
    assert page.count("<b>chain ") == 2 and all(row[2] <= 2 for row in table["data"])
    assert page.count('class="mlmprob-mut"') == sum(row[2] for row in table["data"])


@pytest.mark.parametrize(
    "args, api, message",
    [
        (("ACDZ",), "/score", "record 'seq1': has symbol 'Z' at residue 4"),
        (("ACDEFGHIK", "D2C"), "/mutant", "'D2C' states wild-type 'D' at residue 2"),
        (("ACDEFGHIK", "", 3), "/infill", "the sequence has no gap"),
        (("ACDEFGHIK", 3, 3, 5), "/pair", "two different positions"),
    ],
)
def test_bad_input_is_shown_and_the_server_stays_up(server, mlm, args, api, message):
    _, _, _, client = server
    with pytest.raises(gradio_client.exceptions.AppError, match=message):
        client.predict(*args, api_name=api)
    table, _, _ = client.predict("ACD", api_name="/score")  # still answering
    assert table["data"] == score_text(mlm, "ACD").table()


def test_a_long_sample_can_be_cancelled(server, mlm, monkeypatch):
    """The chain is held after its 16th epoch until the test has cancelled it (no race with the machine's
    speed: a fast CPU could otherwise finish all 200 epochs before the test looks)."""
    import threading
    import time

    from mlmprob.app import ui

    reached, go = threading.Event(), threading.Event()
    steps = ui.sample_steps

    def held_steps(*args, **kwargs):
        for snap in steps(*args, **kwargs):
            yield snap
            if snap.epoch == 16:
                reached.set()
                assert go.wait(60), "the test never let the chain go on"

    monkeypatch.setattr(ui, "sample_steps", held_steps)
    _, _, _, client = server
    job = client.submit("ACDEFGHIKLMNPQRST", "", "local", 200, 8, 0, "random", "mh", "", 0, api_name="/sample")
    assert reached.wait(60), "the chain did not reach epoch 16"
    t0 = time.time()
    while not job.outputs() and time.time() - t0 < 60:  # what was yielded up to the hold reaches the client
        time.sleep(0.1)
    assert job.outputs() and not job.done()
    # gradio answers a cancel once the generator's current step returns: the chain is let go on 2 s after
    # the cancel is sent (time for a loopback request to arrive; the outcome does not depend on the speed
    # of the sampler, which stays held until then)
    threading.Timer(2.0, go.set).start()
    assert job.cancel()
    t0 = time.time()
    while not job.done() and time.time() - t0 < 30:
        time.sleep(0.1)
    assert job.done() and not job.outputs()[-1][0].startswith("Epoch 200/200")
    table, _, _ = client.predict("ACD", api_name="/score")  # the model is free again
    assert table["data"] == score_text(mlm, "ACD").table()

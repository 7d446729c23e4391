"""The Gradio page of ``mlmprob app``: ``build_app(mlm)`` builds the Blocks around a loaded model. Bad input is shown as
the CLI's one-line message; the model serves one request at a time; long work shows progress and has a Stop button.
API names (``gradio_client``): ``/score``, ``/saturate``, ``/mutant``, ``/infill``, ``/sample``, ``/design``, ``/pair``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import tempfile
from dataclasses import dataclass

from ..errors import MLMProbError
from ..models.reader import reader_of
from ..sampling.spec import REGISTRY
from . import design_tab, render
from .compute import LIMITS, Limits, examples, mutant_scores, saturation_map, score_text
from .dynamics import pair_view, sample_steps
from .infilling import infill_compare

CSS = ".mlmprob-tokens span:hover{outline:1px solid #333}" + design_tab.CSS
_MUTANT_HEADERS = ["method", "score", "meaning"]
_PAIR_HEADERS = ["joint", "A-KL", "G-KL", "mass shown"]


@contextlib.contextmanager
def _shown():
    """``MLMProbError`` raised inside shown in the page (``gr.Error``)."""
    import gradio as gr

    try:
        yield
    except MLMProbError as e:
        raise gr.Error(str(e), title="error", print_exception=False) from None


def _guarded(fn):
    """``fn`` with ``MLMProbError`` shown in the page; generators too."""
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen(*args, **kwargs):
            with _shown():
                yield from fn(*args, **kwargs)

        return gen

    @functools.wraps(fn)
    def plain(*args, **kwargs):
        with _shown():
            return fn(*args, **kwargs)

    return plain


def _frame(rows, headers):
    import pandas as pd

    return pd.DataFrame(rows, columns=headers)


@dataclass(frozen=True)
class _Ctx:
    """What every tab builder needs: the model, the limits, the batch size, the examples, the queue options."""

    mlm: object
    limits: Limits
    ex: dict
    run: dict
    name: str = ""

    @staticmethod
    def buttons(gr, label: str, elem_id: str, stop_id: str | None = None) -> tuple:
        """The run button and its Stop button, side by side."""
        with gr.Row():
            return gr.Button(label, variant="primary", elem_id=elem_id), gr.Button("Stop", elem_id=stop_id)

    @staticmethod
    def ticker(progress, what: str):
        """A ``progress(done, total)`` callback moving gradio's tracker, described ``WHAT done/total``."""
        return lambda d, t: progress(d / t, desc=f"{what} {d}/{t}")

    @staticmethod
    def table(gr, label: str, elem_id: str, headers: list[str] | None = None, **options):
        """An output table (not editable)."""
        return gr.Dataframe(headers=headers, label=label, interactive=False, elem_id=elem_id, **options)

    def wire(self, buttons: tuple, fn, inputs: list, outputs: list, api: str) -> None:
        """``fn`` (errors shown in the page) on the run button, as endpoint ``api``; Stop cancels it."""
        ev = buttons[0].click(_guarded(fn), inputs, outputs, api_name=api, **self.run)
        buttons[1].click(None, cancels=[ev])


def _tab_score(gr, c: _Ctx):
    """The Score tab: PLL, E_raw and chain log-likelihood per sequence (endpoint ``score``)."""
    mlm, limits, ex = c.mlm, c.limits, c.ex

    def do_score(text, progress=gr.Progress()):  # noqa: B008 - gradio injects the tracker through this default
        progress(0, desc="scoring")
        res = score_text(mlm, text, limits=limits, progress=c.ticker(progress, "scored"))
        with tempfile.NamedTemporaryFile("w", suffix=".csv", prefix="mlmprob-scores-", delete=False) as fh:
            fh.write(res.csv())
        heads = ["id", "tokens", "PLL", "PLL per token", "E_raw", "loglik", "loglik per token"]
        return _frame(res.table(), heads), render.tokens_html(res), fh.name

    with gr.Tab("Score"):
        s_label = f"sequences or sentences: one per line, or FASTA (at most {limits.max_sequences})"
        s_in = gr.Textbox(ex["score"], lines=4, label=s_label, elem_id="score-input")
        s_go = c.buttons(gr, "Score", "score-run")
        s_label = "PLL = sum of log q(x_t | rest); E_raw = minus the sum of raw logits"
        s_table = c.table(gr, s_label, "score-table", ["id", "tokens", "PLL", "PLL per token", "E_raw"])
        s_html = gr.HTML(elem_id="score-tokens")
        s_csv = gr.File(label="CSV", elem_id="score-csv")
        c.wire(s_go, do_score, [s_in], [s_table, s_html, s_csv], "score")


def _tab_mutations(gr, c: _Ctx):
    """The Mutations tab: saturation map, mutant scores, cell clicks (endpoints ``saturate``, ``mutant``)."""
    mlm, limits, ex, run = c.mlm, c.limits, c.ex, c.run

    def do_saturate(wt, progress=gr.Progress()):  # noqa: B008 - gradio injects the tracker through this default
        progress(0, desc="saturation: one forward row per residue")
        smap = saturation_map(mlm, wt, limits=limits)
        state = {"wt": smap.wild_type, "rows": smap.row_labels(), "letters": list(smap.sat.letters)}
        note = (
            f"{len(smap.wild_type)} residues x {len(smap.sat.letters)} substitutions by masked_marginals "
            f"({smap.sat.n_forward} forward rows); red: more likely than the wild type. Click a cell."
        )
        return render.saturation_figure(smap), render.saturation_styler(smap), state, note

    def do_mutant(wt, mutant):
        ms = mutant_scores(mlm, wt, mutant, limits=limits)
        scores = ", ".join(f"{m} {ms.scores[m]:.4f}" for m in ("hcb", "pll_delta", "epistasis"))
        head = f"**{ms.mutant}** ({ms.n_sites} site{'s' if ms.n_sites > 1 else ''}): {scores}"
        return _frame(render.mutant_rows(ms), _MUTANT_HEADERS), head

    def do_cell(state, evt: gr.SelectData):
        if not state or evt.index is None:
            raise MLMProbError("run the saturation map first, then click a cell")
        row, col = evt.index
        if col == 0:
            raise MLMProbError("click a substitution cell, not the residue column")
        mutant = f"{state['rows'][row]}{state['letters'][col - 1]}"
        return *do_mutant(state["wt"], mutant), mutant

    do_cell.__annotations__["evt"] = gr.SelectData  # resolved here: gradio reads the hint to pass the click
    with gr.Tab("Mutations"):
        m_wt = gr.Textbox(ex["wt"], lines=2, label="wild type (residue letters)", elem_id="mut-wt")
        m_go = c.buttons(gr, "Saturation map", "mut-run")
        m_note = gr.Markdown(elem_id="mut-note")
        m_plot = gr.Plot(label="overview", elem_id="mut-plot")
        m_state = gr.State(None)
        m_label = "masked_marginals: log q(mt) - log q(wt), the site masked (rows: residues)"
        m_heat = c.table(gr, m_label, "mut-heatmap", max_height=420)
        with gr.Row():
            m_mut = gr.Textbox(ex["mutant"], label="mutant, e.g. A23C or A23C:D45E (1-based)", elem_id="mut-mutant")
            m_score = gr.Button("Score mutant", elem_id="mut-score")
        m_head = gr.Markdown()
        m_label = "scores by every method (higher = more likely than the wild type)"
        m_table = c.table(gr, m_label, "mut-table", _MUTANT_HEADERS)
        c.wire(m_go, do_saturate, [m_wt], [m_plot, m_heat, m_state, m_note], "saturate")
        m_score.click(_guarded(do_mutant), [m_wt, m_mut], [m_table, m_head], api_name="mutant", **run)
        m_heat.select(_guarded(do_cell), [m_state], [m_table, m_head, m_mut], api_visibility="private", **run)


def _tab_infill(gr, c: _Ctx):
    """The Infill tab: standard vs HCB beam search (endpoint ``infill``)."""
    mlm, limits, ex = c.mlm, c.limits, c.ex

    def do_infill(text, positions, beam, progress=gr.Progress()):  # noqa: B008 - gradio injects the tracker through this default
        progress(0, desc="beam search")
        tick = c.ticker(progress, "beam")
        res = infill_compare(mlm, text, positions, beam_size=int(beam), limits=limits, progress=tick)
        frames = [_frame(render.infill_rows(res, m), render.infill_headers()) for m in ("standard", "hcb")]
        return *frames, render.infill_summary(res)

    with gr.Tab("Infill"):
        i_label = "sequence with a gap: ____ (one _ per token) or [MASK]x5"
        i_in = gr.Textbox(ex["infill"], lines=2, label=i_label, elem_id="infill-input")
        with gr.Row():
            cdr = "a CDR: H1..H3, L1..L3 (IMGT, anarcism; then the native fill is known)"
            i_label = f"or the gap's positions in a complete sequence, e.g. 10-14, or {cdr}"
            i_pos = gr.Textbox(ex["infill_pos"], label=i_label, elem_id="infill-positions")
            i_beam = gr.Slider(1, limits.max_beam, value=5, step=1, label="beam size")
        i_go = c.buttons(gr, "Infill", "infill-run")
        i_sum = gr.Markdown()
        with gr.Row():
            i_std = c.table(gr, "standard beam search", "infill-standard", render.infill_headers())
            i_hcb = c.table(gr, "HCB beam search", "infill-hcb", render.infill_headers())
        c.wire(i_go, do_infill, [i_in, i_pos, i_beam], [i_std, i_hcb, i_sum], "infill")


def _tab_sample(gr, c: _Ctx):
    """The Sample tab: the chains' snapshots streamed into the summary, trace and table (endpoint ``sample``)."""
    mlm, limits, ex = c.mlm, c.limits, c.ex
    track = gr.Progress()  # gradio injects the tracker through this default

    def do_sample(text, positions, energy, epochs, chains, seed, init, method="mh", score="", steps=0, progress=track):
        epochs, every = int(epochs), max(1, int(epochs) // 25)
        how = dict(positions=positions, energy=energy, chains=int(chains), seed=int(seed), init=init, method=method)
        steps = int(steps or 0) or None
        for snap in sample_steps(mlm, text, epochs=epochs, score=score or None, steps=steps, limits=limits, **how):
            progress(snap.epoch / snap.epochs, desc=f"epoch {snap.epoch}/{snap.epochs}")
            if snap.done or snap.epoch % every == 0:
                rows = _frame(render.sample_rows(snap), ["chain", f"E_{energy}", "sequence"])
                yield render.sample_summary(snap), render.trace_figure(snap), rows

    with gr.Tab("Sample"):
        p_label = "start sequence (_ = masked, sampled too)"
        p_in = gr.Textbox(ex["sample"], lines=2, label=p_label, elem_id="sample-input")
        with gr.Row():
            p_label = "free positions, e.g. 3,5,10-12, or a CDR: H1..H3, L1..L3 (IMGT, anarcism; empty: all)"
            p_pos = gr.Textbox(ex["positions"], label=p_label, elem_id="sample-positions")
            p_energy = gr.Radio(["local", "raw"], value="local", label="target energy (E_local = -PLL, E_raw)")
            p_init = gr.Dropdown(["given", "greedy", "random"], value="given", label="start", elem_id="sample-init")
        with gr.Row():
            exact = "mh / gibbs (MCMC on the energy), ancestral / speculative (exact chain-rule draws)"
            p_label = f"method: {exact}, unmask / adaptive (parallel decoders)"
            p_method = gr.Dropdown(list(REGISTRY), value="mh", elem_id="sample-method", label=p_label)
            p_label = "unmask / adaptive: which positions go first (empty: the method's default)"
            scores = ["", "confidence", "margin", "entropy"]
            p_score = gr.Dropdown(scores, value="", elem_id="sample-score", label=p_label)
            p_steps = gr.Number(0, precision=0, label="unmask: steps per draw (0: the default)")
        with gr.Row():
            p_epochs = gr.Slider(1, limits.max_epochs, value=20, step=1, label="epochs (sweeps or draws)")
            p_chains = gr.Slider(1, limits.max_chains, value=4, step=1, label="chains")
            p_seed = gr.Number(0, precision=0, label="seed")
        p_go = c.buttons(gr, "Sample", "sample-run", "sample-stop")
        p_sum = gr.Markdown(elem_id="sample-summary")
        p_plot = gr.Plot(label="energy trace", elem_id="sample-plot")
        p_table = c.table(gr, "current samples", "sample-table", ["chain", "E", "sequence"])
        inputs = [p_in, p_pos, p_energy, p_epochs, p_chains, p_seed, p_init, p_method, p_score, p_steps]
        c.wire(p_go, do_sample, inputs, [p_sum, p_plot, p_table], "sample")
        design_tab.design_section(gr, c, _frame)


def _tab_pair(gr, c: _Ctx):
    """The Pair joint tab: the joints of two positions (endpoint ``pair``)."""
    mlm, limits, ex = c.mlm, c.limits, c.ex

    def do_pair(text, a, b, top, progress=gr.Progress()):  # noqa: B008 - gradio injects the tracker through this default
        progress(0, desc="2K + 1 forward rows")
        pv = pair_view(mlm, text, int(a), int(b), top=int(top), limits=limits)
        return render.pair_figure(pv), _frame(render.pair_rows(pv), _PAIR_HEADERS), render.pair_summary(pv)

    with gr.Tab("Pair joint"):
        j_in = gr.Textbox(ex["sample"], lines=2, label="sequence", elem_id="pair-input")
        with gr.Row():
            j_a = gr.Number(ex["a"], precision=0, label="position a")
            j_b = gr.Number(ex["b"], precision=0, label="position b")
            j_top = gr.Slider(2, limits.max_pair_top, value=10, step=1, label="top tokens shown")
        j_go = c.buttons(gr, "Pair joints", "pair-run")
        j_sum = gr.Markdown()
        j_plot = gr.Plot(label="MLM, MRF, MRF-logit, HCB and AG joints", elem_id="pair-plot")
        j_table = c.table(gr, "distance of each joint's conditionals from the MLM's", "pair-table", _PAIR_HEADERS)
        c.wire(j_go, do_pair, [j_in, j_a, j_b, j_top], [j_plot, j_table, j_sum], "pair")


def build_app(mlm, *, model_name: str | None = None, batch_tokens: int | None = None, limits: Limits = LIMITS):
    """The Gradio Blocks of the app around ``mlm`` (any masked LM with a tokenizer); ``batch_tokens``: the forward
    budget given to the model's reader (None: its own, else the device's default)."""
    import gradio as gr

    mlm = reader_of(mlm, batch_tokens)
    name = model_name or mlm.name
    run = dict(concurrency_limit=1, concurrency_id="model")
    c = _Ctx(mlm=mlm, limits=limits, ex=examples(mlm), run=run, name=name)
    with gr.Blocks(title=f"mlmprob: {name}") as demo:
        gr.Markdown(
            f"## mlmprob: looking inside a masked LM's joint\nModel **{name}**. Positions are 1-based "
            f"residue (or word) numbers, as in mutant strings. {limits.describe()}"
        )
        for build_tab in (_tab_score, _tab_mutations, _tab_infill, _tab_sample, _tab_pair):
            build_tab(gr, c)
    demo.queue(default_concurrency_limit=1)
    return demo


def launch(demo, *, host: str = "127.0.0.1", port: int = 7860, share: bool = False, block: bool = True):
    """Serve ``demo`` on ``host:port`` (127.0.0.1 unless asked); ``share`` opens a public Gradio link."""
    how = dict(server_name=host, server_port=port, share=share, prevent_thread_lock=not block, show_error=True)
    return demo.launch(**how, css=CSS, footer_links=["api"])

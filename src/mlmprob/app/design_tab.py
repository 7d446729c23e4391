"""The Sample tab's design section (gradio; endpoint ``design``), computed by :mod:`mlmprob.app.designer`."""

from __future__ import annotations

from . import designer

CSS = ".mlmprob-mut{background:#ffd54f;font-weight:bold}"


def design_section(gr, c, frame) -> None:
    """The design section inside the Sample tab (``c``: the tab context; ``frame``: the page's table builder)."""
    pool = designer.ExpertPool(c.mlm, c.name)
    limits = c.limits
    track = gr.Progress()  # gradio injects the tracker through this default

    def do_design(parent, experts, positions, max_mut, liab, forbid, method, temp, steps, chains, seed, progress=track):
        how = dict(positions=positions, max_mutations=max_mut, liabilities=liab or (), forbid=forbid, method=method)
        spec = designer.design_spec(**how, temperature=temp, steps=steps, chains=chains)
        rows = experts.values.tolist() if hasattr(experts, "values") else list(experts or [])
        tick = c.ticker(progress, "chain")
        view = designer.design_view(pool, parent, rows, spec, seed=int(seed or 0), limits=limits, progress=tick)
        table = frame(designer.design_rows(view), designer.design_headers(view))
        return designer.design_summary(view), table, designer.design_html(view)

    with gr.Accordion("Design under constraints (several experts, hard rules)", open=False):
        d_parent = gr.Textbox(c.ex["sample"], lines=2, label="parent", elem_id="design-parent")
        d_experts = gr.Dataframe(
            [[c.name, "local", 1.0]],
            headers=["model", "energy (local/raw)", "weight"],
            column_count=(3, "fixed"),
            interactive=True,
            label=f"experts, one per row (models: {', '.join(pool.choices)}; loaded when first used)",
            elem_id="design-experts",
        )
        with gr.Row():
            d_pos = gr.Textbox("", label="positions that may change, e.g. 95-102 (empty: all)", elem_id="design-pos")
            d_max = gr.Number(-1, precision=0, label="max mutations (-1: no limit)")
            d_liab = gr.CheckboxGroup(list(designer.LIABILITIES), value=[], label="forbid new liabilities")
            d_forbid = gr.Textbox("", label="other forbidden motifs (regular expressions, comma-separated)")
        with gr.Row():
            d_method = gr.Dropdown(list(designer.METHODS), value="mh", label="method (mh samples the target exactly)")
            d_temp = gr.Number(1.0, label="temperature τ")
            d_steps = gr.Slider(1, limits.max_design_steps, value=50, step=1, label="steps per chain")
            d_chains = gr.Slider(1, limits.max_chains, value=4, step=1, label="chains")
            d_seed = gr.Number(0, precision=0, label="seed (chain c: seeded by (seed, c), as mlmprob design)")
        d_go = c.buttons(gr, "Design", "design-run")
        d_sum = gr.Markdown(elem_id="design-summary")
        d_table = c.table(gr, "each term's energy per chain", "design-table")
        d_html = gr.HTML(elem_id="design-sequences")
        inputs = [d_parent, d_experts, d_pos, d_max, d_liab, d_forbid, d_method, d_temp, d_steps, d_chains, d_seed]
        c.wire(d_go, do_design, inputs, [d_sum, d_table, d_html], "design")

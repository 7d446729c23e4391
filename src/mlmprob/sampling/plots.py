"""Energy, acceptance and metric traces vs epoch as a PNG (matplotlib's Agg canvas; the global
backend is left alone)."""

from __future__ import annotations

from pathlib import Path

import torch

from .api import SampleResult


def plot_traces(result: SampleResult, path: str | Path, title: str = "") -> Path:
    """Write a PNG with a panel per trace there is: mean energies (``E_local``, ``E_raw``) with the chains' spread
    (when the states were scored), the independent draws' log-probabilities, the rates (acceptance for a method with
    an accept step, novel transitions for a Markov chain), and the identity metric when present."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .spec import method_of

    info = method_of(result.method)
    x = torch.arange(result.seconds.shape[0]).numpy()
    scored = result.energy_local is not None
    shown = (("acceptance", result.accept, info.accepts), ("novel transitions", result.novel, info.rates == "chain"))
    rates = [(name, trace) for name, trace, show in shown if show]
    panels = scored + (result.log_prob is not None) + bool(rates) + (result.identity is not None)
    fig = Figure(figsize=(6.4, 2.4 * max(panels, 1)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = list(fig.subplots(panels, 1, sharex=True)) if panels > 1 else [fig.subplots(1, 1)]
    free = iter(axes)
    for trace, name, color in (
        (result.energy_local, "E_local", "tab:blue"),
        (result.energy_raw, "E_raw", "tab:red"),
        (result.log_prob, "log p of the draw", "tab:purple"),
    ):
        if trace is None:
            continue
        ax = axes[0] if name == "E_raw" else next(free)  # E_raw beside E_local
        target = name.endswith(result.energy_kind) and not info.draws  # independent draws have no energy target
        mean, sd = trace.mean(1).numpy(), trace.std(1, unbiased=False).numpy()
        ax.plot(x, mean, color=color, label=name + (" (target)" if target else ""))
        ax.fill_between(x, mean - sd, mean + sd, color=color, alpha=0.15, linewidth=0)
        ax.set_ylabel("energy" if name.startswith("E_") else "log-probability")
        ax.legend(fontsize="small")
    if rates:
        ax = next(free)
        for name, trace in rates:
            ax.plot(x, trace.mean(1).numpy(), label=name)
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("rate")
        ax.legend(fontsize="small")
    if result.identity is not None:
        ax = next(free)
        ax.plot(x, result.identity.mean(1).numpy(), color="tab:green")
        ax.set_ylabel("identity to reference")
    for a in axes:
        if result.burn_in:
            a.axvline(result.burn_in - 0.5, color="grey", linestyle=":", linewidth=1)
    axes[-1].set_xlabel("epoch")
    shown_target = "" if info.draws else f", target E_{result.energy_kind}"
    fig.suptitle(title or f"{result.method} sampling{shown_target}", fontsize="medium")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path

"""Energy, acceptance and metric traces vs epoch as a PNG (matplotlib's Agg canvas; the global
backend is left alone)."""

from __future__ import annotations

from pathlib import Path

import torch

from .api import SampleResult


def plot_traces(result: SampleResult, path: str | Path, title: str = "") -> Path:
    """Write a PNG with up to three panels: mean energies (``E_local``, ``E_raw``) with the chains' spread (when
    the states were scored), acceptance and novel-transition rates, and the identity metric when present."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    E = result.seconds.shape[0]
    x = torch.arange(E).numpy()
    scored = result.energy_local is not None
    panels = 1 + scored + (result.identity is not None)
    fig = Figure(figsize=(6.4, 2.4 * panels), layout="constrained")
    FigureCanvasAgg(fig)
    axes = list(fig.subplots(panels, 1, sharex=True)) if panels > 1 else [fig.subplots(1, 1)]
    if scored:
        ax = axes[0]
        for trace, name, color in (
            (result.energy_local, "E_local", "tab:blue"),
            (result.energy_raw, "E_raw", "tab:red"),
        ):
            assert trace is not None  # scored: both energies were recorded
            mean, sd = trace.mean(1).numpy(), trace.std(1, unbiased=False).numpy()
            ax.plot(x, mean, color=color, label=name + (" (target)" if name.endswith(result.energy_kind) else ""))
            ax.fill_between(x, mean - sd, mean + sd, color=color, alpha=0.15, linewidth=0)
        ax.set_ylabel("energy")
        ax.legend(fontsize="small")
    ax = axes[int(scored)]
    ax.plot(x, result.accept.mean(1).numpy(), label="acceptance")
    ax.plot(x, result.novel.mean(1).numpy(), label="novel transitions")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("rate")
    ax.legend(fontsize="small")
    if result.identity is not None:
        axes[-1].plot(x, result.identity.mean(1).numpy(), color="tab:green")
        axes[-1].set_ylabel("identity to reference")
    for a in axes:
        if result.burn_in:
            a.axvline(result.burn_in - 0.5, color="grey", linestyle=":", linewidth=1)
    axes[-1].set_xlabel("epoch")
    fig.suptitle(title or f"{result.method} sampling, target E_{result.energy_kind}", fontsize="medium")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path

"""Loss curve PNG of a training run (matplotlib's Agg canvas; the global backend is left alone)."""

from __future__ import annotations

from pathlib import Path


def plot_loss_curve(train_losses: list[float], history: list[dict], path: str | Path, title: str = "") -> Path:
    """Train loss per step (and its running mean), held-out loss and, when present, the held-out loss
    of the true conditionals (the floor) and the exact KL of the model's conditionals to the truth."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    has_kl = any(h.get("kl") is not None for h in history)
    fig = Figure(figsize=(6.4, 3.0 * (1 + has_kl)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1 + has_kl, 1, sharex=True, squeeze=False)[:, 0]
    ax = axes[0]
    y = np.asarray(train_losses, dtype=float)
    x = np.arange(1, len(y) + 1)
    w = len(y) // 50
    ax.plot(x, y, color="tab:blue", alpha=0.25 if w > 1 else 1.0, linewidth=0.8, label="train (per step)")
    if w > 1:
        smooth = np.convolve(y, np.ones(w) / w, mode="valid")
        ax.plot(x[w - 1 :], smooth, color="tab:blue", label=f"train (mean of {w})")
    for key, style, color, label in (
        ("heldout_loss", "o-", "tab:orange", "held-out"),
        ("heldout_floor", "--", "gray", "held-out, true conditionals"),
    ):
        ev = [h for h in history if h.get("heldout_loss") is not None and h.get(key) is not None]
        if ev:
            ax.plot([h["step"] for h in ev], [h[key] for h in ev], style, color=color, label=label)
    ax.set_ylabel("masked-token cross-entropy (nats)")
    ax.legend(fontsize="small")
    if has_kl:
        kl = [h for h in history if h.get("kl") is not None]
        axes[1].plot([h["step"] for h in kl], [h["kl"] for h in kl], "o-", color="tab:green")
        vals = [h["kl"] for h in kl]
        if min(vals) > 0 and max(vals) > 10 * min(vals):
            axes[1].set_yscale("log")
        axes[1].set_ylabel("KL(true || model), single-site")
    axes[-1].set_xlabel("step")
    if title:
        fig.suptitle(title)
    path = Path(path)
    fig.savefig(path, dpi=110)
    return path

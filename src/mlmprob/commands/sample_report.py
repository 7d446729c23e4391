"""``mlmprob sample``'s folder report: ``samples.fasta`` (the kept states) and ``summary.json`` (the run's
diagnostics, what the method adds, and why a diagnostic is missing)."""

from __future__ import annotations

import math
from pathlib import Path


def write_fasta(path: Path, result, names: list[str], reps: int, mlm) -> None:
    """The kept states, one FASTA entry per chain and kept epoch; the header names the input, chain, epoch,
    both energies and, for ancestral draws, the draw's log-probability along its order."""
    e_local, e_raw, log_prob = result.energy_local, result.energy_raw, result.log_prob
    with path.open("w") as f:
        for s_idx, epoch in enumerate(result.kept_epochs.tolist()):
            for b in range(result.samples.shape[1]):
                lp = "" if log_prob is None else f" log_prob={float(log_prob[epoch, b]):.4f}"
                e = "" if e_local is None else f" e_local={e_local[epoch, b]:.4f} e_raw={e_raw[epoch, b]:.4f}"
                head = f">{names[b // reps]} chain={b % reps} epoch={epoch}{e}{lp}"
                f.write(f"{head}\n{mlm.decode(result.samples[s_idx, b])}\n")


def summary_of(result, spec) -> dict:
    """``summary.json``: the run's diagnostics, then what the method adds (its registry entry's ``summary``: for
    independent draws their own settings, the mean log-probability of the kept draws and of the last epoch's, and
    what a draw cost), then why a diagnostic is missing."""
    info, r = spec.info, result
    summary = {"method": r.method, "energy": r.energy_kind, "chains": int(r.free.shape[0])}
    summary.update(epochs=int(r.seconds.shape[0]), burn_in=r.burn_in)
    summary.update(accept_rate=None if info.rates is None else r.accept_rate)
    summary.update(novel_rate=r.novel_rate if info.rates == "chain" else None)
    summary.update(ess=r.ess, rhat=r.rhat, forward_rows=r.forward_rows, proposals=r.proposals)
    summary.update(final_energy_mean=None if r.energy is None else float(r.energy[-1].mean()))
    summary.update(final_identity_mean=None if r.identity is None else float(r.identity[-1].mean()))
    summary.update(info.summary(result, spec) if info.summary else {})
    summary.update(diagnostic_notes(result, info))
    return summary


def diagnostic_notes(result, info) -> dict:
    """Why a diagnostic is missing (written as null): ``{"ess_note": ...}`` and the like (``info``: the method's
    registry entry)."""
    kept = len(result.kept_epochs)
    notes = {}
    for key in ("ess", "rhat"):
        if result.energy is None:
            notes[f"{key}_note"] = "the draws were not scored (give --energies)"
        elif not math.isfinite(getattr(result, key)):
            few = f"needs >= 4 kept epochs, got {kept}"
            notes[f"{key}_note"] = few if kept < 4 else "the kept energy trace has no variance (or is not finite)"
    for key in ("accept_rate", "novel_rate"):
        if info.rates is None:
            notes[f"{key}_note"] = info.no_accept
        elif info.rates == "drafts" and key == "novel_rate":
            notes[f"{key}_note"] = f"{info.name} drafts fill masked positions: see accept_rate (the drafts')"
        elif info.rates == "drafts" and not math.isfinite(result.accept_rate):
            notes[f"{key}_note"] = "no draft was tested after burn-in (--draft-k 1, or one position per round)"
        elif not math.isfinite(getattr(result, key)):
            notes[f"{key}_note"] = "no proposals after burn-in"
    return notes

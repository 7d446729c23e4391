"""The mlmprob side of the bench, in one function: :func:`run_mlmprob` runs ``mlmprob.design``'s MH kernel on the
design target until it has read a budget of model rows, keeping every step's states.

The bench plugs mlmprob in here only; everything else (targets, budgets, metrics) is tool-neutral.
"""

from __future__ import annotations

import time

import torch


def design_target(terms, parent: str, **spec):
    """mlmprob's design target (``mlmprob.designing.build_target``) of ``terms`` around ``parent`` with the
    constraints and temperature of ``spec`` (``DesignSpec`` fields); returns ``(target, spec)``."""
    from mlmprob.designing import DesignSpec, build_target

    s = DesignSpec.of(None, **spec)
    return build_target(terms, parent, s), s


def run_mlmprob(terms, parent: str, chains: int, budget_rows: int, seed: int, max_steps: int = 100_000, **spec):
    """``chains`` MH chains from ``parent`` on mlmprob's design target until the experts have read
    ``budget_rows`` single-site rows (each a masked sequence through the model) or ``max_steps``.

    Returns ``(history, info)``: ``history[t]`` the chains' residue strings after step ``t``, and ``info`` with
    the rows read, oracle calls, steps, acceptance and wall seconds (the target's enumeration is not counted)."""
    target, s = design_target(terms, parent, chains=chains, **spec)
    kernel = s.kernel(target)
    g = torch.Generator().manual_seed(seed)
    t0 = time.perf_counter()
    state = kernel.init(target.parent_ids.expand(chains, -1).clone(), torch.tensor(s.temperature, dtype=torch.float64))
    history, moved, took = [], 0, 0
    while target.model_rows < budget_rows and len(history) < max_steps:
        state, info = kernel.step(state, g)
        moved += int(info.changed.sum())
        took += int(info.accepted.sum())
        history.append(target.decode(state.X))
    info = {
        "model_rows": target.model_rows,
        "oracle_calls": target.oracle_calls,
        "steps": len(history),
        "acceptance": took / moved if moved else 0.0,
        "acceptance_all": took / (chains * len(history)) if history else 0.0,
        "wall_s": time.perf_counter() - t0,
    }
    return history, info


def run_mlmprob_method(terms, parent: str, chains: int, steps: int, seed: int, **spec):
    """``steps`` steps of ``mlmprob.design``'s ``spec.method`` (``anneal``: the schedule over these steps;
    ``replica``: ``chains`` chains per temperature, swapping) from ``parent``, by ``run_design``.

    Returns ``(history, info)`` as :func:`run_mlmprob`, ``history`` holding the chains at the target temperature
    (the coldest rung of replica exchange; every chain of annealing) and ``info["rungs"]`` the per-temperature
    acceptance and swap rates."""
    from mlmprob.designing.api import run_design

    target, s = design_target(terms, parent, chains=chains, steps=steps, **spec)
    g = torch.Generator().manual_seed(seed)
    history: list[list[str]] = []

    def keep(t, state, info) -> None:
        history.append(target.decode(state.X[:chains]))

    t0 = time.perf_counter()
    result = run_design(target, s, g, keep)
    rungs = result.stats["temperatures"]
    info = {
        "model_rows": target.model_rows,
        "oracle_calls": target.oracle_calls,
        "steps": len(history),
        "acceptance": rungs[0]["acceptance"],
        "rungs": rungs,
        "wall_s": time.perf_counter() - t0,
    }
    return history, info

"""A stand-in for the runner's progress bar (``mlmprob.runtime.engine.progress_bar``) that records its total, every
update and every postfix, for the tests of progress (design and sample)."""

from __future__ import annotations


def recording_bars(monkeypatch) -> list:
    """Replace the runner's bar by a recorder; returns the list every bar made is appended to."""
    from mlmprob.runtime import engine

    made: list = []

    class Recorder:
        def __init__(self, total, unit, desc=None, disable=False):
            self.total, self.unit, self.disable, self.updates, self.shown = total, unit, disable, [], []
            made.append(self)

        def update(self, n):
            self.updates.append(n)

        def set_postfix(self, shown, refresh=True):
            self.shown.append(dict(shown))

        def close(self):
            pass

    monkeypatch.setattr(engine, "progress_bar", Recorder)
    return made

"""A run held at a known point, for tests and for people who study a run's crash behaviour.

A test that kills a run "after some rows" must not race the run: on a fast machine the run may finish
before the test looks, on a slow one the test may give up first. With ``MLMPROB_HOLD=ROWS:WFD:RFD`` in
its environment, a run stops once its writer has *committed* (flushed and ``fsync``-ed, or renamed into
place for Parquet parts) at least ``ROWS`` rows: it writes one line ``held PID ROWS`` to file descriptor
``WFD`` and then reads file descriptor ``RFD`` until end of file, so it goes on when the controller closes
(or writes to and closes) its end. Both descriptors are the ends of pipes that the controller made and
passed down (``subprocess.Popen(..., pass_fds=...)``, or a fork). The controller knows exactly what the
output holds while the run waits; a SIGKILL there is a kill at a known row. When the controller dies,
its ends close and the run continues: a held run never hangs for ever.

Nothing happens without the variable; a malformed value is an error naming it.

>>> import os
>>> r_held, w_held = os.pipe(); r_go, w_go = os.pipe()
>>> os.environ[HOLD_ENV] = f"2:{w_held}:{r_go}"
>>> hold_at(1)                      # fewer rows than asked: goes on at once
>>> os.close(w_go)                  # let it go on as soon as it is held
>>> hold_at(3)
>>> os.read(r_held, 100).decode().split()[::2]
['held', '3']
>>> hold_at(4)                      # a run is held once
>>> del os.environ[HOLD_ENV]; os.close(r_held)
"""

from __future__ import annotations

import os

from ..errors import MLMProbError

HOLD_ENV = "MLMPROB_HOLD"
_held: set[str] = set()


def _spec() -> tuple[int, int, int] | None:
    value = os.environ.get(HOLD_ENV)
    if not value:
        return None
    try:
        rows, wfd, rfd = (int(x) for x in value.split(":"))
    except ValueError:
        raise MLMProbError(f"${HOLD_ENV}={value!r}: give ROWS:WFD:RFD (three integers)") from None
    return rows, wfd, rfd


def hold_at(committed: int) -> None:
    """Called by the writers after every commit with the rows this run has committed so far."""
    spec = _spec()
    if spec is None or committed < spec[0] or os.environ[HOLD_ENV] in _held:
        return
    _held.add(os.environ[HOLD_ENV])
    rows, wfd, rfd = spec
    try:
        os.write(wfd, f"held {os.getpid()} {committed}\n".encode())
        os.close(wfd)
    except OSError:
        return          # the controller is gone: go on
    try:
        while os.read(rfd, 4096):
            pass
    except OSError:
        pass
    finally:
        try:
            os.close(rfd)
        except OSError:
            pass

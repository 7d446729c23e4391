"""``python -m mlmprob``: the same as the ``mlmprob`` command."""

from .cli import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

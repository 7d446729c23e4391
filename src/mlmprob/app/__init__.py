"""``mlmprob app``: a local web app (Gradio) to look inside a masked LM's joint.

- ``compute``: one pure function per tab over the public API, returning typed results (no gradio); the
  Infill tab's in ``infilling``, the Sample and Pair-joint tabs' in ``dynamics``, each tab's examples in
  ``examples``;
- ``render``: HTML, tables and matplotlib figures of those results (no gradio);
- ``ui``: the Gradio Blocks (``build_app(mlm)``); gradio is imported only there, and only when the
  app is built, so the core install works without it (``pip install -e ".[app]"`` adds it).
"""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "LIMITS": ".compute",
        "Limits": ".compute",
    },
)

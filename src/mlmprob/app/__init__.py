"""``mlmprob app``: a local web app (Gradio) to look inside a masked LM's joint. ``compute``, ``infilling``,
``dynamics`` and ``designer``: one pure function per tab over the public API (no gradio); ``render``: HTML, tables
and figures of their results; ``ui`` and ``design_tab``: the Gradio page, imported only when the app is built.
"""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "LIMITS": ".compute",
        "Limits": ".compute",
    },
)

"""``mlmprob app``: a local web app (Gradio) to look inside a masked LM's joint. ``compute``, ``infilling``,
``dynamics`` and ``designer``: the tabs' computations (no gradio); ``render``: their HTML, tables and figures; ``ui``:
the page."""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(__name__, {"LIMITS": ".compute", "Limits": ".compute"})

"""``mlmprob app``: a local web app (Gradio) to look inside a masked LM's joint: Score, Mutations, Infill, Sample and
Pair-joint tabs over the Python API. Needs the optional extra: ``pip install -e ".[app]"``. Serves on 127.0.0.1 (this
machine only) unless ``--host`` says otherwise; ``--share`` opens a public Gradio link only when asked."""

from __future__ import annotations

import argparse
import sys

from ..argtypes import integer
from ..errors import MLMProbError
from .common import add_model_args, load_model_from_args

INSTALL_HINT = 'the web app needs gradio, which is not installed: pip install -e ".[app]"'


def port_number(text: str) -> int:
    """A TCP port, 1..65535."""
    n = integer(text)
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number in 1..65535, got {text!r}")
    return n


def register(sub) -> None:
    short = "a local web app (Gradio): scores, mutations, infilling, sampling, pair joints"
    p = sub.add_parser("app", help=short, description=__doc__)
    add_model_args(p)
    p.add_argument("--port", type=port_number, default=7860, help="port to serve on")
    host = "address to bind (127.0.0.1: this machine only; 0.0.0.0 exposes the app to the network)"
    p.add_argument("--host", default="127.0.0.1", help=host)
    p.add_argument("--share", action="store_true", help="also open a public *.gradio.live link (off by default)")
    p.set_defaults(func=run)


def run(args) -> int:
    try:  # before the model loads: a missing extra is reported at once, in one line
        import gradio  # noqa: F401
    except ImportError:
        raise MLMProbError(INSTALL_HINT) from None
    from ..app.ui import build_app, launch

    mlm = load_model_from_args(args)
    demo = build_app(mlm, model_name=args.model, batch_tokens=mlm.batch_tokens)
    where = "a public share link too" if args.share else f"http://{args.host}:{args.port}"
    print(f"mlmprob app: {args.model} on {where} (Ctrl+C stops it)", file=sys.stderr)
    launch(demo, host=args.host, port=args.port, share=args.share, block=True)
    return 0

"""The chain-rule likelihood of an MLM: ``loglik`` over one or many orders of the scored positions (``orders`` plans
them; ``chain`` reads them through the one forward primitive; ``spec``: the settings, :class:`LoglikSpec`)."""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "LogLik": ".chain",
        "loglik": ".chain",
        "read_steps": ".chain",
        "ORDER_KINDS": ".orders",
        "OrderPlan": ".orders",
        "plan_orders": ".orders",
        "units_of": ".orders",
        "LoglikSpec": ".spec",
    },
)

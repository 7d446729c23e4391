"""The chain-rule likelihood of an MLM: ``loglik`` over one or many orders of the scored positions
(``orders`` plans them; ``chain`` reads them through the one forward primitive; ``spec``: the settings,
:class:`LoglikSpec`)."""

from ..lazy import exports

__getattr__, __dir__ = exports(
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

__all__ = ["LogLik", "loglik", "read_steps", "ORDER_KINDS", "OrderPlan", "plan_orders", "units_of", "LoglikSpec"]

"""The chain-rule likelihood of an MLM: ``loglik`` over one or many orders of the scored positions
(``orders`` plans them; ``chain`` reads them through the one forward primitive; ``spec``: the settings,
:class:`LoglikSpec`)."""

from .chain import LogLik, loglik, read_steps
from .orders import ORDER_KINDS, OrderPlan, plan_orders, units_of
from .spec import LoglikSpec

__all__ = ["LogLik", "loglik", "read_steps", "ORDER_KINDS", "OrderPlan", "plan_orders", "units_of", "LoglikSpec"]

"""Analytical side of cnsim: fairness allocations and the BCN fluid model of seed 002.

See ``docs/model.md``. Everything here is pure Python (numpy/scipy) and needs no engine build.
"""

from .allocations import (
    bcn_equilibrium,
    jain_index,
    max_min_fair,
    parking_lot_ratio,
    proportional_fair,
    utility_max,
)
from .fluid import (
    FluidResult,
    MeanFieldResult,
    closed_form_rates,
    convergence_rate,
    equilibrium_negative_fraction,
    feedback_delay,
    lyapunov,
    settling_time,
    simulate_queues,
    solve_mean_field,
)
from .params import BcnParams, normalised_gains
from .topology import Topology, describe_ir, parking_lot, single_bottleneck

__all__ = [
    "BcnParams",
    "FluidResult",
    "MeanFieldResult",
    "Topology",
    "bcn_equilibrium",
    "closed_form_rates",
    "convergence_rate",
    "describe_ir",
    "equilibrium_negative_fraction",
    "feedback_delay",
    "jain_index",
    "lyapunov",
    "max_min_fair",
    "normalised_gains",
    "parking_lot",
    "parking_lot_ratio",
    "proportional_fair",
    "settling_time",
    "simulate_queues",
    "single_bottleneck",
    "solve_mean_field",
    "utility_max",
]

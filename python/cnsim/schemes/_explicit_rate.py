"""Switch parameters shared by Jain's explicit-rate schemes ``becn`` and ``fecn`` (model reference §5.1–§5.3).

Both schemes run the same per-egress-port computation (``crates/cnsim-core/src/cm/explicit_rate.rs``):
every interval T, a load factor against the queue-adjusted target f(q)·Ci and a new advertised rate.
:class:`SwitchFields` holds those parameters once; each scheme's ``Params`` inherits them with its
own defaults, and :func:`switch_ir` writes the ``switch`` object of the IR.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cnsim.scenario.quantities import Duration, Size


class SwitchFields(BaseModel):
    """The per-port explicit-rate computation (model reference §5.3); defaults are overridden per scheme."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True, allow_inf_nan=False)

    interval: Duration = Field(description="switch measurement interval T (also the FECN probe interval)")
    qeq: Size = Field(24_000, description="queue equilibrium Qeq (375 pages = 24KB, every seed)")
    a: float = Field(description="hyperbolic f(q): f(0) = a (> 1 lets the queue fill to Qeq)")
    b: float = Field(description="hyperbolic f(q): decay above Qeq, f(q) = b·Qeq/((b−1)·q + Qeq) (>= 1)")
    c: float = Field(description="hyperbolic f(q): floor above Qeq (0 < c <= 1)")
    beta: float = Field(
        0.5,
        ge=0,
        lt=1,
        description="exponential-averaging weight of the previous rate "
        "(not printed in the seeds; the FECN paper default 0.5)",
    )
    n0: int = Field(
        description="start-up divider: new ports / idle ports advertise C0/N0, FECN rate limiters "
        "start at line/N0 (1 = not used)",
        ge=1,
        le=1_000_000,
    )
    limit_increase: bool = Field(
        False,
        description="limit the per-interval rate increase ([PROPOSED] routine, "
        "model reference §5.3; off: no evidence for its rule, §12 F1)",
    )
    capacity_estimation: bool = Field(
        True,
        description="estimate the capacity as bits sent / busy time "
        "([PROPOSED] routine, floor C0/N0; with n0 = 1 it never moves from C0)",
    )
    variable_capacity: bool = Field(
        True,
        description="re-scale the rate history when the estimated capacity "
        "changes ([PROPOSED] routine, model reference §5.3)",
    )

    @model_validator(mode="after")
    def _shape(self):
        if not self.a >= 1:
            raise ValueError(f"a must be >= 1 (f(0) = a), got {self.a}")
        if not self.b >= 1:
            raise ValueError(f"b must be >= 1, got {self.b}")
        if not 0 < self.c <= 1:
            raise ValueError(f"c must be in (0, 1], got {self.c}")
        return self


def switch_ir(p: SwitchFields) -> dict[str, Any]:
    """The ``switch`` object of the IR (``explicit_rate::SwitchParams``), base units."""
    return {
        "interval_ps": p.interval,
        "qeq_bytes": float(p.qeq),
        "a": p.a,
        "b": p.b,
        "c": p.c,
        "beta": p.beta,
        "n0": float(p.n0),
        "limit_increase": p.limit_increase,
        "capacity_estimation": p.capacity_estimation,
        "variable_capacity": p.variable_capacity,
    }


def queue_thresholds(p: SwitchFields) -> list[tuple[str, int, str, str]]:
    """Qeq, above which f(q) < 1 drains the queue (``hyperbolic_f``): compile.py warns when an egress queue
    cannot grow that long."""
    return [
        (
            "qeq",
            p.qeq,
            "equilibrium queue Qeq",
            "f(q) never falls below 1 and the advertised rate never acts to drain the queue",
        )
    ]


def hyperbolic_f(q: float, qeq: float, a: float, b: float, c: float) -> float:
    """f(q) of model reference §5.2 (same as the engine's; for reports and tests)."""
    if q <= qeq:
        return a * qeq / ((a - 1) * q + qeq)
    return max(c, b * qeq / ((b - 1) * q + qeq))

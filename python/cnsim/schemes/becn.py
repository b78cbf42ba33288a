"""``becn``: Backward Explicit Congestion Notification of Jain et al. (Nov 2006; model reference §5.3, §5.5).

Defaults are the BECN parameters of seed 000 ([A], model reference §9.1): T = 30 us, Qeq = 375 pages,
a = 1.05, b = 1.2, c = 0.5, no N0 (``n0 = 1``). Every switch port that carried data in an interval and
whose advertised rate restricts floods one full-size broadcast per reaction point (model reference §12 R1); a
host keeps the latest value per congestion point for 2T and limits all its flows to the minimum. Engine model: ``crates/cnsim-core/src/cm/becn.rs``
+ ``cm/explicit_rate.rs``; page ``docs/schemes/becn.md``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from cnsim.scenario.quantities import Duration, Size
from cnsim.schemes import _explicit_rate
from cnsim.schemes._explicit_rate import SwitchFields, switch_ir

TAG = "becn"
FLOOR = ("interval", "a", "b", "c")
"""The parameters that set how fast cut sources recover and how low they stay (run-end notes)."""
IR_GROUPS = {"switch": SwitchFields}
"""The IR's ``switch`` object holds the explicit-rate switch fields (engine names: :func:`cnsim.schemes.engine_names`)."""
SUMMARY = (
    "BECN (Jain et al.): every port carrying data broadcasts its advertised rate (load factor + "
    "hyperbolic f(q)) to every host each T; hosts use the minimum (model reference §5.5)."
)


class Params(SwitchFields):
    """BECN parameters (model reference §5.1); units as written, converted to base units in the IR."""

    interval: Duration = Field(
        30 * 10**6, description="measurement and broadcast interval T ([A] 30us; also 300us, 3ms, 12ms)"
    )
    a: float = Field(1.05, description="hyperbolic f(q): f(0) = a ([A] 1.05)")
    b: float = Field(1.2, description="hyperbolic f(q): decay above Qeq ([A] 1.2)")
    c: float = Field(0.5, description="hyperbolic f(q): floor ([A] 0.5)")
    n0: int = Field(
        1, ge=1, le=1_000_000, description="start-up divider: new/idle ports advertise C0/N0 ([A]: not used = 1)"
    )
    expiry: float = Field(
        2.0,
        gt=0,
        le=1000,
        description="a host forgets a congestion point's rate this many "
        "intervals T after hearing it (model reference §12 A1: 2)",
    )
    message_size: Size = Field(
        1526,
        description="size of a BECN message frame (model reference §12 R1: a full-size frame, "
        "1500 B + header, FCS and preamble = 1526 B, fits all four of [A]'s overheads)",
    )
    announce: Literal["flood_per_rp", "every_host"] = Field(
        "flood_per_rp",
        description="flood_per_rp (model reference §12 R1): a port whose advertised rate is below its capacity "
        "floods one broadcast frame per reaction point (host with a flow) every T, reaching every host; every_host "
        "(§12 A1): every port that carried data sends one unicast message to every host",
    )


def to_ir(params: Params) -> dict[str, Any]:
    """Every engine parameter in base units (see ``cm/becn.rs`` ``Params``)."""
    return {
        "switch": switch_ir(params),
        "expiry": params.expiry,
        "message_size_bytes": params.message_size,
        "announce": params.announce,
    }


def queue_thresholds(params: Params) -> list[tuple[str, int, str, str]]:
    """Qeq (``_explicit_rate``)."""
    return _explicit_rate.queue_thresholds(params)

"""``ecm``: Ethernet Congestion Manager (Cisco 2007, model reference §3) — BCN v2.0 with the CN-SIM settings of
seed 003 ([D]) as defaults: periodic sampling every 75 000 B ± U(5000 B), Qeq = 375 pages,
W = 2, the printed raw gains Gi = 0.5333333333 and Gd = 2.666666667e-4, BCN-MAX above
Qmc = 1300 pages (83.2 KB) instead of BCN(0,0), and a 2-ms rate-limiter timeout; no drift.

Same engine model as ``bcn`` (``crates/cnsim-core/src/cm/bcn.rs``, tag ``ecm``); every ``bcn``
parameter is accepted.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from cnsim.scenario.quantities import Duration, Size
from cnsim.schemes import bcn

TAG = "ecm"
FLOOR = ("gi", "gd", "ru", "rate_floor")
"""The parameters that set how fast cut sources recover and how low they stay (run-end notes)."""
SUMMARY = (
    "ECM (Cisco, CN-SIM [D]): BCN v2.0 with periodic 75KB ± 5KB sampling, BCN-MAX above Qmc = 1300 "
    "pages and a 2-ms rate-limiter timeout (model reference §3)."
)


class Params(bcn.Params):
    """ECM parameters: the ``bcn`` set with the seed-003 values as defaults."""

    sampling: Literal["random_bytes", "bernoulli", "periodic"] = Field(
        "periodic", description="CP sampler; ECM: 'periodic' (FixedSamplingInt + RandomSamplingInt) — see bcn"
    )
    sample_interval: Size = Field(75_000, description="FixedSamplingInt = 75000 B [D]")
    sample_jitter: Size | None = Field(5_000, description="RandomSamplingInt = uniform(-5000, 5000) B [D]")
    severe: Literal["none", "max", "zero"] = Field(
        "max", description="'max': BCN-Max used in lieu of BCN(0,0) above Qmc [D]"
    )
    qsc: Size = Field(83_200, description="Qmc = 1300 pages (83.2KB) [D], model reference §12 D3")
    gains: Literal["derived", "raw"] = Field(
        "raw", description="ECM prints raw gains ([D]); 'derived' gives the same values to 1e-9 (model reference §2.1)"
    )
    gi: float | None = Field(0.5333333333, ge=0, description="Gi as printed in [D] (= derived 0.53333)")
    gd: float | None = Field(2.666666667e-4, ge=0, description="Gd as printed in [D] (= derived 0.5/1875)")
    rl_timeout: Duration | None = Field(
        2 * 10**9, description="RL Timeout = 2ms [D]: RL deleted after 2 ms without activity"
    )
    rl_timeout_event: Literal["no_feedback", "idle"] = Field(
        "idle",
        description="model reference §12 R4: [D] writes the same 'RL Timeout = 2 ms' for ECM and FECN, so one meaning "
        "for both — deleted when no frame was sent for 2 ms and nothing waits ('idle'); 'no_feedback' = no BCN for "
        "2 ms (§12 D4)",
    )


def to_ir(params: Params) -> dict[str, Any]:
    """Same IR as ``bcn``."""
    return bcn.to_ir(params)


def queue_thresholds(params: Params) -> list[tuple[str, int, str, str]]:
    """Same as ``bcn`` (Qeq; Qmc = qsc while severe is on)."""
    return bcn.queue_thresholds(params)

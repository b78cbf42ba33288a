"""``dcqcn``: DCQCN (Zhu et al., SIGCOMM 2015), the RoCEv2 descendant of QCN (model reference §7).

CP: RED-like ECN marking on the instantaneous egress queue (Kmin, Kmax, Pmax), on the departing frame
by default. NP (receiver): one CNP per flow at most every N = 50 µs. RP: on a CNP TR = CR,
CR *= (1 - α/2), α = (1-g)α + g; α decays every K = 55 µs without CNP; increases driven by a timer and a
byte counter through fast recovery, additive and hyper increase.

``variant = "paper"`` (default) uses the paper's values; ``variant = "mellanox"`` the ns-3 reference
code's "Mellanox version" (timer-only increase, α and rate decrease on fixed grids, first CNP sets
α = 1). Any field left unset takes the chosen variant's default. The engine model is
``crates/cnsim-core/src/cm/dcqcn.rs``; ``docs/schemes/dcqcn.md`` explains every rule.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cnsim.quantities import Duration, Rate, Size

TAG = "dcqcn"
SUMMARY = ("DCQCN (SIGCOMM 2015): RED-like ECN marking, CNPs from the receiver, QCN-style RP with DCTCP-like "
           "alpha; paper or Mellanox reference-code variant (model reference §7).")

# Variant defaults in base units (model reference §7). "paper": Zhu et al. 2015 [MEM]; R_HAI and MIN_RATE are not
# given by the paper — [PROPOSED] 10 x R_AI (the ratio of every QCN/DCQCN code base) and QCN's 10 Mb/s.
VARIANTS: dict[str, dict[str, Any]] = {
    "paper": {
        "g": 1 / 256, "rate_timer": 55 * 10**6, "byte_counter": 10_000_000, "r_ai": 40_000_000,
        "r_hai": 400_000_000, "min_rate": 10_000_000,
    },
    "mellanox": {
        "g": 1 / 16, "rate_timer": 1_500 * 10**6, "byte_counter": 0, "r_ai": 5_000_000,
        "r_hai": 50_000_000, "min_rate": 100_000_000,
    },
}


class Params(BaseModel):
    """DCQCN parameters (model reference §7); fields left at None take the variant's default."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True, allow_inf_nan=False)

    variant: Literal["paper", "mellanox"] = Field(
        "paper", description="'paper': SIGCOMM 2015 algorithm (timer + byte counter, alpha updated at each CNP); "
        "'mellanox': ns-3 reference code (timer-only increase, alpha on a K grid, decrease at most once per "
        "rate_decrease_interval, first CNP sets alpha = 1)")
    # --- congestion point -------------------------------------------------------------------
    kmin: Size = Field(5_000, description="marking starts above this egress queue length (paper 5KB)")
    kmax: Size = Field(200_000, description="marking probability reaches pmax here and is 1 above (paper 200KB)")
    pmax: float = Field(0.01, gt=0, le=1, description="marking probability at kmax (paper 1 %)")
    mark_on: Literal["transmit", "enqueue"] = Field(
        "transmit", description="mark the departing frame (queue including it; as the ns-3 reference switch "
        "does at dequeue) or the arriving one (model reference §7 allows either)")
    # --- notification point -------------------------------------------------------------------
    cnp_interval: Duration = Field(50 * 10**6, description="at most one CNP per flow per interval N (50us)")
    # --- reaction point -----------------------------------------------------------------------
    g: float | None = Field(None, gt=0, le=1, description="alpha gain g (paper 1/256; mellanox 1/16)")
    alpha_init: float = Field(1.0, ge=0, le=1, description="alpha at the first CNP")
    alpha_resume: Duration = Field(55 * 10**6, description="alpha decays by (1-g) every K without CNP (55us)")
    rate_timer: Duration | None = Field(None, description="rate-increase timer period (paper 55us; mellanox 1500us)")
    byte_counter: Size | Literal[0] | None = Field(
        None, description="an increase stage every B bytes sent (paper 10MB; 0 = off; mellanox: none)")
    fast_recovery_th: int = Field(5, ge=1, le=1000, description="fast-recovery stages F")
    r_ai: Rate | None = Field(None, description="additive-increase step (paper 40Mbps at 40GbE; mellanox 5Mbps)")
    r_hai: Rate | None = Field(None, description="hyper-increase step (paper: not given, 400Mbps proposed; "
                               "mellanox 50Mbps)")
    min_rate: Rate | None = Field(None, description="rate floor (paper: not given, 10Mbps proposed; mellanox 100Mbps)")
    rate_decrease_interval: Duration = Field(4 * 10**6, description="mellanox: decrease at most once per "
                                             "interval (4us)")
    clamp_target_rate: bool = Field(False, description="mellanox: TR = CR at every decrease, also in timer stage 0")
    rate_on_first_cnp: float = Field(1.0, gt=0, le=1, description="mellanox: CR = TR = this fraction of the "
                                     "rate at the first CNP")
    new_flow_line_rate: bool = Field(False, description="a transfer starting on an idle flow is a new connection "
                                     "(RoCE: a new QP) and starts at line rate with fresh state, instead of "
                                     "inheriting the rate of the previous transfer between the same hosts (nic.queues = 'fifo'; with a send "
                                     "queue per transfer every transfer is a new QP anyway)")

    def resolved(self, name: str) -> Any:
        """Field ``name`` with the variant default filled in."""
        value = getattr(self, name)
        return VARIANTS[self.variant][name] if value is None else value


def to_ir(params: Params) -> dict[str, Any]:
    """Base units: bytes, bit/s, ps; every field explicit (the IR has no defaults)."""
    p = params
    return {
        "variant": p.variant,
        "kmin_bytes": p.kmin,
        "kmax_bytes": p.kmax,
        "pmax": p.pmax,
        "mark_on": p.mark_on,
        "cnp_interval_ps": p.cnp_interval,
        "g": float(p.resolved("g")),
        "alpha_init": p.alpha_init,
        "alpha_resume_ps": p.alpha_resume,
        "rate_timer_ps": int(p.resolved("rate_timer")),
        "byte_counter_bytes": int(p.resolved("byte_counter")),
        "fast_recovery_th": p.fast_recovery_th,
        "r_ai_bps": float(p.resolved("r_ai")),
        "r_hai_bps": float(p.resolved("r_hai")),
        "min_rate_bps": float(p.resolved("min_rate")),
        "rate_decrease_interval_ps": p.rate_decrease_interval,
        "clamp_target_rate": p.clamp_target_rate,
        "rate_on_first_cnp": p.rate_on_first_cnp,
        # only when on: existing IRs (and their run ids) stay as they were
        **({"new_flow_line_rate": True} if p.new_flow_line_rate else {}),
    }


def queue_thresholds(params: Params) -> list[tuple[str, int, str, str]]:
    """kmin (``mark_probability`` in ``cm/dcqcn.rs``: no mark while Q <= kmin). kmax is left out: above the
    buffer it only flattens the marking curve (pmax is not reached), marking itself still acts."""
    return [("kmin", params.kmin, "marking threshold kmin",
             "no frame is ever ECN-marked and DCQCN never slows a source")]

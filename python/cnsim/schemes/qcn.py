"""``qcn``: Quantized Congestion Notification as standardised in IEEE 802.1Qau-2010 (model reference §6).

CP (every switch egress queue): Fb = -(Qoff + w·Qdelta) clamped to [-(1+2w)·Qeq, 0] and quantised to
6 bits; sampling by a byte countdown reloaded from an 8-entry table indexed by q div 8 (150 KB ...
18.5 KB, ±15 %); a 64-B CNM to the sampled frame's source when q > 0. RP (one rate limiter per
flow): multiplicative decrease by Gd·q (≤ 50 %), then fast recovery / active / hyper-active increase
driven by a byte counter and a timer, deep-cut guard, minimum rate, release at line rate.

Defaults: model reference §6 and §12 Q1–Q3 — Qeq = 26 KB (standard), timer period 15 ms (pseudo-code /
standard; the Allerton paper uses 10 ms, ns-3 models 1.5 ms), stage boundary ``> TH``. The engine
model is ``crates/cnsim-core/src/cm/qcn.rs``; ``docs/schemes/qcn.md`` explains every rule.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cnsim.scenario.quantities import Duration, Rate, Size

TAG = "qcn"
FLOOR = ("gd", "min_dec_factor", "r_ai", "r_hai", "timer_period", "bc_limit", "fast_recovery_th", "min_rate")
"""The parameters that set how fast cut sources recover and how low they stay (run-end notes)."""
SUMMARY = (
    "QCN (IEEE 802.1Qau-2010): 6-bit quantised Fb, table-driven sampling, CNMs; RP with byte counter + "
    "timer, fast recovery, active and hyper-active increase (model reference §6)."
)

MARK_TABLE = [150_000, 75_000, 50_000, 37_500, 30_000, 25_000, 21_500, 18_500]
"""Sampling interval (bytes) per eighth of the quantised |Fb| range, model reference §6.1."""


class Params(BaseModel):
    """QCN parameters (model reference §6.1 CP, §6.2 RP); units as written, base units in the IR."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True, allow_inf_nan=False)

    # --- congestion point -------------------------------------------------------------------
    qeq: Size = Field(
        26_000,
        description="equilibrium queue Qeq (standard 26KB, model reference §12 Q3; Stanford/Linux prototypes 33-34KB)",
    )
    w: float = Field(2.0, ge=0, description="weight of Qdelta in Fb = -(Qoff + w*Qdelta)")
    fb_bits: int = Field(6, ge=3, le=16, description="bits of the quantised |Fb| (6: q in 0..63)")
    mark_table: list[Size] = Field(
        default_factory=lambda: list(MARK_TABLE),
        min_length=8,
        max_length=8,
        description="sampling interval for each eighth of the q range (q div 8 for 6 bits): "
        "150KB, 75KB, 50KB, 37.5KB, 30KB, 25KB, 21.5KB, 18.5KB (≈ 1-8 % of 1500-B frames)",
    )
    sample_jitter: float = Field(0.15, ge=0, lt=1, description="each sampling reload is multiplied by U(1 - j, 1 + j)")
    # --- reaction point -----------------------------------------------------------------------
    gd: float = Field(
        1 / 128, gt=0, description="decrease gain: CR *= max(min_dec_factor, 1 - gd*q) (1/128: q = 63 cuts 49 %)"
    )
    min_dec_factor: float = Field(
        0.5, gt=0, le=1, description="largest cut: CR never falls below this fraction in one CNM"
    )
    min_rate: Rate = Field(10_000_000, description="floor of the current rate CR")
    bc_limit: Size = Field(150_000, description="byte-counter cycle BC_LIMIT (BC_LIMIT/2 once past the threshold)")
    fast_recovery_th: int = Field(5, ge=1, le=1000, description="fast-recovery threshold TH (stages)")
    r_ai: Rate = Field(5_000_000, description="active-increase step R_AI of the target rate")
    r_hai: Rate = Field(50_000_000, description="hyper-active-increase step R_HAI (times min(stages) - TH)")
    timer_period: Duration = Field(
        15 * 10**9,
        description="RP timer period T (T/2 past the threshold); "
        "15ms standard/pseudo-code, 10ms Allerton paper, 1.5ms ns-3 (model reference §12 Q1)",
    )
    rp_jitter: float = Field(
        0.15, ge=0, lt=1, description="byte-counter and timer reloads are multiplied by U(1 - j, 1 + j)"
    )
    stage_boundary: Literal["gt", "ge"] = Field(
        "gt",
        description="a stage counter is past TH when count > TH ('gt', pseudo-code: 5 fast-recovery "
        "cycles) or count >= TH ('ge', ns-3: 4 cycles), model reference §12 Q2",
    )


def to_ir(params: Params) -> dict[str, Any]:
    """Base units: bytes, bit/s, ps (field names end in their unit)."""
    p = params
    return {
        "qeq_bytes": p.qeq,
        "w": p.w,
        "fb_bits": p.fb_bits,
        "mark_table_bytes": [float(b) for b in p.mark_table],
        "sample_jitter": p.sample_jitter,
        "gd": p.gd,
        "min_dec_factor": p.min_dec_factor,
        "min_rate_bps": float(p.min_rate),
        "bc_limit_bytes": float(p.bc_limit),
        "fast_recovery_th": p.fast_recovery_th,
        "r_ai_bps": float(p.r_ai),
        "r_hai_bps": float(p.r_hai),
        "timer_period_ps": p.timer_period,
        "rp_jitter": p.rp_jitter,
        "stage_boundary": p.stage_boundary,
    }


def queue_thresholds(params: Params) -> list[tuple[str, int, str, str]]:
    """Qeq (``feedback`` in ``cm/qcn.rs``): compile.py warns when an egress queue cannot grow that long."""
    return [
        (
            "qeq",
            params.qeq,
            "equilibrium queue Qeq",
            "Qoff = Q - Qeq stays negative and a CNM is sent only while the queue grows fast (w x Qdelta > Qeq - Q)",
        )
    ]

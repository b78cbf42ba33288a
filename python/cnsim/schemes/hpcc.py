"""``hpcc``: HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019).

Every switch egress stamps in-band telemetry (queue length, bytes sent, time stamp, line rate) into each
data frame; the receiver echoes the stack in an ACK (every ``ack_every``-th frame); the sender computes the
normalised in-flight bytes U of the most loaded hop and sets its window W (Algorithm 1: W = Wc/(U/η) + W_AI
when U ≥ η or after ``max_stage`` additive steps, else W = Wc + W_AI; Wc updated once per RTT), keeping at
most W bytes unacknowledged and pacing at W/T. The engine model is ``crates/cnsim-core/src/cm/hpcc.rs``;
``docs/schemes/hpcc.md`` explains every rule.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cnsim.quantities import Duration, Rate, Size

TAG = "hpcc"
SUMMARY = ("HPCC (SIGCOMM 2019): INT in every data frame, ACKs echo it, the sender's window from the measured "
           "utilisation of the most loaded hop (eta, max stage, W_AI), paced at W/T.")


class Params(BaseModel):
    """HPCC parameters; defaults as the paper (eta = 0.95, max_stage = 5) and its reference code."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True, allow_inf_nan=False)

    eta: float = Field(0.95, gt=0, le=1, description="target utilisation eta (paper 95 %)")
    max_stage: int = Field(5, ge=0, le=1000, description="additive-increase stages before a multiplicative "
                           "update while the path is under-utilised (paper 5)")
    w_ai: Size | None = Field(None, description="additive increase W_AI per update; unset = W_init (1 - eta) / "
                              "expected_flows for each flow (paper §3.3)")
    expected_flows: int = Field(100, ge=1, le=10**6, description="N of the W_AI rule (100: the reference code's "
                                "RATE_AI of 50Mbps at 100Gbps)")
    base_rtt: Duration | Literal["network", "path"] = Field(
        "network", description="T: a time, or 'network' = the largest base RTT of any flow (reference code), "
        "or 'path' = each flow's own; base RTT = 2 x (propagation + switch latency) + one data frame out and "
        "one control frame back on every link + the source's response delay. W_init = line rate x T")
    min_rate: Rate = Field(100_000_000, description="window floor as a rate, W >= min_rate x T (reference 100Mbps)")
    ack_every: int = Field(1, ge=1, le=10**6, description="the receiver acknowledges every n-th data frame of a "
                           "flow, echoing its INT (1 = every frame)")
    loss_timeout: Duration = Field(10**9, description="no ACK for this long with data outstanding: the sender "
                                   "counts it as lost and reopens its window (nothing is retransmitted)")


def to_ir(params: Params) -> dict[str, Any]:
    """Base units: bytes, bit/s, ps; every field explicit (the IR has no defaults)."""
    p = params
    fixed = not isinstance(p.base_rtt, str)
    return {
        "eta": p.eta,
        "max_stage": p.max_stage,
        "w_ai_bytes": float(p.w_ai or 0),
        "expected_flows": p.expected_flows,
        "base_rtt": "fixed" if fixed else p.base_rtt,
        "base_rtt_ps": p.base_rtt if fixed else 0,
        "min_rate_bps": float(p.min_rate),
        "ack_every": p.ack_every,
        "loss_timeout_ps": p.loss_timeout,
    }

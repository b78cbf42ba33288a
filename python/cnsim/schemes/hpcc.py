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

from cnsim.scenario.quantities import Duration, Rate, Size

TAG = "hpcc"
FLOOR = ("eta", "max_stage", "w_ai", "rate_ai", "expected_flows", "min_rate")
"""The parameters that set how fast windows grow and how low they stay (run-end notes)."""
SUMMARY = (
    "HPCC (SIGCOMM 2019): INT in every data frame, ACKs echo it, the sender's window from the measured "
    "utilisation of the most loaded hop (eta, max stage, W_AI), paced at W/T."
)


REFERENCE_BPS = 25 * 10**9
"""The NIC rate the reference code's RATE_AI is given for (``run.py --cc hp``: ``10·bw/25`` Mb/s)."""
PRESETS: dict[str, dict[str, Any]] = {
    # Li et al., SIGCOMM 2019, Algorithm 1 and §3.3: maxStage 5, W_AI = W_init (1 - eta) / N, INT per hop
    "paper": {"max_stage": 5, "min_rate": 100_000_000, "int_header": "per_hop", "rate_ai": None},
    # the HPCC authors' simulation (alibaba-edu/High-Precision-Congestion-Control, simulation/run.py --cc hp):
    # MI_THRESH 0 (the --mi default), RATE_AI 10 Mb/s per 25 Gb/s of NIC rate (W_AI = RATE_AI x T),
    # MIN_RATE 1000Mb/s, U_TARGET 0.95, the fixed 42-B IntHeader (maxHop 5) in every data packet
    "reference": {"max_stage": 0, "min_rate": 1_000_000_000, "int_header": "fixed", "rate_ai": 10_000_000},
}


class Params(BaseModel):
    """HPCC parameters; defaults as the paper (eta = 0.95, max_stage = 5) or as its authors' simulation
    (``preset = "reference"``)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True, allow_inf_nan=False)

    preset: Literal["paper", "reference"] = Field(
        "paper",
        description="defaults of the unset fields: 'paper' = Algorithm 1 as published (max_stage 5, "
        "W_AI = W_init (1 - eta) / expected_flows, min_rate 100Mbps, INT per hop); 'reference' = the HPCC "
        "authors' simulation run.py --cc hp (max_stage 0 = MI_THRESH 0, W_AI = rate_ai x T with rate_ai "
        "10Mbps per 25Gbps of NIC rate, min_rate 1Gbps, a fixed 42-B INT header)",
    )
    eta: float = Field(0.95, gt=0, le=1, description="target utilisation eta (paper 95 %)")
    max_stage: int | None = Field(
        None,
        ge=0,
        le=1000,
        description="additive-increase stages before a "
        "multiplicative update while the path is under-utilised (paper 5; reference "
        "code 0: MI_THRESH)",
    )
    w_ai: Size | None = Field(
        None,
        description="additive increase W_AI per update; unset = rate_ai x T when "
        "rate_ai is set, else W_init (1 - eta) / expected_flows for each flow (paper §3.3)",
    )
    rate_ai: Rate | None = Field(
        None,
        description="W_AI as a rate: W_AI = rate_ai x T (the reference code's "
        "RATE_AI; preset reference: 10Mbps per 25Gbps of the NIC rate)",
    )
    expected_flows: int = Field(
        100, ge=1, le=10**6, description="N of the W_AI rule (100: the reference code's RATE_AI of 50Mbps at 100Gbps)"
    )
    base_rtt: Duration | Literal["network", "path"] = Field(
        "network",
        description="T: a time, or 'network' = the largest base RTT of any flow (reference code), "
        "or 'path' = each flow's own; base RTT = 2 x (propagation + switch latency) + one data frame out and "
        "one control frame back on every link + the source's response delay. W_init = line rate x T",
    )
    min_rate: Rate | None = Field(
        None,
        description="window floor as a rate, W >= min_rate x T (paper preset: "
        "100Mbps, the reference's MinRate attribute; reference preset: 1Gbps, run.py)",
    )
    ack_every: int = Field(
        1,
        ge=1,
        le=10**6,
        description="the receiver acknowledges every n-th data frame of a flow, echoing its INT (1 = every frame)",
    )
    loss_timeout: Duration = Field(
        10**9,
        description="no ACK for this long with data outstanding: the sender "
        "counts it as lost and reopens its window (nothing is retransmitted)",
    )
    int_header: Literal["per_hop", "fixed", "off"] | None = Field(
        None,
        description="INT bytes on the wire: 'per_hop' = the source adds int_base and every switch "
        "int_hop (the paper's INT: 2 + 8 x 5 = 42B on a 5-switch path); 'fixed' = the source adds int_base + "
        "int_hop x int_slots to every data frame, as the reference code's fixed IntHeader (maxHop = 5: 42B "
        "whatever the path); 'off' = telemetry without bytes (cnsim before issue 36)",
    )
    int_base: Size | Literal[0] = Field(
        2, description="INT bytes added by the source NIC (the reference's 2-byte hop count, int-header.h)"
    )
    int_hop: Size | Literal[0] = Field(
        8,
        description="INT bytes per switch hop (B, TS, txBytes, qLen packed in "
        "8 bytes: paper Figure 5, reference IntHop)",
    )
    int_slots: int = Field(
        5,
        ge=1,
        le=64,
        description="with int_header = 'fixed': hop slots of the header (reference IntHeader::maxHop = 5)",
    )


def resolved(p: Params, name: str) -> Any:
    """Field ``name`` with the preset's default filled in."""
    value = getattr(p, name)
    return PRESETS[p.preset][name] if value is None else value


def int_wire(p: Params) -> tuple[int, int]:
    """(bytes the source adds, bytes each switch adds) to an HPCC data frame on the wire."""
    header = resolved(p, "int_header")
    if header == "off":
        return 0, 0
    if header == "fixed":
        return p.int_base + p.int_hop * p.int_slots, 0
    return p.int_base, p.int_hop


def to_ir(params: Params) -> dict[str, Any]:
    """Base units: bytes, bit/s, ps; every field explicit (the IR has no defaults)."""
    p = params
    fixed = not isinstance(p.base_rtt, str)
    rate_ai = resolved(p, "rate_ai")
    # the preset's rate_ai is per 25 Gb/s of NIC rate (scaled by the engine), a user's is absolute
    scaled = p.rate_ai is None and rate_ai is not None
    return {
        "eta": p.eta,
        "max_stage": resolved(p, "max_stage"),
        "w_ai_bytes": float(p.w_ai or 0),
        "expected_flows": p.expected_flows,
        "base_rtt": "fixed" if fixed else p.base_rtt,
        "base_rtt_ps": p.base_rtt if fixed else 0,
        "min_rate_bps": float(resolved(p, "min_rate")),
        "ack_every": p.ack_every,
        "loss_timeout_ps": p.loss_timeout,
        "int_base_bytes": int_wire(p)[0],
        "int_hop_bytes": int_wire(p)[1],
        **({"rate_ai_bps": float(rate_ai)} if rate_ai is not None else {}),
        **({"rate_reference_bps": float(REFERENCE_BPS)} if scaled else {}),
    }

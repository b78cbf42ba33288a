"""``bcn``: Backward Congestion Notification v2.0 (model reference §2) with every seed variant, and the
"QCN enhancements to BCN" of Kwan & Matthews (model reference §4) as switchable options.

Defaults are the Cisco baseline of seed 000 ([A], model reference §9.1): W = 2, Qeq = 375 pages (24 KB),
Gi = 0.53333, Gd = 2.6667e-4 (derived here by the §2.1 normalisation from a 10 Gb/s line rate,
Ru = 1 Mb/s, 10 % maximal increase and 50 % maximal decrease), sampling on average every 150 KB,
no BCN-MAX / BCN(0,0), no oversampling, no drift. The engine model is in
``crates/cnsim-core/src/cm/bcn.rs``; the page ``docs/schemes/bcn.md`` explains every rule.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cnsim.scenario.quantities import Duration, Rate, RateOrZero, Size, Time
from cnsim.scenario.units import PAGE_BYTES

TAG = "bcn"
FLOOR = ("gi", "gd", "ru", "max_increase", "max_decrease", "rate_floor")
"""The parameters that set how fast cut sources recover and how low they stay (run-end notes)."""
SUMMARY = (
    "BCN v2.0 (Cisco): sampled Qoff/Qdelta feedback, AIMD rate limiters with RL tags; BCN-MAX, "
    "BCN(0,0) back-off, drift, oversampling, and the Kwan/Matthews QCN enhancements (model reference §2, §4)."
)


class Params(BaseModel):
    """BCN parameters (model reference §2.1); units as written, converted to base units in the IR."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True, allow_inf_nan=False)

    # --- congestion point -------------------------------------------------------------------
    sampling: Literal["random_bytes", "bernoulli", "periodic"] = Field(
        "random_bytes",
        description="CP sampler (model reference §2.2): 'random_bytes' = each data frame with probability "
        "L/sample_interval ([A],[B]); 'bernoulli' = probability sample_probability ([C] Pm); 'periodic' = byte "
        "counter every sample_interval ± U(sample_jitter) ([D],[E])",
    )
    sample_interval: Size = Field(
        150_000,
        description="mean bytes between samples ('random_bytes', 'periodic'); "
        "150KB = 1 % of 1500-B frames ([A],[B]); [B] also 25KB; [D]/[E] 75KB",
    )
    sample_probability: float = Field(
        0.01, gt=0, le=1, description="sampling probability Pm ('bernoulli'; [C] 0.01, 0.05, 0.1)"
    )
    sample_jitter: Size | None = Field(
        None, description="half-width of the uniform jitter of the periodic interval (ECM: 5000B); none = no jitter"
    )
    oversampling: Literal["none", "thresh", "qcn"] = Field(
        "none",
        description="model reference §2.6: 'thresh' = sampling rate x oversampling_factor while Q > Qeq (OS-THRESH); "
        "'qcn' = next interval / (1 + floor(q/8)), q = 6-bit |Fb| of the last negative sample (OS-QCN)",
    )
    oversampling_factor: float = Field(10.0, ge=1, description="OS-THRESH multiplier (1 % -> 10 %)")
    qeq: Size = Field(24_000, description="equilibrium queue Qeq (375 pages = 24KB; [E] uses B/4 = 150KB)")
    w: float = Field(2.0, ge=0, description="derivative weight W (CP and RP)")
    severe: Literal["none", "max", "zero"] = Field(
        "none",
        description="above qsc at a sampling instant (model reference §2.5): 'max' = BCN-MAX (maximal decrease), "
        "'zero' = BCN(0,0) (stop, random restart at Rmin with exponential back-off)",
    )
    qsc: Size = Field(
        112_500, description="severe-congestion threshold Qsc (ECM: Qmc = 1300 pages); [B] 112.5KB = 75 % of 150KB"
    )
    severe_trigger: Literal["sample", "every_arrival"] = Field(
        "sample",
        description="where severe messages are generated (model reference §12 B4): 'sample' = at sampling "
        "instants only, replacing the normal message (the model reference's reading, default); 'every_arrival' = for every "
        "data frame arriving while Q > qsc (the B4 alternative, read against seed 001's BCNz rows), at most one "
        "per source per severe_holdoff",
    )
    severe_holdoff: Time = Field(
        0,
        description="severe_trigger = 'every_arrival': minimum time between two "
        "severe messages to the same source (0 = one per arriving frame)",
    )
    sample_refused: bool = Field(
        False,
        description="also count and sample data frames refused by buffer "
        "admission (Q = the queue they were refused from); model reference §2.2 says no (default). "
        "True is the alternative read against seed 003's ECM no-PAUSE drops",
    )
    fb_at_cp: bool = Field(
        False,
        description="Kwan/Matthews (model reference §4.1): the CP computes Fb and sends only "
        "decrease messages; no positive messages, no RL tags",
    )
    zero_encoding: Literal["explicit", "legacy"] = Field(
        "explicit",
        description="how BCN(0,0) is coded (model reference §12 C4): 'explicit' = a message type of its own, and a "
        "sample with Fb = 0 sends nothing (default); 'legacy' = the original message with Qoff = Qdelta = 0 ([C] §8): "
        "Qoff and Qdelta are reported in whole pages, and a sample of a frame tagged by this CP whose two fields "
        "are both 0 — likely while the queue sits at Qeq — reaches its source as BCN(0,0)",
    )
    quant_bits: int | None = Field(
        None,
        ge=1,
        le=52,
        description="quantise the reported Fb to sign + n-bit "
        "magnitude over [0, Fb_max] (model reference §4.2, §12 E5; [E]: 32, 5, 3); none = exact",
    )
    slow_cp_rate: Rate | None = Field(
        None,
        description="[C] §4 'enhanced' asymmetric setting: CPs on ports "
        "of at most this rate (e.g. 1Gbps) use slow_cp_sample_probability "
        "(Bernoulli) and ask the RP for slow_cp_ru; none = every CP alike",
    )
    slow_cp_sample_probability: float = Field(0.1, gt=0, le=1, description="Pm of a slow CP ([C]: 0.1)")
    slow_cp_ru: Rate = Field(800_000, description="Ru requested by a slow CP ([C]: 0.8Mbps)")
    # --- gains --------------------------------------------------------------------------------
    gains: Literal["derived", "raw"] = Field(
        "derived",
        description="'derived': Gi = gain_line_rate*max_increase/(Ru*(1+2W)*Qeq), Gd = max_decrease/"
        "((1+2W)*Qeq), Qeq in pages (model reference §2.1) — with the defaults Gi = 0.53333, Gd = 2.6667e-4; 'raw': gi, gd",
    )
    gi: float | None = Field(None, ge=0, description="raw additive-increase gain (gains = 'raw'); [A]/[D] 0.5333333333")
    gd: float | None = Field(
        None, ge=0, description="raw multiplicative-decrease gain per page (gains = 'raw'); [A]/[D] 2.666666667e-4"
    )
    gain_line_rate: Rate = Field(10 * 10**9, description="line rate of the gain normalisation (gains = 'derived')")
    max_increase: float = Field(
        0.1, gt=0, description="fraction of gain_line_rate added by one maximal positive message (gains = 'derived')"
    )
    max_decrease: float = Field(
        0.5,
        gt=0,
        le=1,
        description="fraction removed by one maximal negative message (gains = 'derived'); [B] 0.5 or 0.95",
    )
    ru: Rate = Field(1_000_000, description="rate unit Ru ([C] sweeps 8, 4, 0.8 Mbps)")
    # --- reaction point -----------------------------------------------------------------------
    rate_floor: RateOrZero = Field(
        1_000_000, description="lowest rate a decrease reaches (model reference §12 G6; 0 = none)"
    )
    initial_rate: Rate | None = Field(
        None,
        description="rate of a new rate limiter before its first decrease; "
        "none = line rate (model reference §2.3); [C]: 5Gbps. Above the line rate the limiter does not bind "
        "until decreases take it below",
    )
    tmax: Duration = Field(100 * 10**6, description="BCN(0,0): Tmax0, restart drawn in U(0, Tmax) ([B] 100us)")
    rmin: Rate = Field(10**9, description="BCN(0,0): Rmin0, restart rate ([B] 1Gbps)")
    backoff_cap: int = Field(
        10,
        ge=0,
        le=40,
        description="BCN(0,0): at most this many doublings of Tmax / halvings of Rmin (model reference §2.5 K_CAP)",
    )
    reset: Literal["always", "delayed", "never"] = Field(
        "always",
        description="BCN(0,0) back-off reset (model reference §12 B2): 'always' at every new stop episode (BCNz), "
        "'delayed' only if >= reset_delay since the last restart (BCNzd), 'never' (BCNzp)",
    )
    reset_delay: Time = Field(10**9, description="BCN(0,0) 'delayed' reset: minimum time since the last restart")
    reset_event: Literal["positive", "new_episode", "uncongested", "released"] = Field(
        "positive",
        description="event at which the reset policy may return the BCN(0,0) back-off to "
        "(Tmax0, Rmin0): 'positive' = a positive BCN (Fb > 0: the congestion is over) reaching a running RL "
        "(default: the reading seed 001's BCNz/BCNz_95%/BCNzd loss numbers support, model reference §12 R8); 'new_episode' "
        "= a BCN(0,0) reaching a running RL (model reference §12 B2); 'uncongested' = a normal (non-severe) BCN reaching a "
        "running RL; 'released' = the RL released at line rate",
    )
    drift: RateOrZero = Field(
        0, description="self-increase of every active RL per drift_interval (model reference §2.4; [B] 1Mbps; 0 = off)"
    )
    drift_interval: Duration = Field(100 * 10**6, description="drift period ([B] 100us)")
    drift_random_phase: bool = Field(
        False,
        description="drift ticks on each host's own grid, shifted by a phase "
        "drawn per host, instead of every host at the same instants (issue 11 item 7)",
    )
    rl_timeout: Duration | None = Field(
        None, description="delete an RL after this long without activity (ECM 2ms, model reference §3); none = never"
    )
    rl_timeout_event: Literal["no_feedback", "idle"] = Field(
        "no_feedback",
        description="what keeps an RL alive for rl_timeout: 'no_feedback' = a BCN received (model reference §12 "
        "D4); 'idle' = a frame sent or waiting (model reference §12 R4, FECN's meaning of [D]'s words)",
    )
    rl_scope: Literal["pair", "transfer"] = Field(
        "pair",
        description="what one rate limiter belongs to: 'pair' = the (source, destination) pair, kept across "
        "its transfers (model reference §3); 'transfer' = one transfer ([D]'s 'flow'): each transfer starts unregulated with "
        "fresh state (nic.queues = 'fifo'; with a send queue per transfer, each has its own limiter anyway)",
    )
    self_increase: float | None = Field(
        None,
        gt=0,
        description="RP self-increase factor I (1/s): R += R*I*tau every tau (model reference §4.3); none = off",
    )
    self_increase_interval: Duration = Field(
        10**9, description="self-increase period tau (model reference §12 E6: 1ms)"
    )

    @model_validator(mode="after")
    def _raw_gains(self):
        if self.gains == "raw" and (self.gi is None or self.gd is None):
            raise ValueError("gains = 'raw' needs both gi and gd")
        if self.gains == "derived" and (self.gi is not None or self.gd is not None):
            raise ValueError("gi/gd are only used with gains = 'raw'")
        if (
            self.sampling == "periodic"
            and self.sample_jitter is not None
            and self.sample_jitter >= self.sample_interval
        ):
            raise ValueError("sample_jitter must be < sample_interval")
        if self.zero_encoding == "legacy" and self.fb_at_cp:
            raise ValueError(
                "zero_encoding = 'legacy' needs RL tags (the Qoff = Qdelta = 0 message goes to a tagged "
                "frame); fb_at_cp = true sends decrease-only messages without tags"
            )
        return self


def qeq_pages(p: Params) -> float:
    """Qeq in (real-valued) pages."""
    return p.qeq / PAGE_BYTES


def fb_max(p: Params) -> float:
    """Largest |Fb| after clamping, pages: (1 + 2W)·Qeq (model reference §2.1)."""
    return (1 + 2 * p.w) * qeq_pages(p)


def gain_rule(
    line_rate_bps: float,
    qeq_pages: float,
    w: float,
    ru_bps: float,
    max_increase: float = 0.1,
    max_decrease: float = 0.5,
) -> tuple[float, float]:
    """The gain normalisation of model reference §2.1: one maximal positive message adds ``max_increase`` of the line
    rate, one maximal negative message removes ``max_decrease`` of the rate:
    Gi = LineRate·max_increase / (Ru·Fb_max), Gd = max_decrease / Fb_max, Fb_max = (1 + 2W)·Qeq (pages)."""
    fm = (1 + 2 * w) * qeq_pages
    return line_rate_bps * max_increase / (ru_bps * fm), max_decrease / fm


def derived_gains(p: Params) -> tuple[float, float]:
    """(Gi, Gd) by the normalisation of model reference §2.1 (whatever ``p.gains`` says)."""
    return gain_rule(p.gain_line_rate, qeq_pages(p), p.w, p.ru, p.max_increase, p.max_decrease)


def gains(p: Params) -> tuple[float, float]:
    """(Gi, Gd) the engine uses."""
    if p.gains == "raw":
        assert p.gi is not None and p.gd is not None
        return p.gi, p.gd
    return derived_gains(p)


def to_ir(params: Params) -> dict[str, Any]:
    """Every engine parameter in base units (bytes, bit/s, ps); see ``cm/bcn.rs`` ``Params``."""
    p = params
    gi, gd = gains(p)
    return {
        "sampling": p.sampling,
        "sample_probability": p.sample_probability,
        "sample_interval_bytes": p.sample_interval,
        "sample_jitter_bytes": p.sample_jitter or 0,
        "oversampling": p.oversampling,
        "oversampling_factor": p.oversampling_factor,
        "qeq_bytes": p.qeq,
        "w": p.w,
        "severe": p.severe,
        "qsc_bytes": p.qsc,
        "severe_trigger": p.severe_trigger,
        "severe_holdoff_ps": p.severe_holdoff,
        "sample_refused": p.sample_refused,
        "fb_at_cp": p.fb_at_cp,
        "quant_bits": p.quant_bits,
        "slow_cp_rate_bps": p.slow_cp_rate,
        "slow_cp_sample_probability": p.slow_cp_sample_probability,
        "slow_cp_ru_bps": float(p.slow_cp_ru),
        "gi": gi,
        "gd": gd,
        "ru_bps": float(p.ru),
        "rate_floor_bps": float(p.rate_floor),
        "initial_rate_bps": None if p.initial_rate is None else float(p.initial_rate),
        "tmax_ps": p.tmax,
        "rmin_bps": float(p.rmin),
        "backoff_cap": p.backoff_cap,
        "reset": p.reset,
        "reset_delay_ps": p.reset_delay,
        "reset_event": p.reset_event,
        "drift_bps": float(p.drift),
        "drift_interval_ps": p.drift_interval,
        "drift_random_phase": p.drift_random_phase,
        "rl_timeout_ps": p.rl_timeout,
        "rl_timeout_event": p.rl_timeout_event,
        "rl_scope": p.rl_scope,
        "self_increase": p.self_increase,
        "self_increase_interval_ps": p.self_increase_interval,
        "zero_encoding": p.zero_encoding,
    }


def queue_thresholds(p: Params) -> list[tuple[str, int, str, str]]:
    """The CP rules that act only while the egress queue exceeds a parameter (``cp_decide``, ``os_mult`` and
    ``severe_applies`` in ``cm/bcn.rs``): compile.py warns when a queue cannot grow that long."""
    effect = (
        "the offset term Qoff = Qeq - Q never turns negative and only a fast-growing queue (W x Qdelta) "
        "sends negative feedback"
    )
    if p.oversampling == "thresh":
        effect += ", and OS-THRESH oversampling (Q > Qeq) never starts"
    out = [("qeq", p.qeq, "equilibrium queue Qeq", effect)]
    if p.severe != "none":
        kind = "BCN-MAX" if p.severe == "max" else "BCN(0,0)"
        out.append(
            (
                "qsc",
                p.qsc,
                "severe-congestion threshold Qsc",
                f"the severe-congestion rule (cm.params.severe = {p.severe!r}: {kind} above Qsc) never fires",
            )
        )
    return out


def describe_gains(p: Params) -> str:
    """One line with both gain forms, e.g. for reports: raw values in use and the derived ones."""
    gi, gd = gains(p)
    dgi, dgd = derived_gains(p)
    fm = fb_max(p)
    return (
        f"Gi = {gi:.6g}, Gd = {gd:.6g} ({p.gains}); derived by model reference §2.1: Gi = {dgi:.6g}, Gd = {dgd:.6g}; "
        f"Fb_max = {fm:.6g} pages; max step +{gi * fm * p.ru / 1e9:.4g} Gb/s, x{1 - gd * fm:.4g}"
    )

"""``fecn``: Forward Explicit Congestion Notification of Jain et al. (model reference §5.3, §5.4), with the
optional E-FECN severe-congestion add-on (model reference §5.6).

Defaults are the FECN parameters of seed 003 (CN-SIM, [D], model reference §9.5): T = 1 ms, Qeq = 375 pages,
a = 1.1, b = 1.02, c = 0.1, N0 = 200 (R0 = 50 Mb/s at 10 Gb/s), Qsc = 1300 pages, RL timeout 2 ms,
one probe per flow per T. Seed 000 ([A]) uses T = 30 us, a = 1.05, b = 1.2, c = 0.5, no N0
(``n0 = 1``) and a tagging rate (``tagging_rate = 1.0`` / 0.1 / 0.05 / 0.01); its scenario files set
those. Engine model: ``crates/cnsim-core/src/cm/fecn.rs`` + ``cm/explicit_rate.rs``; the page
``docs/schemes/fecn.md`` explains every rule and which routines are reconstructions.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from cnsim.scenario.quantities import Duration, Size
from cnsim.schemes import _explicit_rate
from cnsim.schemes._explicit_rate import SwitchFields, switch_ir

TAG = "fecn"
FLOOR = ("interval", "a", "b", "c")
"""The parameters that set how fast cut sources recover and how low they stay (run-end notes)."""
IR_GROUPS = {"switch": SwitchFields}
"""The IR's ``switch`` object holds the explicit-rate switch fields (engine names: :func:`cnsim.schemes.engine_names`)."""
SUMMARY = (
    "FECN (Jain et al.): switches stamp the minimum advertised rate (load factor + hyperbolic f(q)) "
    "into forward probes, the destination reflects it; optional E-FECN (model reference §5)."
)


class Params(SwitchFields):
    """FECN parameters (model reference §5.1); units as written, converted to base units in the IR."""

    interval: Duration = Field(
        10**9, description="switch measurement interval T and source probe interval ([D] 1ms; [A] 30us)"
    )
    a: float = Field(1.1, description="hyperbolic f(q): f(0) = a ([D] 1.1; [A] 1.05)")
    b: float = Field(1.02, description="hyperbolic f(q): decay above Qeq ([D] 1.02; [A] 1.2; paper 1.002)")
    c: float = Field(0.1, description="hyperbolic f(q): floor ([D] 0.1; [A] 0.5)")
    n0: int = Field(
        200,
        ge=1,
        le=1_000_000,
        description="start-up divider: rate limiters start at R0 = line/N0, "
        "new/idle ports advertise C0/N0 ([D] 200 → 50 Mb/s; [A] not used = 1)",
    )
    tagging_rate: float | None = Field(
        None,
        gt=0,
        le=1,
        description="fraction of data frames tagged, each "
        "independently ([A] 1.0, 0.1, 0.05, 0.01); none = the first frame of a "
        "new rate limiter and then one frame per T ([D], the FECN paper)",
    )
    probe_rule: Literal["per_flow", "per_source", "below_line", "source_periodic"] = Field(
        "per_flow",
        description="with tagging_rate none: which frames probe (model reference §12 R7): 'per_flow' = the first "
        "frame of a new rate limiter, then one per rate limiter per T (the FECN paper, default); 'per_source' = "
        "the first frame of a new rate limiter, then one per source host per T; 'below_line' = as per_flow, but "
        "only while the rate limiter is below the line rate; 'source_periodic' = one per source host per T and none "
        "when a rate limiter is created",
    )
    rl_timeout: Duration = Field(
        2 * 10**9,
        description="a rate limiter with no frame sent for this long and "
        "nothing waiting is deleted; the next frame starts again at R0 ([D] 2ms)",
    )
    tag_bytes: int = Field(
        0,
        ge=0,
        le=64,
        description="bytes a rate-discovery tag adds, counted as signalling "
        "overhead (not added to the frame on the wire; model reference §12 G2: 0)",
    )
    efecn: bool = Field(
        False,
        description="E-FECN add-on ([PROPOSED], model reference §5.6): above qsc a data arrival "
        "sends its source (once per T) a backward message with the port's rate",
    )
    qsc: Size = Field(83_200, description="E-FECN severe-congestion threshold Qsc ([D] 1300 pages = 83.2KB)")
    rl_scope: Literal["pair", "transfer"] = Field(
        "pair",
        description="what one rate limiter belongs to: 'pair' = the (source, destination) pair, kept across "
        "its transfers until rl_timeout; 'transfer' = one transfer ([D]'s 'flow'): each transfer starts at R0 with a "
        "probe (nic.queues = 'fifo'; with a send queue per transfer, each has its own limiter anyway)",
    )

    @model_validator(mode="after")
    def _qsc(self):
        if self.efecn and self.qsc <= self.qeq:
            raise ValueError("qsc must be > qeq when efecn is on")
        return self


def to_ir(params: Params) -> dict[str, Any]:
    """Every engine parameter in base units (see ``cm/fecn.rs`` ``Params``)."""
    p = params
    return {
        "switch": switch_ir(p),
        "tagging_rate": p.tagging_rate,
        "probe_rule": p.probe_rule,
        "rl_timeout_ps": p.rl_timeout,
        "tag_bytes": p.tag_bytes,
        "efecn": p.efecn,
        "qsc_bytes": p.qsc,
        "rl_scope": p.rl_scope,
    }


def queue_thresholds(params: Params) -> list[tuple[str, int, str, str]]:
    """Qeq (``_explicit_rate``) and, with E-FECN on, Qsc (``cm/fecn.rs``: a message while Q > Qsc)."""
    out = _explicit_rate.queue_thresholds(params)
    if params.efecn:
        out.append(
            (
                "qsc",
                params.qsc,
                "E-FECN severe-congestion threshold Qsc",
                "E-FECN (cm.params.efecn = true) never sends its backward message",
            )
        )
    return out

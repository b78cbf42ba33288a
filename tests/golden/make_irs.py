"""Write the IRs of the golden-trace cases (TESTING.md T5) to tests/golden/<case>.ir.json.

The traces (tests/golden/<case>.trace) are checked by crates/cnsim-core/src/golden_tests.rs, which reads
these IRs, so the engine test needs no Python. Rerun this script only when the IR format changes
(then regenerate the traces: CNSIM_UPDATE_GOLDEN=1 cargo test --release -p cnsim-core --lib golden,
and say in the commit why they changed):

    .venv/bin/python tests/golden/make_irs.py

tests/test_golden_irs.py checks that the committed IRs have the compiler's format (the same fields).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import cnsim.api as api
from cnsim import schemes
from cnsim.compile.compiler import compile_ir
from cnsim.exceptions import ConfigWarning

ROOT = Path(__file__).resolve().parents[2]

# case: (scenario, overrides) — short runs, each exercising different mechanisms
CASES = {
    # global PAUSE on a 4-to-1 fan-in: XOFF/XON, PAUSE refresh, saturated sources
    "fan-in-4-pause": (
        "baseline/fan-in-4.toml",
        {
            "run.duration": "100us",
            "flow_control.mode": "global",
            "flow_control.high": "100KB",
            "flow_control.low": "90KB",
        },
    ),
    # the same over links without delay: a PAUSE frame arrives as its transmission ends, so the
    # arrivals of a batch of XOFF/XON ends (crate::event::EventQueue::push_batched) go before the rest
    # of the batch
    "fan-in-4-pause-no-delay": (
        "baseline/fan-in-4.toml",
        {
            "run.duration": "100us",
            "flow_control.mode": "global",
            "flow_control.high": "100KB",
            "flow_control.low": "90KB",
            "defaults.link_delay": 0,
        },
    ),
    # BCN on the seed-000 symmetric topology: sampling, feedback messages, rate limiters
    "symmetric-bcn": ("seed-000/symmetric-bcn.toml", {"run.duration": "200us"}),
    # TCP NewReno incast: segments, ACKs, retransmission and delayed-ACK timers
    "tcp-newreno-4": ("baseline/tcp-newreno-4.toml", {"run.duration": "200us"}),
    # FECN on CN-SIM with the hotspot stopping h1 at 0.5 ms: probes, replies, CP ticks, service rate
    "cnsim-fecn-hs0": (
        "seed-003/cnsim-1hop-fecn-hs0-nopause.toml",
        {"run.duration": "1ms", "hotspot.0.start": "0.5ms"},
    ),
    # k = 4 fat tree, WebSearch flows under DCQCN with PFC: ECMP, ECN marking, CNPs, per-priority pause
    # (with the FIFO per host pair the trace was made with; a queue per transfer: the next cases)
    "fat-tree-dcqcn-pfc": (
        "datacenter/fat-tree-k4-websearch-dcqcn-pfc.toml",
        {"run.duration": "1ms", "nic.queues": "fifo"},
    ),
    # a send queue per transfer (issue 31): HPCC windows per queue, INT echoes, queues opened and closed
    "fat-tree-hpcc-queues": ("datacenter/fat-tree-k4-websearch50-hpcc.toml", {"run.duration": "1ms"}),
    # a TCP connection per transfer: DCTCP incast and background transfers, each its own connection
    "leaf-spine-tcp-queues": ("datacenter/leaf-spine-incast.toml", {"run.duration": "80us"}),
}


def ir_text(case: str) -> str:
    """The IR file of a golden case as this build's compiler writes it."""
    scenario, overrides = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        sc = api.resolve(ROOT / "scenarios" / scenario, seed=1, overrides={**overrides, "run.warmup": 0})
    return json.dumps(compile_ir(sc), sort_keys=True, separators=(",", ":")) + "\n"


def main() -> None:
    out = ROOT / "tests" / "golden"
    out.mkdir(exist_ok=True)
    for case in CASES:
        path = out / f"{case}.ir.json"
        path.write_text(ir_text(case))
        print(f"wrote {path.relative_to(ROOT)}")
    # every scheme's default parameters as the engine reads them (net/queues.rs tests build IRs with them)
    params = {
        name: {"scheme": name, "params": s.to_ir(s.params())}
        for name, s in sorted(schemes.SCHEMES.items())
        if name != "none"
    }
    dcqcn = schemes.get("dcqcn")
    params["dcqcn-mellanox"] = {"scheme": "dcqcn", "params": dcqcn.to_ir(dcqcn.params(variant="mellanox"))}
    path = out / "cm-params.json"
    path.write_text(json.dumps(params, sort_keys=True, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

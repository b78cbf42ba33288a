"""Fingerprint regression: small reference runs whose results must not change unnoticed.

Each case is a shipped scenario, a few ``--set`` overrides (a short run) and a seed. Two fingerprints
are taken from the engine's own output (no pandas, no files):

* ``fp_wire`` — the summary without ``wall_s`` and ``events``: what crossed the network (frames,
  bytes, drops, per-flow and per-link figures, control messages, PAUSE, FCT, queue statistics). It
  changes only when the traffic changes; an event added for bookkeeping or a new observation leaves
  it alone.
* ``fp_full`` — the summary without ``wall_s`` (so with ``events``) and every table the engine
  returns, column by column, bytes as handed over.

Both are the first 16 hex digits of a SHA-256. The expected values live in
``tests/fingerprints.csv`` (``scenario, args, seed, sim_time_limit, fp_full, fp_wire``);
``cnsim selftest --update-fingerprints`` rewrites it and lists the rows that changed. A change of
``fp_wire`` means the model's trajectory changed: say why in the commit (INET's workflow).
The engine's transcendental functions come from the pure-Rust ``libm`` crate (``rng.rs``) and the
rest is IEEE arithmetic, so the values do not depend on the platform's C maths library.
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from cnsim import api
from cnsim.exceptions import ConfigError, ConfigWarning

FIELDS = ("scenario", "args", "seed", "sim_time_limit", "fp_full", "fp_wire")

# (scenario under scenarios/, overrides, seeds, sim time limit): single bottleneck, parking lot,
# symmetric / asymmetric topologies of the seeds, PAUSE on and off, every scheme, TCP, a fat tree
CASES: tuple[tuple[str, dict[str, Any], tuple[int, ...], str], ...] = (
    ("baseline/fan-in-4.toml", {}, (1, 2), "5ms"),
    (
        "baseline/fan-in-4.toml",
        {"flow_control.mode": "global", "flow_control.high": "100KB", "flow_control.low": "90KB"},
        (1,),
        "5ms",
    ),
    ("baseline/md1.toml", {}, (1, 2), "5ms"),
    ("baseline/tcp-newreno-4.toml", {"run.warmup": 0}, (1,), "5ms"),
    ("baseline/dctcp-4.toml", {"run.warmup": 0}, (1,), "5ms"),
    ("seed-000/symmetric-bcn.toml", {}, (1, 2), "5ms"),
    ("seed-000/asymmetric-bcn.toml", {}, (1,), "5ms"),
    ("seed-000/symmetric-becn-300us.toml", {}, (1,), "5ms"),
    ("seed-000/parking-lot-fecn.toml", {}, (1,), "5ms"),
    ("seed-000/parking-lot-qcn.toml", {}, (1,), "5ms"),
    ("seed-000/symmetric-dcqcn.toml", {}, (1,), "5ms"),
    ("seed-001/fan-in-100-bcnm-25k.toml", {}, (1,), "10ms"),  # traffic from 5 ms
    ("seed-001/fan-in-100-bcnz-150k.toml", {}, (1,), "10ms"),
    ("seed-002/mixed-tcp-udp-bcn.toml", {"run.warmup": 0}, (1,), "5ms"),
    ("seed-003/cnsim-1hop-ecm-hs0.5-pause.toml", {"run.warmup": 0}, (1, 2), "5ms"),
    ("seed-003/cnsim-1hop-fecn-hs0-nopause.toml", {"run.warmup": 0}, (1,), "5ms"),
    ("seed-003/cnsim-1hop-fecn-hs0-nopause.toml", {"run.warmup": 0, "observe.fct": False}, (1,), "5ms"),
    ("seed-003/cnsim-1hop-none-hs2-pause.toml", {"run.warmup": 0}, (1,), "5ms"),
    ("seed-004/og-multistage-bcn-q5.toml", {"run.warmup": 0}, (1,), "55ms"),  # hotspot traffic from 50 ms
    ("seed-004/og-multistage-qcn-selfinc.toml", {"run.warmup": 0}, (1,), "55ms"),
    ("datacenter/fat-tree-k4-websearch-dcqcn-pfc.toml", {"run.warmup": 0}, (1,), "2ms"),
    ("datacenter/fat-tree-k4-websearch-hpcc.toml", {"run.warmup": 0}, (1,), "2ms"),
    ("datacenter/leaf-spine-incast.toml", {"run.warmup": 0}, (1,), "2ms"),
)


@dataclass(frozen=True)
class Row:
    """One fingerprinted run: its inputs and its two fingerprints."""

    scenario: str
    args: str
    seed: int
    sim_time_limit: str
    fp_full: str
    fp_wire: str

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.scenario, self.args, self.seed, self.sim_time_limit)


def _args(overrides: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in overrides.items())


def _digest(h: Any) -> str:
    return h.hexdigest()[:16]


def fingerprints(summary_json: str, tables: dict[str, Any]) -> tuple[str, str]:
    """``(fp_full, fp_wire)`` of one run from the engine's ``(summary JSON, tables)``."""
    summary = json.loads(summary_json)
    summary.pop("wall_s", None)
    full = hashlib.sha256(json.dumps(summary, sort_keys=True).encode())
    summary.pop("events", None)
    wire = hashlib.sha256(json.dumps(summary, sort_keys=True).encode())
    for name in sorted(tables):
        full.update(f"\0table {name}".encode())
        for column in sorted(tables[name]):
            value = tables[name][column]
            full.update(f"\0{column}".encode())
            if isinstance(value, tuple):  # (dtype, raw little-endian bytes)
                full.update(value[0].encode() + b"\0" + bytes(value[1]))
            else:  # names
                full.update("\0".join(map(str, value)).encode())
    return _digest(full), _digest(wire)


def run_case(root: Path, scenario: str, overrides: dict[str, Any], seed: int, limit: str) -> Row:
    """Run one case on the engine (no files written) and fingerprint it."""
    import warnings

    with warnings.catch_warnings():  # the shipped scenarios' own warnings are not the test's business
        warnings.simplefilter("ignore", ConfigWarning)
        sc = api.resolve(root / scenario, seed, {**overrides, "run.duration": limit})
    summary_json, tables = api.core().run(json.dumps(api.compile_ir_once(sc)), None, 0)
    fp_full, fp_wire = fingerprints(summary_json, tables)
    return Row(scenario, _args(overrides), seed, limit, fp_full, fp_wire)


def compute(root: Path, quick: bool = False, log: Callable[[str], None] | None = None) -> list[Row]:
    """Every case (``quick``: the first seed of each) run and fingerprinted, in the order of CASES."""
    rows = []
    for scenario, overrides, seeds, limit in CASES:
        for seed in seeds[:1] if quick else seeds:
            rows.append(run_case(root, scenario, overrides, seed, limit))
            if log is not None:
                log(f"{scenario} {rows[-1].args} seed {seed}: {rows[-1].fp_full} {rows[-1].fp_wire}".replace("  ", " "))
    return rows


def is_fingerprint_file(path: Path) -> bool:
    """Whether ``path`` starts with the fingerprint CSV's header (``--update-fingerprints`` replaces no
    other file)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.readline().rstrip("\r\n") == ",".join(FIELDS)


def read(path: Path) -> list[Row]:
    """The rows of a fingerprint file (a ConfigError naming ``--file`` if it is not one)."""

    if not is_fingerprint_file(path):
        raise ConfigError.single(
            "--file", f"not a fingerprint file (its first line must be {','.join(FIELDS)})", str(path)
        )
    with open(path, newline="", encoding="utf-8") as f:
        try:
            return [
                Row(r["scenario"], r["args"], int(r["seed"]), r["sim_time_limit"], r["fp_full"], r["fp_wire"])
                for r in csv.DictReader(f)
            ]
        except (TypeError, ValueError) as exc:  # a short row, a seed that is not a number
            raise ConfigError.single("--file", f"malformed row ({exc})", str(path)) from None


def write(path: Path, rows: list[Row]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(FIELDS)
        for r in rows:
            w.writerow([r.scenario, r.args, r.seed, r.sim_time_limit, r.fp_full, r.fp_wire])


def compare(expected: list[Row], got: list[Row], complete: bool = True) -> list[str]:
    """One line per difference: a changed fingerprint (saying which), a case missing on either side
    (``complete``: every row of ``expected`` should have been run)."""
    want = {r.key: r for r in expected}
    lines = []
    for r in got:
        e = want.pop(r.key, None)
        label = f"{r.scenario} [{r.args}] seed {r.seed} {r.sim_time_limit}".replace(" []", "")
        if e is None:
            lines.append(f"{label}: not in the fingerprint file")
            continue
        changed = [
            f"{k} {getattr(e, k)} -> {getattr(r, k)}" for k in ("fp_wire", "fp_full") if getattr(e, k) != getattr(r, k)
        ]
        if changed:
            lines.append(f"{label}: " + ", ".join(changed))
    if complete:
        lines += [
            f"{r.scenario} [{r.args}] seed {r.seed}: in the fingerprint file but no longer a case"
            for r in want.values()
        ]
    return lines

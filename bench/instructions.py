#!/usr/bin/env python3
"""Instruction counts of the engine on three reference workloads (TESTING.md T17).

Wall time on this shared 2-core VM moves by 30 % between processes (docs/performance.md); the
number of instructions the event loop executes does not. This script builds the Rust runner
(`cargo build --release -p cnsim-core --example run_ir`), writes the IRs of fan-in-4, fan-in-100
and fan-in-100 under BCN (the `make bench` workloads, default observation), runs each under
`valgrind --tool=cachegrind --cache-sim=no` and compares the instruction counts with
`bench/instructions.json`: more than 5 % above the stored count fails (exit 1). `--update` stores
this build's counts. The counts belong to the pinned toolchain (rust-toolchain.toml): a new
compiler is a reason to update them, and the commit says so.

    .venv/bin/python bench/instructions.py [--update]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = HERE / "instructions.json"
TOLERANCE = 0.05
CASES = {  # name: (senders, rate per sender Gb/s, simulated ms, scheme)
    "fan-in-4": (4, 5.0, 100.0, "none"),
    "fan-in-100": (100, 0.2, 200.0, "none"),
    "fan-in-100, bcn": (100, 0.2, 200.0, "bcn"),
}


def build_runner() -> Path:
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "cnsim-core", "--example", "run_ir"], cwd=ROOT, check=True
    )
    return ROOT / "target" / "release" / "examples" / "run_ir"


def write_irs(folder: Path) -> dict[str, Path]:
    sys.path.insert(0, str(HERE))
    from cnsim import api
    from cnsim.exceptions import ConfigWarning
    from cnsim_driver import fan_in

    paths = {}
    for name, (n, rate, ms, scheme) in CASES.items():
        data = fan_in(n, rate, ms)
        data["cm"] = {"scheme": scheme}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConfigWarning)
            ir = api.compile_ir_once(api.resolve(data))
        paths[name] = folder / (re.sub(r"\W+", "-", name) + ".json")
        paths[name].write_text(json.dumps(ir))
    return paths


def instructions(runner: Path, ir: Path) -> int:
    proc = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            str(runner),
            str(ir),
            "--summary",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
    )
    m = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    if m is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{proc.stderr[-2000:]}")
    return int(m.group(1).replace(",", ""))


def measure() -> dict[str, int]:
    runner = build_runner()
    with tempfile.TemporaryDirectory() as d:
        return {name: instructions(runner, ir) for name, ir in write_irs(Path(d)).items()}


def compare(counts: dict[str, int], baseline: dict[str, int]) -> list[str]:
    """One line per case over the tolerance or missing from the baseline."""
    bad = []
    for name, n in counts.items():
        base = baseline.get(name)
        if base is None:
            bad.append(f"{name}: no stored count")
        elif n > base * (1 + TOLERANCE):
            bad.append(f"{name}: {n:,} instructions, {n / base - 1:+.1%} over the stored {base:,}")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", action="store_true", help="store this build's counts in bench/instructions.json")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts", file=sys.stderr)
        return 2
    counts = measure()
    stored = json.loads(BASELINE.read_text())["instructions"] if BASELINE.exists() else {}
    for name, n in counts.items():
        base = stored.get(name)
        print(f"{name:<18} {n:>15,}" + (f"  {n / base - 1:+.2%} vs stored {base:,}" if base else ""))
    if args.update:
        BASELINE.write_text(
            json.dumps({"toolchain": _toolchain(), "tolerance": TOLERANCE, "instructions": counts}, indent=2) + "\n"
        )
        print(f"wrote {BASELINE.relative_to(ROOT)}")
        return 0
    bad = compare(counts, stored)
    for line in bad:
        print(line, file=sys.stderr)
    return 1 if bad else 0


def _toolchain() -> str:
    return subprocess.run(["rustc", "--version"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    sys.exit(main())

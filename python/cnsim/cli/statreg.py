"""Statistical regression check (cnsim statreg) for a change meant to alter trajectories.

Usage (from the repository root)::

    cnsim statreg record before.json [--replications 20] [--first-seed 1]
    # ... switch to the new build (make build) ...
    cnsim statreg check before.json [--replications 20] [--first-seed 1001] [--alpha 0.01] [--set KEY=VALUE ...]

``record`` samples the reference metrics of cnsim.experiments.statreg.REFERENCE with the current build; ``check`` reruns
the cases stored in the file (with ``--set`` overrides on every case, e.g. to show that a model change is
detected) on seeds disjoint from the recorded ones, prints one row per metric and test and exits 1 when any
metric differs (Welch / Levene, Holm over all tests), 0 when none does, 2 on bad input. See docs/statreg.md.
"""

from __future__ import annotations

import argparse
import os
import sys

from cnsim.compile.loader import parse_value
from cnsim.exceptions import CnsimError, ConfigError
from cnsim.experiments import statreg


def progress(case: statreg.Case, seconds: float) -> None:
    print(f"  {case.name}: {seconds:.1f} s", file=sys.stderr, flush=True)


def record(args: argparse.Namespace) -> int:
    # checked before the runs: a file that is not a samples file is never replaced, --force or not
    statreg.Samples.check_target(args.out)
    if os.path.exists(args.out) and not args.force:
        raise ConfigError.single(str(args.out), "exists; give another file or --force to replace those samples")
    samples = statreg.collect(statreg.REFERENCE, args.replications, args.first_seed, progress=progress)
    samples.save(args.out)
    print(
        f"{len(samples.values)} metrics x {len(samples.seeds)} replications (seeds {samples.seeds[0]}.."
        f"{samples.seeds[-1]}, build {samples.build}) -> {args.out}"
    )
    return 0


def check(args: argparse.Namespace) -> int:
    before = statreg.Samples.load(args.before)
    overrides = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError.single(f"--set {item}", "expected KEY=VALUE, e.g. defaults.buffer.size=140KB")
        overrides[key.strip()] = parse_value(value.strip())
    seeds = range(args.first_seed, args.first_seed + args.replications)
    if set(seeds) & set(before.seeds):
        # the same seed on an unchanged model repeats the same run: the samples would not be independent
        raise ConfigError.single(
            "--first-seed",
            f"seeds {seeds.start}..{seeds.stop - 1} overlap the recorded seeds {before.seeds[0]}..{before.seeds[-1]}",
            args.first_seed,
        )
    after = statreg.collect(before.cases, args.replications, args.first_seed, overrides, progress=progress)
    result = statreg.compare(before.values, after.values, args.alpha)
    print(
        f"before: build {before.build}, seeds {before.seeds[0]}..{before.seeds[-1]}"
        + (f", --set {before.overrides}" if before.overrides else "")
    )
    print(
        f"after:  build {after.build}, seeds {after.seeds[0]}..{after.seeds[-1]}"
        + (f", --set {after.overrides}" if after.overrides else "")
    )
    print(result.table())
    return 0 if result.ok else 1


def at_least_2(text: str) -> int:
    n = int(text)
    if n < 2:
        raise argparse.ArgumentTypeError("at least 2 (a variance needs two values; T13 asks for 20)")
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="cnsim statreg", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="sample the reference metrics with this build into a JSON file")
    rec.add_argument("out", help="the samples file to write")
    rec.add_argument("--replications", type=at_least_2, default=20)
    rec.add_argument("--first-seed", type=int, default=1)
    rec.add_argument("--force", action="store_true", help="replace OUT if it is a samples file written before")
    rec.set_defaults(run=record)
    chk = sub.add_parser("check", help="sample again with this build and compare with a recorded file")
    chk.add_argument("before", help="a file written by `record`")
    chk.add_argument("--replications", type=at_least_2, default=20)
    chk.add_argument(
        "--first-seed",
        type=int,
        default=1001,
        help="first seed of the new runs (default 1001: disjoint from record's default 1..20)",
    )
    chk.add_argument("--alpha", type=float, default=statreg.ALPHA, help="family-wise error rate (default 0.01)")
    chk.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override applied to every reference case (repeatable)",
    )
    chk.set_defaults(run=check)
    args = ap.parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:  # also cnsim's RunInterrupted
        return 130
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.filename}: {exc.strerror}" if exc.filename else f"error: {exc}", file=sys.stderr)
        return 2
    except CnsimError as exc:  # a broken invariant in the new build: the check fails
        print(f"error: {exc}", file=sys.stderr)
        return 1

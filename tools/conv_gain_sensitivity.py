"""Seed 002 S-CONV 10 Gb/s: settling time of designs (a)-(d) against the unprinted BCN gains (spec §12 C5).

[C] does not print Gi and Gd; the scenarios use [A]'s (Gi = 0.53333, Gd = 2.6667e-4, Fb in 64-B pages). This scales
both and prints the study's settle_ms metric (queue sw1 -> sw2 within 24 KB +- 50 %, 0.5-ms bins, to the end of the
run) for seeds 1-3.

Usage: .venv/bin/python tools/conv_gain_sensitivity.py GI_MULTS [GD_MULT [DURATION]]
e.g.   .venv/bin/python tools/conv_gain_sensitivity.py 0.042667,0.0625,0.125,0.25,0.5,1,2 1
"""

import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor

import cnsim
from cnsim.experiments.series import SeriesMetric, value

D = {"a": 5.0, "b": 6.6, "c": 1.9, "d": 4.1}


def one(args):
    design, mult, seed, gd_mult, dur = args
    with tempfile.TemporaryDirectory() as d:
        cnsim.run(
            f"scenarios/seed-002/symmetric-10g-bcn-{design}.toml",
            out=d,
            seed=seed,
            overrides={"cm.params.gi": 0.53333 * mult, "cm.params.gd": 2.6667e-4 * gd_mult, "run.duration": dur},
            progress=None,
            plots=False,
            force=True,
        )
        m = SeriesMetric(kind="settle_ms", queue="sw1>sw2", level=24000, tol=0.5, bin=0.0005)
        return value(d, m)


if __name__ == "__main__":
    mults = [float(x) for x in sys.argv[1].split(",")]
    gdm = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    dur = sys.argv[3] if len(sys.argv) > 3 else "100ms"
    jobs = [(d, m, s, gdm, dur) for m in mults for d in "abcd" for s in (1, 2, 3)]
    with ProcessPoolExecutor(2) as ex:
        res = list(ex.map(one, jobs))
    r = dict(zip(jobs, res))
    print(f"gd x{gdm} dur {dur}; settle ms per design (seeds 1-3), [C] a 5.0 b 6.6 c 1.9 d 4.1")
    for m in mults:
        print(
            f"gi x{m:<6}",
            "  ".join(f"{d}: " + "/".join(f"{r[(d, m, s, gdm, dur)]:.1f}" for s in (1, 2, 3)) for d in "abcd"),
        )

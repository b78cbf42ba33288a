"""Realised load of CN-SIM (no hotspot, no CM, PAUSE off) per ON-time distribution, seeds 1-3 (spec §12 R2).

    .venv/bin/python tools/cnsim_load.py      # from the repository root; ~1 min

Load = bytes sent / (10 hosts x 10 Gb/s x run time); docs/validation/cnsim-traffic.md, "Shifted Pareto".
"""
import cnsim
import statistics
base = "scenarios/seed-003/cnsim-1hop-none-nohs-nopause.toml"
cases = [("pareto (spec D2: xm 1.2us, alpha 1.027)", {})]
for a in (1.2, 1.25, 1.3):
    cases.append((f"lomax alpha {a}", {"traffic.0.distribution": "lomax", "traffic.0.alpha": a, "traffic.0.xm": None}))
for label, ov in cases:
    loads, flows, drops = [], [], []
    for seed in (1, 2, 3):
        s = cnsim.run(base, seed=seed, overrides=ov, plots=False).summary
        loads.append(s["bytes"]["sent"] * 8 / (10 * 10e9 * s["sim_time_s"]))
        flows.append(s["fct"]["count"] + s["fct"]["bad_flows"] + s["fct"]["unfinished"])
        drops.append(s["frames"]["dropped"])
    print(f"{label:42s} load {statistics.mean(loads)*100:5.1f} % ({min(loads)*100:.1f}-{max(loads)*100:.1f})  flows {statistics.mean(flows):8.0f}  drops {statistics.mean(drops):9.0f}")

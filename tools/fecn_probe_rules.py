"""Spec §12 R7: FECN overhead, flows and FCT of seed 003 under each probe rule (mean of seeds 1-3).

Usage: .venv/bin/python tools/fecn_probe_rules.py per_flow,per_source,below_line,source_periodic
Prints: rule, PAUSE setting, hotspot, [D]'s overhead (Mb/s), cnsim overhead (Mb/s), completed flows, FCT mean (µs).
"""

import statistics
import sys

import cnsim

PUBLISHED = {("pause", "nohs"): 2.5, ("pause", "hs2"): 3.5, ("pause", "hs0.5"): 3.6, ("pause", "hs0"): 1.7,
             ("nopause", "nohs"): 3.0, ("nopause", "hs2"): 3.1, ("nopause", "hs0.5"): 3.1, ("nopause", "hs0"): 2.6}
SEEDS = (1, 2, 3)


def main(rules: list[str]) -> None:
    for rule in rules:
        for (pz, hs), pub in PUBLISHED.items():
            over, flows, fct = [], [], []
            for seed in SEEDS:
                s = cnsim.run(f"scenarios/seed-003/cnsim-1hop-fecn-{hs}-{pz}.toml", seed=seed,
                              overrides={"cm.params.probe_rule": rule}).summary
                over.append(s["control"]["overhead_bps"] / 1e6)
                flows.append(s["fct"]["count"])
                fct.append(s["fct"]["mean_us"] or float("nan"))
            print(rule, pz, hs, pub, round(statistics.mean(over), 2), round(statistics.mean(flows)),
                  round(statistics.mean(fct), 1), flush=True)


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else ["per_flow", "per_source", "below_line", "source_periodic"])

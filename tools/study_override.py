"""Run a seed study with settings overridden in the sweeps of some schemes only, and print its verdict counts.

``cnsim reproduce``'s overrides reach every sweep of a study; a scheme parameter (``cm.params.X``) would then fail
validation in the sweeps of the other schemes. This applies the overrides to the sweeps whose scheme is listed.

Usage: .venv/bin/python tools/study_override.py STUDY OUT REPLICATIONS SCHEMES KEY=VALUE...
e.g.   .venv/bin/python tools/study_override.py seed-003 /tmp/s3 4 ecm,fecn cm.params.rl_scope=transfer
(REPLICATIONS 0 = the study's own; OUT/STUDY/study.json holds the cells.)
"""

import json
import sys

import cnsim.experiments.reproduce as rep


def main(argv: list[str]) -> None:
    study, out, reps, schemes = argv[0], argv[1], int(argv[2]) or None, set(argv[3].split(","))
    overrides = dict(a.split("=", 1) for a in argv[4:])
    plain = rep.sweep_spec

    def sweep_spec(study_, sw, root, quick, _overrides=None, replications=None):
        return plain(study_, sw, root, quick, overrides if sw.scheme in schemes else None, replications)

    rep.sweep_spec = sweep_spec
    result = rep.reproduce(study, out, jobs=2, replications=reps, progress=False)
    print(json.dumps(result["counts"]), "failed:", result["failed"])


if __name__ == "__main__":
    main(sys.argv[1:])

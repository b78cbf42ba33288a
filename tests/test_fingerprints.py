"""T4 — fingerprint regression: the reference runs of `cnsim selftest` match tests/fingerprints.csv.

A failure here means results changed. If the change is intended, run
`cnsim selftest --update-fingerprints`, which rewrites the file and lists the changed rows, and say
in the commit why (a changed `fp_wire` means the traffic itself changed)."""

import shutil

from cnsim.experiments import selftest as st
from conftest import ROOT, needs_core

pytestmark = needs_core
SC = ROOT / "scenarios"
FILE = ROOT / "tests" / "fingerprints.csv"


def test_every_reference_run_matches_its_committed_fingerprints():
    expected = st.read(FILE)
    assert len(expected) == sum(len(seeds) for *_, seeds, _ in st.CASES) >= 20
    assert st.compare(expected, st.compute(SC)) == []


def test_fp_wire_ignores_observation_and_both_follow_the_seed():
    """Switching a series off changes what is recorded, not the traffic: fp_full moves, fp_wire does not
    (so an observation-only change is told apart from a model change). A different seed changes both."""
    case = ("seed-003/cnsim-1hop-ecm-hs0.5-pause.toml", {"run.warmup": 0}, 1, "3ms")
    base = st.run_case(SC, *case)
    quiet = st.run_case(SC, case[0], {**case[1], "observe.queue_ts": False}, 1, "3ms")
    assert quiet.fp_wire == base.fp_wire and quiet.fp_full != base.fp_full
    other = st.run_case(SC, case[0], case[1], 2, "3ms")
    assert other.fp_wire != base.fp_wire and other.fp_full != base.fp_full


def test_cli_exit_1_names_the_changed_row_and_update_lists_it(cli, tmp_path):
    f = tmp_path / "fp.csv"
    rows = st.read(FILE)
    bad = rows[0].__class__(**{**rows[0].__dict__, "fp_wire": "0" * 16})
    st.write(f, [bad, *rows[1:]])
    r = cli(["selftest", "--file", f])
    assert (
        r.exit_code == 1
        and f"{bad.scenario} seed {bad.seed} {bad.sim_time_limit}: fp_wire 0000000000000000 ->" in r.stderr
    )
    r = cli(["selftest", "--update-fingerprints", "--file", f])
    assert r.exit_code == 0 and "1 changed" in r.stdout and st.read(f) == rows
    shutil.copy(FILE, tmp_path / "same.csv")
    assert cli(["selftest", "--quick", "--file", tmp_path / "same.csv"]).exit_code == 0


def test_update_never_replaces_a_file_that_is_not_a_fingerprint_file(cli, tmp_path):
    notes = tmp_path / "notes.csv"
    notes.write_text("my,own,data\n1,2,3\n")
    r = cli(["selftest", "--update-fingerprints", "--file", notes])
    assert r.exit_code == 2 and "--file" in r.stderr and "not a fingerprint file" in r.stderr
    assert notes.read_text() == "my,own,data\n1,2,3\n"
    bad = tmp_path / "bad.csv"
    bad.write_text(",".join(st.FIELDS) + "\nbaseline/md1.toml,,one,5ms,x,y\n")
    r = cli(["selftest", "--quick", "--file", bad])
    assert r.exit_code == 2 and "malformed row" in r.stderr and "Traceback" not in r.stderr

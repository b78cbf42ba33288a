"""RDMA loss recovery on a fabric without PFC (issue 36): go-back-N and selective repeat complete every transfer
under loss (buffer overflow, random link outages), keep frame conservation, go-back-N resends more than selective
repeat, runs are deterministic, and bad combinations are refused with the field named."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import warnings

import cnsim
import pytest
from cnsim.exceptions import ConfigWarning
from conftest import ROOT, needs_core

LOSSY = ROOT / "scenarios/datacenter/lossy-roce-incast-gbn.toml"


def run(sc=LOSSY, **overrides):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        return cnsim.run(sc, overrides=overrides, plots=False)


def conserved(s: dict) -> None:
    """Every frame sent is delivered, dropped or in flight; every one generated was sent or waits."""
    f = s["frames"]
    assert s["conservation"]["ok"]
    assert f["sent"] == f["delivered"] + f["dropped"] + f["in_flight"]
    assert f["generated"] == f["sent"] + f["host_queued"]


def complete(s: dict, transfers: int) -> None:
    """Every transfer completed; none is bad (a lost frame did not stay lost)."""
    assert s["fct"]["count"] == transfers and s["fct"]["bad_flows"] == 0 and s["fct"]["unfinished"] == 0
    assert s["rdma"]["transfers_in_progress"] == 0


# 8 senders x 10 rounds (every 500 us in 5 ms) of 64 KB
TRANSFERS = 80


@needs_core
@pytest.mark.parametrize("mode", ["go_back_n", "selective_repeat"])
def test_every_transfer_completes_under_buffer_overflow(mode):
    s = run(**{"rdma.loss_recovery": mode}).summary
    conserved(s)
    complete(s, TRANSFERS)
    r = s["rdma"]
    assert s["frames"]["dropped"] > 1000 and r["retransmitted_frames"] >= s["frames"]["dropped"]
    assert r["nacks"] > 0 and r["acks"] > 0 and r["loss_recovery"] == mode
    # each transfer's 43 frames (64 000 B in 1500-B frames) reached the sink in order once
    assert s["frames"]["delivered"] - r["discarded_frames"] == TRANSFERS * 43


@needs_core
def test_without_recovery_the_losses_stay():
    s = run(**{"rdma.loss_recovery": "none"}).summary
    conserved(s)
    assert "rdma" not in s and s["fct"]["bad_flows"] > TRANSFERS / 2


@needs_core
def test_go_back_n_resends_more_than_selective_repeat():
    gbn = run(**{"rdma.loss_recovery": "go_back_n"}).summary["rdma"]
    sr = run(**{"rdma.loss_recovery": "selective_repeat"}).summary["rdma"]
    # go-back-N resends every frame after a hole, and the receiver discards what came after it
    assert gbn["retransmitted_bytes"] > 1.1 * sr["retransmitted_bytes"]
    assert gbn["discarded_frames"] > 0 and sr["discarded_frames"] < gbn["discarded_frames"]


@needs_core
@pytest.mark.parametrize("mode", ["go_back_n", "selective_repeat"])
def test_random_link_outages_lose_frames_and_every_transfer_still_completes(mode):
    # the sink's link goes down for 5-30 us at 6 random instants: frames on it are lost (tail losses
    # among them, repaired by the timeout); a large buffer, so that these are the only losses
    rng = random.Random(36)
    events = []
    for t in sorted(rng.uniform(0.1e-3, 4.0e-3) for _ in range(6)):
        events += [
            {"at": f"{t * 1e6:.3f}us", "link": ["sw1", "sink"], "state": "down"},
            {"at": f"{(t + rng.uniform(5e-6, 30e-6)) * 1e6:.3f}us", "link": ["sw1", "sink"], "state": "up"},
        ]
    from cnsim.compile.loader import load_scenario

    sc = load_scenario(LOSSY).model_dump(mode="json", exclude_none=True)
    sc["events"] = events
    sc["defaults"]["buffer"]["size"] = "10MB"
    sc["rdma"]["loss_recovery"] = mode
    s = run(sc).summary
    conserved(s)
    assert s["drops"]["by_reason"]["link_down"] > 0
    assert s["drops"]["by_reason"]["egress_full"] == 0
    complete(s, TRANSFERS)
    assert s["rdma"]["timeouts"] > 0


@needs_core
def test_a_run_with_recovery_is_deterministic():
    a, b = (run(**{"rdma.loss_recovery": "go_back_n"}).summary for _ in range(2))
    for d in (a, b):
        d.pop("wall_s", None)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"nic.queues": "fifo"}, "rdma.loss_recovery"),
        ({"rdma.timeout": "0s"}, "rdma"),
        ({"rdma.loss_recovery": "go_back_m"}, "rdma.loss_recovery"),
    ],
)
def test_bad_recovery_settings_exit_2_naming_the_field(overrides, field, tmp_path):
    args = [a for k, v in overrides.items() for a in ("--set", f"{k}={v}")]
    p = subprocess.run(
        [sys.executable, "-m", "cnsim", "run", str(LOSSY), "-o", str(tmp_path / "out"), "--quiet", *args],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2, p.stderr
    assert field in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists()

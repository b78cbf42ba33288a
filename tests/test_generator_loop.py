"""Open- and closed-loop Pareto ON/OFF sources (`pareto_onoff.loop`, `nic_buffer`; model reference §12 D9).

Closed loop (the default) starts a source's OFF period when its transfer has left the NIC, so a source
held by PAUSE or a rate limiter generates fewer transfers. Open loop starts it when the ON period has
passed in time: generation no longer depends on the network. A finite NIC buffer sits between the two:
the source also waits while more of its frames than fit wait in the host.
"""

from pathlib import Path

import cnsim
import pytest
from cnsim.scenario.spec import ParetoOnOff
from pydantic import ValidationError

ROOT = Path(__file__).resolve().parents[1]
SEED3 = ROOT / "scenarios" / "seed-003"
SHORT = {"run.duration": "20ms"}
# the 0-Gb/s hotspot from 10 ms: every source sending to h1 is paused (selective PAUSE) or stuck
HS0 = SHORT | {"hotspot.0.start": "5ms", "hotspot.0.end": "20ms"}


def generated(r) -> int:
    f = r.summary["fct"]
    return f["count"] + f["bad_flows"] + f["unfinished"]


def test_open_loop_generation_does_not_depend_on_the_network():
    # each source draws from its own stream: the same seed generates the same transfers whether or not the
    # hotspot stops a port and PAUSE holds the hosts
    ov = SHORT | {"traffic.flows.loop": "open"}
    base = cnsim.run(SEED3 / "cnsim-1hop-none-nohs-pause.toml", seed=1, overrides=ov)
    hot = cnsim.run(SEED3 / "cnsim-1hop-none-hs0-pause.toml", seed=1, overrides=HS0 | {"traffic.flows.loop": "open"})
    assert hot.summary["pause"]["host_paused_fraction"] > 0.3
    assert generated(hot) == generated(base)
    for r in (base, hot):
        assert r.summary["conservation"]["ok"]
    # and the same transfers: sizes in generation order
    assert list(hot.fct.sort_values("transfer")["frames"]) == list(base.fct.sort_values("transfer")["frames"])
    # fct.first_tx_s: a transfer starts transmission after it is generated and ends after that; held by
    # PAUSE, open-loop transfers wait in the host, so some start well after they were generated
    done = hot.fct[hot.fct["completed"] == 1]
    assert (done["first_tx_s"] >= done["start_s"]).all() and (done["end_s"] > done["first_tx_s"]).all()
    assert (done["first_tx_s"] - done["start_s"]).max() > 1e-3


def test_buffered_sources_lie_between_closed_and_open_loop():
    path = SEED3 / "cnsim-1hop-none-hs0-pause.toml"
    closed = cnsim.run(path, seed=1, overrides=HS0)
    nic = cnsim.run(path, seed=1, overrides=HS0 | {"traffic.flows.loop": "open", "traffic.flows.nic_buffer": "150KB"})
    opened = cnsim.run(path, seed=1, overrides=HS0 | {"traffic.flows.loop": "open"})
    g = [generated(r) for r in (closed, nic, opened)]
    assert g[0] < g[1] < g[2], g
    # a held open-loop source queues all its transfers in the host; a buffered one stops adding to them
    assert opened.summary["frames"]["host_queued"] > 5 * nic.summary["frames"]["host_queued"]
    for r in (closed, nic, opened):
        assert r.summary["conservation"]["ok"]


def test_nic_buffer_needs_the_open_loop():
    with pytest.raises(ValidationError, match="nic_buffer needs loop = 'open'"):
        ParetoOnOff(kind="pareto_onoff", name="f", src="h1", dst="h2", nic_buffer="150KB")
    g = ParetoOnOff(kind="pareto_onoff", name="f", src="h1", dst="h2", loop="open", nic_buffer="150KB")
    assert g.nic_buffer == 150_000


def test_tcp_transfers_have_a_first_transmission_time():
    # TCP transfers share one byte stream per connection: the first segment carrying a transfer's first byte
    # sets fct.first_tx_s (it was NaN for every TCP transfer before); a transfer queued behind another on the
    # same connection starts transmission later than it was generated
    r = cnsim.run(
        ROOT / "scenarios" / "datacenter" / "leaf-spine-incast.toml", seed=1, overrides={"run.duration": "5ms"}
    )
    f = r.fct
    done = f[f["completed"] == 1]
    assert len(done) > 100 and not done["first_tx_s"].isna().any()
    assert (done["first_tx_s"] >= done["start_s"]).all() and (done["end_s"] > done["first_tx_s"]).all()
    assert (done["first_tx_s"] > done["start_s"]).any()
    # a transfer can be without a first transmission only when it has not completed
    assert f[f["first_tx_s"].isna()]["completed"].eq(0).all()

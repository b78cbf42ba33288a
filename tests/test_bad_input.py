"""T14 — one case per validation rule, through the CLI: exit status 2, one line naming the field
path, the value and what is allowed; no traceback; no output directory."""

import shutil

import pytest
from conftest import ROOT

BASE = ROOT / "scenarios/baseline/fan-in-4.toml"

# (id, --set items, expected fragment of the stderr line)
CASES = [
    (
        "unknown-key",
        ["run.durration=5ms"],
        "run.durration: unknown key; allowed: duration, name, replication, seed, warmup",
    ),
    ("wrong-type", ["run.seed=abc"], "run.seed: Input should be a valid integer"),
    (
        "unit-typo",
        ["traffic.senders.rate=10Gpbs"],
        "traffic.0.rate: unknown unit 'Gpbs'; allowed: bps, Kbps, Mbps, Gbps, Tbps (got '10Gpbs')",
    ),
    ("missing-unit", ["defaults.link_delay=5"], "defaults.link_delay: a unit is required"),
    ("zero-rate", ["defaults.link_rate=0Gbps"], "defaults.link_rate: must be > 0 (got '0Gbps')"),
    ("negative-rate", ["traffic.0.rate=-1Gbps"], "traffic.0.rate: must not be negative"),
    ("rate-above-line", ["traffic.0.rate=20Gbps"], "traffic.0.rate: exceeds the source's link rate (10Gbps)"),
    (
        "deassert-above-assert",
        ["flow_control.mode=global", "flow_control.high=130KB", "flow_control.low=140KB"],
        "flow_control.low: de-assert threshold must be < flow_control.high (130KB) (got '140KB')",
    ),
    (
        "threshold-above-buffer",
        ["flow_control.mode=global", "flow_control.high=200KB", "flow_control.low=100KB"],
        "flow_control.high: must be <= the buffer of switch 'sw1' (150KB) (got '200KB')",
    ),
    ("threshold-without-pause", ["flow_control.high=100KB"], "flow_control.high: set but flow_control.mode is 'none'"),
    (
        "selective-needs-ingress",
        ["flow_control.mode=selective"],
        "flow_control.mode: selective pause acts on input partitions; switch 'sw1' has buffer policy 'egress' (allowed: 'ingress', 'partitioned')",
    ),
    ("unknown-host", ["traffic.0.dst=h9"], "traffic.0.dst: unknown host; hosts: h1, h2, h3, h4, sink (got 'h9')"),
    ("switch-as-host", ["traffic.0.dst=sw1"], "traffic.0.dst: is a switch; traffic runs between hosts"),
    ("duplicate-names", ['topology.hosts=["x1", "x1"]'], "topology.hosts.1.name: duplicate name (got 'x1')"),
    (
        "duplicate-generator",
        ['traffic.1={name = "senders", kind = "saturated", src = "h1", dst = "sink"}'],
        "traffic.1.name: duplicate generator name",
    ),
    (
        "disconnected",
        ['topology.hosts=["island"]'],
        "topology.links: topology is disconnected: island cannot reach 'h1'",
    ),
    ("link-to-unknown-node", ['topology.links=[["h1", "nowhere"]]'], "topology.links.0.b: unknown node"),
    (
        "buffer-below-frame",
        ["defaults.buffer.size=1000B"],
        "defaults.buffer.size: buffer of switch 'sw1' is smaller than one frame (1500B); allowed: >= the largest frame",
    ),
    ("duration-le-warmup", ["run.warmup=100ms"], "run.warmup: must be < run.duration (100ms) (got '100ms')"),
    ("zero-duration", ["run.duration=0s"], "run.duration: must be > 0"),
    ("unknown-preset", ["topology.preset=ring"], "topology.preset: unknown preset; known: symmetric, asymmetric"),
    (
        "bad-preset-param",
        ["topology.params.n_senders=0"],
        "topology.params.n_senders: Input should be greater than or equal to 1 (got 0)",
    ),
    ("unknown-scheme", ["cm.scheme=bcnx"], "cm.scheme: unknown scheme; known: "),
    ("unknown-scheme-param", ["cm.params.gd=0.5"], "cm.params.gd: unknown key"),
    (
        "load-out-of-range",
        ['traffic.0={kind = "bernoulli", src = "h1", dst = "sink", load = 1.5}'],
        "traffic.0.load: Input should be less than or equal to 1 (got 1.5)",
    ),
    (
        "workload-load-out-of-range",
        ['traffic.0={kind = "workload", cdf = "websearch", src = "all", dst = "sink", load = 1.5}'],
        "traffic.0.load: Input should be less than or equal to 1 (got 1.5)",
    ),
    (
        "bad-last-frame",
        ['traffic.0={kind = "incast", src = "h1", dst = "sink", size = "1KB", period = "1ms", last_frame = "half"}'],
        "traffic.0.last_frame: Input should be 'whole' or 'partial' (got 'half')",
    ),
    (
        "load-and-rate",
        ['traffic.0={kind = "poisson", src = "h1", dst = "sink", load = 0.5, rate = "1Gbps"}'],
        "traffic.0: give exactly one of 'load' or 'rate'",
    ),
    ("unknown-kind", ['traffic.0={kind = "burst", src = "h1", dst = "sink"}'], "traffic.0: Input tag 'burst'"),
    (
        "hotspot-above-line",
        ['hotspot=[{switch = "sw1", toward = "sink", rate = "20Gbps"}]'],
        "hotspot.0.rate: allowed: 0 to the link rate (10Gbps) (got '20Gbps')",
    ),
    (
        "hotspot-not-neighbour",
        ['hotspot=[{switch = "sw1", toward = "h9", rate = "1Gbps"}]'],
        "hotspot.0.toward: not a neighbour of 'sw1' (got 'h9')",
    ),
    (
        "pause-quanta-range",
        ["flow_control.quanta=70000"],
        "flow_control.quanta: Input should be less than or equal to 65535",
    ),
    ("frame-too-small", ["defaults.frame_size=32B"], "defaults.frame_size: allowed: 64B to 9216B (got '32B')"),
    (
        "sizes-need-udp",
        [
            'traffic.0={kind = "poisson", src = "h1", dst = "sink", load = 0.5, frame_sizes = "exponential", transport = "tcp"}'
        ],
        "traffic.0: frame_sizes other than 'fixed' needs transport = 'udp'",
    ),
    (
        "mix-needs-sizes",
        ['traffic.0={kind = "poisson", src = "h1", dst = "sink", load = 0.5, frame_sizes = "mix"}'],
        "traffic.0: frame_sizes = 'mix' needs size_mix",
    ),
    (
        "min-above-max",
        [
            'traffic.0={kind = "poisson", src = "h1", dst = "sink", load = 0.5, frame_sizes = "exponential", min_frame = "2000B", max_frame = "1000B"}'
        ],
        "traffic.0.max_frame: need 64B <= min_frame < max_frame <= 9216B (got '2KB, 1KB')",
    ),
    (
        "exponential-mean-out-of-range",
        [
            'traffic.0={kind = "poisson", src = "h1", dst = "sink", load = 0.5, frame_sizes = "exponential", max_frame = "2000B"}'
        ],
        "defaults.frame_size: the mean of an exponential on [64B, 2KB] must lie between 65B and 1032.5B (exclusive) (got '1500B')",
    ),
    (
        "mix-size-too-large",
        [
            'traffic.0={kind = "poisson", src = "h1", dst = "sink", load = 0.5, frame_sizes = "mix", size_mix = [["64B", 1], ["10000B", 1]]}'
        ],
        "traffic.0.size_mix: sizes allowed: 64B to 9216B (got '10KB')",
    ),
    (
        "bcn-legacy-zero-without-tags",
        ["cm.scheme=bcn", "cm.params.zero_encoding=legacy", "cm.params.fb_at_cp=true"],
        "cm.params: zero_encoding = 'legacy' needs RL tags",
    ),
    (
        "bcn-unknown-zero-encoding",
        ["cm.scheme=bcn", "cm.params.zero_encoding=implicit"],
        "cm.params.zero_encoding: Input should be 'explicit' or 'legacy' (got 'implicit')",
    ),
    ("malformed-set", ["run.duration"], "--set run.duration: expected PATH=VALUE"),
    # checked by the engine only: named as the scenario's field, not the engine's (kmin_bytes)
    (
        "engine-scheme-rule",
        ["cm.scheme=dcqcn", "cm.params.kmin=100KB", "cm.params.kmax=50KB"],
        "cm.params.kmin: must be <= kmax",
    ),
]


def test_validate_applies_the_engines_checks_too(cli, tmp_path):
    """`cnsim validate` refuses what a run would refuse, with the same line: a file it passes runs."""
    f = tmp_path / "s.toml"
    f.write_text(
        BASE.read_text().replace(
            "[run]", '[cm]\nscheme = "dcqcn"\nparams = { kmin = "100KB", kmax = "50KB" }\n\n[run]', 1
        )
    )
    r = cli(["validate", f])
    assert r.exit_code == 2 and f"{f}: cm.params.kmin: must be <= kmax" in r.stderr, r.stderr
    f.write_text(BASE.read_text())
    assert cli(["validate", f]).exit_code == 0


@pytest.mark.parametrize("sets,fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_exit_2(cli, tmp_path, sets, fragment):
    out = tmp_path / "out"
    args = ["run", BASE, "--out", out, "-q"]
    for s in sets:
        args += ["--set", s]
    r = cli(args)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert any(fragment in line for line in lines), r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert not out.exists()
    assert not list(tmp_path.glob(".out*"))


def test_toml_syntax_error(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[run\nduration = 1")
    r = cli(["run", bad, "--out", tmp_path / "out"])
    assert r.exit_code == 2 and "TOML syntax error" in r.stderr
    assert not (tmp_path / "out").exists()


def test_missing_file(cli, tmp_path):
    r = cli(["validate", tmp_path / "nope.toml"])
    assert r.exit_code == 2 and "cannot read file" in r.stderr


def test_several_problems_one_line_each(cli, tmp_path):
    shutil.copy(BASE, tmp_path / "s.toml")
    r = cli(
        [
            "run",
            tmp_path / "s.toml",
            "--set",
            "traffic.0.dst=h9",
            "--set",
            "defaults.buffer.size=1KB",
            "--out",
            tmp_path / "out",
        ]
    )
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("defaults.buffer.size:") and lines[1].startswith("traffic.0.dst:")


def test_api_raises_config_error_with_problems():
    import cnsim

    with pytest.raises(cnsim.ConfigError) as exc:
        cnsim.load_scenario(BASE, overrides={"traffic.0.rate": "10Gpbs"})
    (p,) = exc.value.problems
    assert (p.path, p.value) == ("traffic.0.rate", "10Gpbs")
    assert "allowed: bps" in p.message

"""T15 — the loader never crashes: any input ends in a Scenario or a ConfigError (hypothesis)."""

import tomllib

import tomli_w
from cnsim.compile.loader import load_scenario
from cnsim.exceptions import ConfigError
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

KEYS = [
    "run",
    "topology",
    "traffic",
    "defaults",
    "cm",
    "flow_control",
    "hotspot",
    "observe",
    "preset",
    "params",
    "duration",
    "warmup",
    "seed",
    "kind",
    "src",
    "dst",
    "rate",
    "load",
    "name",
    "hosts",
    "switches",
    "links",
    "mode",
    "high",
    "low",
    "buffer",
    "size",
    "policy",
    "a",
    "b",
    "switch",
    "toward",
    "gate",
    "on",
    "off",
]
VALUES = [
    "10Gbps",
    "0Gbps",
    "-1Gbps",
    "150KB",
    "1B",
    "0.5us",
    "0",
    "100ms",
    "all",
    "h1",
    "sink",
    "sw1",
    "fan_in",
    "cnsim_1hop",
    "saturated",
    "cbr",
    "poisson",
    "bernoulli",
    "pareto_onoff",
    "global",
    "selective",
    "egress",
    "ingress",
    "10Gpbs",
    "nan",
    "",
]
scalars = st.one_of(
    st.sampled_from(VALUES), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.booleans(), st.text(max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)),
    max_leaves=25,
)
BASE = tomllib.loads((ROOT / "scenarios/baseline/fan-in-4.toml").read_text())


def check(data) -> None:
    try:
        load_scenario(data)
    except ConfigError as exc:
        assert exc.problems and all(str(p) for p in exc.problems)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(KEYS), values, max_size=6))
def test_random_documents(data):
    check(data)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(KEYS + ["0", "1", "senders"]), min_size=1, max_size=4).map(".".join), values
        ),
        max_size=3,
    )
)
def test_random_overrides_of_a_valid_scenario(overrides):
    try:
        load_scenario(BASE, overrides=dict(overrides))
    except ConfigError as exc:
        assert exc.problems


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), values, max_size=4))
def test_valid_results_round_trip(data):
    try:
        sc = load_scenario(data)
    except ConfigError:
        return
    assert load_scenario(tomllib.loads(tomli_w.dumps(sc.model_dump(mode="json", exclude_none=True)))) == sc

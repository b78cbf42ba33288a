"""cnsim.scenario.units: exact parsing of rates, sizes and times; clear errors; round trip."""

import pytest
from cnsim.scenario.units import UnitError, format_quantity, parse_quantity

GOOD = [
    ("10Gbps", "rate", 10_000_000_000),
    ("0.2Gbps", "rate", 200_000_000),
    ("500Mbps", "rate", 500_000_000),
    ("1Kbps", "rate", 1000),
    ("150KB", "size", 150_000),
    ("1KiB", "size", 1024),
    ("2.4MB", "size", 2_400_000),
    ("24000B", "size", 24_000),
    ("375pages", "size", 24_000),
    ("0.5us", "time", 500_000),
    ("0.5µs", "time", 500_000),
    ("1ms", "time", 1_000_000_000),
    ("100ns", "time", 100_000),
    ("51.2ns", "time", 51_200),
    ("2s", "time", 2_000_000_000_000),
    ("1e-6s", "time", 1_000_000),
    (" 5 Gbps ", "rate", 5_000_000_000),
]


@pytest.mark.parametrize("text,kind,expected", GOOD)
def test_parse_exact(text, kind, expected):
    assert parse_quantity(text, kind) == expected


@pytest.mark.parametrize(
    "text,kind,fragment",
    [
        ("10Gpbs", "rate", "unknown unit 'Gpbs'; allowed: bps, Kbps, Mbps, Gbps"),
        ("150kb", "size", "unknown unit 'kb'; allowed: B, KB"),
        ("10", "rate", "missing unit"),
        ("-5Gbps", "rate", "must not be negative"),
        ("0Gbps", "rate", "must be > 0"),
        ("0.1ps", "time", "not a whole number of picoseconds"),
        ("0.5B", "size", "not a whole number of bytes"),
        ("fast", "rate", "cannot parse 'fast'"),
    ],
)
def test_reject(text, kind, fragment):
    with pytest.raises(UnitError, match=None) as exc:
        parse_quantity(text, kind)
    assert fragment in str(exc.value)


def test_plain_numbers_only_zero_where_allowed():
    assert parse_quantity(0, "time", allow_zero=True) == 0
    assert parse_quantity("0", "time", allow_zero=True) == 0
    for bad in (5, 1.5, True, None, [1]):
        with pytest.raises(UnitError):
            parse_quantity(bad, "time", allow_zero=True)
    with pytest.raises(UnitError):
        parse_quantity(0, "rate")


@pytest.mark.parametrize("kind", ["rate", "size", "time"])
@pytest.mark.parametrize("value", [1, 7, 64, 1500, 51_200, 1_200_000, 123_456_789, 10**13, 150_000, 2**40 + 3])
def test_format_round_trip(kind, value):
    assert parse_quantity(format_quantity(value, kind), kind) == value


def test_format_readable():
    assert format_quantity(10**10, "rate") == "10Gbps"
    assert format_quantity(150_000, "size") == "150KB"
    assert format_quantity(1500, "size") == "1500B"
    assert format_quantity(51_200, "time") == "51.2ns"
    assert format_quantity(0, "time") == "0s"

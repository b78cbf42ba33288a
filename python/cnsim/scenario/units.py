"""Physical quantities written with explicit units, parsed exactly into base integers.

Conventions (model reference §0): rates in bit/s, sizes in bytes, times in picoseconds. Decimal prefixes
are decimal (``KB`` = 1000 B, ``Gbps`` = 10⁹ bit/s); binary prefixes are spelled ``KiB``/``MiB``;
a page is 64 bytes. Values are parsed with :class:`decimal.Decimal`, so ``"0.2Gbps"`` is exactly
200 000 000 bit/s and ``"0.5us"`` exactly 500 000 ps; a value that is not a whole number of the
base unit (``"0.1ps"``) is rejected rather than rounded.

Plain numbers are not accepted for any quantity (a missing unit is the most common silent error in
simulator configs), with one documented exception: the number ``0`` for a time or a size.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Final

RATE_UNITS: Final[dict[str, int]] = {
    "bps": 1,
    "Kbps": 10**3,
    "Mbps": 10**6,
    "Gbps": 10**9,
    "Tbps": 10**12,
}
PAGE_BYTES: Final[int] = 64
"""One page, the unit of the 802.1Qau studies' queue offsets and gains (model reference §0; the engine's
``cm::bcn::PAGE``)."""
SIZE_UNITS: Final[dict[str, int]] = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "pages": PAGE_BYTES,
}
TIME_UNITS: Final[dict[str, int]] = {
    "ps": 1,
    "ns": 10**3,
    "us": 10**6,
    "µs": 10**6,
    "ms": 10**9,
    "s": 10**12,
}

_QUANTITY = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([^\s\d.+-][^\s]*)?\s*$")

_KINDS: Final[dict[str, tuple[dict[str, int], str]]] = {
    "rate": (RATE_UNITS, "bit/s"),
    "size": (SIZE_UNITS, "bytes"),
    "time": (TIME_UNITS, "picoseconds"),
}


class UnitError(ValueError):
    """A quantity string that cannot be parsed; the message says what is allowed."""


U64_MAX = 2**64 - 1
"""Largest value of any quantity in its base unit (ps, bytes, bit/s): the engine's u64."""


def _allowed(kind: str) -> str:
    units = _KINDS[kind][0]
    return ", ".join(u for u in units if u != "µs")


def parse_quantity(value: object, kind: str, *, allow_zero: bool = False) -> int:
    """Parse ``value`` (e.g. ``"10Gbps"``) as a ``kind`` in {"rate", "size", "time"}.

    Returns the value in the base unit (bit/s, bytes, ps) as a non-negative int. Zero is accepted
    only when ``allow_zero``; a plain number is accepted only if it is 0 and ``allow_zero``.
    """
    units, base = _KINDS[kind]
    if isinstance(value, bool):
        raise UnitError(f"expected a {kind} with a unit, e.g. {example(kind)}")
    if isinstance(value, (int, float)):
        if value == 0 and allow_zero:
            return 0
        raise UnitError(f"a unit is required, e.g. {example(kind)!r} (allowed units: {_allowed(kind)})")
    if not isinstance(value, str):
        raise UnitError(f"expected a {kind} string with a unit, e.g. {example(kind)!r}")
    m = _QUANTITY.match(value)
    if m is None:
        raise UnitError(f"cannot parse {value!r} as a {kind}; write a number followed by one of: {_allowed(kind)}")
    number, unit = m.group(1), m.group(2)
    if unit is None:
        if allow_zero and Decimal(number) == 0:
            return 0
        raise UnitError(f"missing unit; allowed: {_allowed(kind)}")
    if unit not in units:
        raise UnitError(f"unknown unit {unit!r}; allowed: {_allowed(kind)}")
    try:
        exact = Decimal(number) * units[unit]
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid numbers
        raise UnitError(f"cannot parse {value!r}") from exc
    if exact != exact.to_integral_value():
        raise UnitError(f"{value!r} is not a whole number of {base}")
    result = int(exact)
    if result < 0:
        raise UnitError("must not be negative")
    if result > U64_MAX:
        # the engine holds every quantity as a 64-bit integer of its base unit
        raise UnitError(
            f"too large: at most {format_quantity(U64_MAX, kind)} ({U64_MAX} {base}), the engine's 64-bit range"
        )
    if result == 0 and not allow_zero:
        raise UnitError("must be > 0")
    return result


def example(kind: str) -> str:
    """A typical value of ``kind`` for messages and docs."""
    return {"rate": "10Gbps", "size": "150KB", "time": "0.5us"}[kind]


def format_quantity(base_value: int, kind: str) -> str:
    """Inverse of :func:`parse_quantity`: an exact, readable form (``10Gbps``, ``150KB``, ``1.2us``).

    The largest unit giving a whole number below 10 000 wins, else the largest giving at most three decimals;
    binary units and pages are never chosen. The result parses back to the same integer.
    """
    candidates = {
        "rate": ["Tbps", "Gbps", "Mbps", "Kbps", "bps"],
        "size": ["GB", "MB", "KB", "B"],
        "time": ["s", "ms", "us", "ns", "ps"],
    }[kind]
    units = _KINDS[kind][0]
    if base_value == 0:
        return "0" + candidates[0]
    values = [(Decimal(base_value) / units[u], u) for u in candidates]
    for q, unit in values:  # the largest unit giving a whole number below 10 000
        if 1 <= q < 10_000 and q == q.to_integral_value():
            return f"{int(q)}{unit}"
    for q, unit in values:  # else the largest unit giving at most three decimals
        text = format(q.normalize(), "f")
        if q >= 1 and len(text.partition(".")[2]) <= 3:
            return f"{text}{unit}"
    return f"{base_value}{candidates[-1]}"


def rate(value: object) -> int:
    """Parse a strictly positive rate into bit/s."""
    return parse_quantity(value, "rate")


def size(value: object) -> int:
    """Parse a strictly positive size into bytes."""
    return parse_quantity(value, "size")


def time_ps(value: object, *, allow_zero: bool = True) -> int:
    """Parse a time into picoseconds (0 allowed unless ``allow_zero`` is false)."""
    return parse_quantity(value, "time", allow_zero=allow_zero)

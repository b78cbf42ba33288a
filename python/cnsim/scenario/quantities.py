"""Pydantic field types for quantities with units (validated into base ints, dumped as strings).

A field typed ``Rate`` accepts ``"10Gbps"`` and holds ``10_000_000_000`` (bit/s); dumping the model
(``model_dump()``, ``resolved-config.toml``) writes the canonical string back, so a dumped scenario
loads into the same values. The JSON Schema of each type is a string pattern so that editors
(Taplo, VS Code) flag unit typos as you type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Callable

from pydantic import Field
from pydantic_core import core_schema

from cnsim.scenario.units import RATE_UNITS, SIZE_UNITS, TIME_UNITS, format_quantity, parse_quantity

_NUMBER = r"^\s*[+]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*"


def _pattern(units: dict[str, int]) -> str:
    alternatives = "|".join(sorted(units, key=len, reverse=True))
    return f"{_NUMBER}({alternatives})\\s*$"


@dataclass(frozen=True)
class QuantityKind:
    """The kind of a quantity field ("size", "time", "rate"), in its annotation: the engine receives the
    field in base units under the field's name plus the kind's suffix (:data:`ENGINE_SUFFIX`)."""

    kind: str


ENGINE_SUFFIX = {"size": "_bytes", "time": "_ps", "rate": "_bps"}
"""The one naming rule from a scenario field to the engine's parameter: ``qeq`` (a size) is ``qeq_bytes``."""


@dataclass(frozen=True, eq=False)  # hashed by identity (the JSON Schema dict is not hashable)
class _Parsed:
    """The schema of a quantity field: validated by ``parse`` (a string with a unit → an int in base
    units), dumped by ``dump`` (→ the canonical string), described in JSON Schema by ``json_schema``.

    What pydantic's ``BeforeValidator(parse)``, ``PlainSerializer(dump, return_type=str)`` and
    ``WithJsonSchema(json_schema)`` make, built directly: those inspect the signature of their function
    for every field they annotate (about 3 ms of a run's first validation over a scenario's 110 quantity
    fields)."""

    parse: Callable[[Any], int]
    dump: Callable[[int], str]
    json_schema: dict[str, Any]

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        schema = core_schema.no_info_before_validator_function(self.parse, handler(source))
        schema["serialization"] = core_schema.plain_serializer_function_ser_schema(
            self.dump, info_arg=False, return_schema=core_schema.str_schema(), when_used="always"
        )
        return schema

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> dict[str, Any]:
        return self.json_schema.copy()


def _quantity(kind: str, units: dict[str, int], allow_zero: bool, what: str) -> Any:
    def validate(value: object) -> int:
        return parse_quantity(value, kind, allow_zero=allow_zero)

    def dump(value: int) -> str:
        return format_quantity(value, kind)

    schema: dict = {"type": "string", "pattern": _pattern(units), "description": what}
    if allow_zero:
        schema = {"anyOf": [schema, {"const": 0}], "description": what}
    return Annotated[int, QuantityKind(kind), _Parsed(validate, dump, schema)]


Rate = _quantity("rate", RATE_UNITS, False, "bit rate > 0, e.g. '10Gbps' (units: bps, Kbps, Mbps, Gbps, Tbps)")
"""A bit rate > 0, held in bit/s."""
RateOrZero = _quantity("rate", RATE_UNITS, True, "bit rate >= 0, e.g. '0.5Gbps' or 0")
"""A bit rate ≥ 0 (0 = stopped), held in bit/s."""
Size = _quantity("size", SIZE_UNITS, False, "size > 0, e.g. '150KB' (KB = 1000 B; KiB = 1024 B; 1 page = 64 B)")
"""A size > 0, held in bytes."""
Time = _quantity("time", TIME_UNITS, True, "time >= 0, e.g. '0.5us' (units: ps, ns, us, ms, s) or 0")
"""A time ≥ 0, held in picoseconds."""
Duration = _quantity("time", TIME_UNITS, False, "time > 0, e.g. '100ms' (units: ps, ns, us, ms, s)")
"""A time > 0, held in picoseconds."""

Name = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]*$",
        max_length=64,
        description="identifier: letters, digits, '_', '-', '.'; starts with a letter or '_'",
    ),
]
"""A node or generator name."""

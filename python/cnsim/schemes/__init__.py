"""Registry of congestion-management schemes on the Python side.

Each scheme is one module in this package defining ``Params`` — a pydantic model (``extra="forbid"``)
whose fields carry units, defaults (the seeds' baseline) and descriptions — and ``to_ir(params)``,
which returns the scheme's IR parameters in base units (the JSON object the Rust scheme
deserialises); optionally ``queue_thresholds(params)`` (see :meth:`Scheme.queue_thresholds`).
Adding a scheme = one module + its tag in ``_MODULES``. The Rust registry
(``cnsim._core.schemes()``) is the authority at run time; this one drives validation and docs.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, get_args

from cnsim.scenario.quantities import ENGINE_SUFFIX, QuantityKind

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel


@dataclass(frozen=True)
class Scheme:
    """A registered scheme: its tag, a one-line summary, its params model and IR converter."""

    tag: str
    summary: str
    params: type[BaseModel]
    module: ModuleType

    def to_ir(self, params: BaseModel) -> dict[str, Any]:
        """IR parameters (base units) of validated ``params``."""
        return self.module.to_ir(params)

    def engine_names(self) -> dict[str, str]:
        """The engine's name of every parameter → the scenario's field: one rule, no exceptions
        (:func:`engine_names`)."""
        return engine_names(self.params, getattr(self.module, "IR_GROUPS", {}))

    def queue_thresholds(self, params: BaseModel) -> list[tuple[str, int, str, str]]:
        """The parameters of validated ``params`` that a congestion point compares with its egress queue and
        that act only while the queue exceeds them: ``(field, bytes, what it is, what never happens if the
        queue cannot exceed it)``. ``compile.py`` warns when a switch's egress queue cannot grow that long.
        A module lists them in an optional ``queue_thresholds(params)``; none = no such parameter."""
        fn = getattr(self.module, "queue_thresholds", None)
        return [] if fn is None else fn(params)


def _quantity_kind(metadata: tuple | list, annotation: Any) -> str | None:
    """The quantity kind ("size", "time", "rate") of a field from its metadata or annotation, through
    ``X | None`` and unions."""

    for part in (*metadata, *getattr(annotation, "__metadata__", ())):
        if isinstance(part, QuantityKind):
            return part.kind
    for arg in get_args(annotation):
        kind = _quantity_kind((), arg)
        if kind is not None:
            return kind
    return None


def engine_names(model: type[BaseModel], groups: Mapping[str, type[BaseModel]] | None = None) -> dict[str, str]:
    """Engine parameter → scenario field, by the one naming rule: a field's engine name is its own, with the
    unit suffix of its quantity kind when it is a size, time or rate (``qeq`` → ``qeq_bytes``, base units);
    a field that is a quantity or a word (HPCC's ``base_rtt``: a time, ``network`` or ``path``) has both
    names. A module's ``IR_GROUPS`` nests fields in an object of the IR (``switch.qeq_bytes``). Every key a
    scheme's ``to_ir`` writes is in this map (tests/test_registries.py), so an engine error always names
    the user's field."""

    names: dict[str, str] = {}
    for prefix, fields in [("", model), *((f"{g}.", m) for g, m in (groups or {}).items())]:
        for name, info in fields.model_fields.items():
            kind = _quantity_kind(info.metadata, info.annotation)
            if kind is not None:
                names[prefix + name + ENGINE_SUFFIX[kind]] = name
            if kind is None or get_args(info.annotation):
                names[prefix + name] = name
    return names


_MODULES: tuple[str, ...] = (
    "none",
    "bcn",
    "ecm",
    "becn",
    "fecn",  # explicit-rate schemes (issue 4)
    "qcn",
    "dcqcn",  # 802.1Qau QCN and DCQCN (issue 5)
    "hpcc",  # HPCC, the modern reference (issue 13)
)
"""Tag → module ``cnsim.schemes.<tag>`` (each module's ``TAG`` is its name: tests/test_registries.py)."""


class _Registry(Mapping[str, Scheme]):
    """Tag → :class:`Scheme`; a scheme's module is imported when it is first looked up, so that a run
    builds the parameter model of its own scheme only (the tags are known without importing)."""

    def __init__(self, tags: tuple[str, ...]):
        self._tags = tags
        self._loaded: dict[str, Scheme] = {}

    def __getitem__(self, tag: str) -> Scheme:
        scheme = self._loaded.get(tag)
        if scheme is None:
            if tag not in self._tags:
                raise KeyError(tag)
            mod = importlib.import_module(f"{__name__}.{tag}")
            scheme = self._loaded[tag] = Scheme(mod.TAG, mod.SUMMARY, mod.Params, mod)
        return scheme

    def __contains__(self, tag: object) -> bool:
        return tag in self._tags

    def __iter__(self) -> Iterator[str]:
        return iter(self._tags)

    def __len__(self) -> int:
        return len(self._tags)

    def __repr__(self) -> str:
        return f"SCHEMES({', '.join(self._tags)})"


SCHEMES: Mapping[str, Scheme] = _Registry(_MODULES)
"""Every registered scheme by tag, in registration order."""


def get(tag: str) -> Scheme:
    """The scheme registered as ``tag``; ``KeyError`` names the known tags."""
    try:
        return SCHEMES[tag]
    except KeyError:
        raise KeyError(f"unknown scheme {tag!r}; known: {', '.join(sorted(SCHEMES))}") from None


def __getattr__(name: str) -> ModuleType:
    """``cnsim.schemes.bcn`` and the other scheme modules as attributes, imported on first use."""
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Registry of congestion-management schemes on the Python side.

Each scheme is one module in this package defining ``Params`` — a pydantic model (``extra="forbid"``)
whose fields carry units, defaults (the seeds' baseline) and descriptions — and ``to_ir(params)``,
which returns the scheme's IR parameters in base units (the JSON object the Rust scheme
deserialises). Adding a scheme = one module + one line in :data:`SCHEMES`. The Rust registry
(``cnsim._core.schemes()``) is the authority at run time; this one drives validation and docs.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from cnsim.schemes import none, bcn, ecm
from cnsim.schemes import becn, fecn  # explicit-rate schemes (issue 4)
from cnsim.schemes import qcn, dcqcn  # 802.1Qau QCN and DCQCN (issue 5)
from cnsim.schemes import hpcc  # HPCC, the modern reference (issue 13)


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


SCHEMES: dict[str, Scheme] = {
    mod.TAG: Scheme(mod.TAG, mod.SUMMARY, mod.Params, mod) for mod in (none, bcn, ecm, becn, fecn, qcn, dcqcn, hpcc)
}


def get(tag: str) -> Scheme:
    """The scheme registered as ``tag``; ``KeyError`` names the known tags."""
    try:
        return SCHEMES[tag]
    except KeyError:
        raise KeyError(f"unknown scheme {tag!r}; known: {', '.join(sorted(SCHEMES))}") from None

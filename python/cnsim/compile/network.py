"""The compiled network: nodes and links with every attribute resolved (presets expanded, overrides and
``[defaults]`` applied), shared by the compiler and its PFC step, and how warnings name groups of switches."""

from __future__ import annotations

from dataclasses import dataclass, field

WIRE_OVERHEAD_BYTES = 20
"""Preamble, start-of-frame delimiter and inter-frame gap of every Ethernet frame on the wire (``defaults.wire_overhead``)."""


@dataclass
class Node:
    """A resolved node: every attribute has its final value; ``path`` says where it was defined."""

    name: str
    kind: str  # "host" | "switch"
    path: str
    response_delay_ps: int = 0
    latency_ps: int = 0
    buffer_policy: str = "egress"
    buffer_bytes: int = 0
    buffer_path: str = ""
    ecn_threshold_bytes: int | None = None
    ecn_path: str = ""


@dataclass
class Link:
    """A resolved full-duplex link."""

    a: str
    b: str
    rate_bps: int
    prop_ps: int
    path: str


@dataclass
class Network:
    """The resolved topology."""

    nodes: list[Node] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)

    def index(self) -> dict[str, int]:
        return {n.name: i for i, n in enumerate(self.nodes)}

    def hosts(self) -> list[str]:
        return [n.name for n in self.nodes if n.kind == "host"]

    def link_of(self, host: str) -> Link | None:
        return next((lk for lk in self.links if host in (lk.a, lk.b)), None)


def _known(names: list[str]) -> str:
    shown = ", ".join(names[:8])
    return shown + (f", ... ({len(names)} in all)" if len(names) > 8 else "")


def _switches(names: list[str], total: int) -> str:
    """``switch 'a'`` / ``both switches (a, b)`` / ``all 3 switches (a, b, c)`` / ``all 20 switches`` / ``2 of 20 switches (a, b)``: the
    switches one warning is about, named together."""
    if total == 1:
        return f"switch {names[0]!r}"
    if len(names) == total:
        return ("both switches" if total == 2 else f"all {total} switches") + (
            f" ({', '.join(names)})" if total <= 8 else ""
        )
    return f"{len(names)} of {total} switches ({_known(names)})"

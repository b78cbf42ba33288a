"""Topology elements: hosts, switches, links (as written in ``[topology]`` and made by presets).

Every attribute of an element is optional: an unset attribute falls back to the preset's value (if
the element comes from a preset), then to ``[defaults]``. An explicit element whose name (or, for a
link, whose pair of end points) matches a preset element overrides only the attributes it sets.
"""

# No `from __future__ import annotations` in the modules of pydantic models: pydantic would evaluate each
# field's annotation from its string when it creates the class and again when it builds the schema
# (15 M instructions, ≈ 3 ms, of a 1-ms run).

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cnsim.scenario.quantities import Name, Rate, Size, Time

BufferPolicy = Literal["egress", "ingress", "shared", "partitioned"]


def empty_list() -> list:
    """``default_factory`` of list fields. A function of ours rather than ``list``: pydantic reads a
    factory's signature when it builds a model's schema, and a builtin's signature is parsed from text
    with the tokenizer, whose regular expressions compile at that first use (≈ 3 ms of every run)."""
    return []


def empty_dict() -> dict:
    """``default_factory`` of table fields, for the reason :func:`empty_list` gives."""
    return {}


class Strict(BaseModel):
    """Base of every scenario model: unknown keys are errors, never silently ignored."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True, allow_inf_nan=False)


class BufferSpec(Strict):
    """Buffer admission of a switch (model reference §1.3). Unset fields fall back to ``[defaults].buffer``."""

    policy: BufferPolicy | None = Field(
        None,
        description="'egress' (BUF-OUT: private limit per egress queue), 'ingress' (BUF-IN: the memory is "
        "partitioned per input port), 'shared' (one pool for all egress queues) or 'partitioned' (CN-SIM, spec "
        "§12 R3: every output buffer holds one partition per input port)",
    )
    size: Size | None = Field(
        None,
        description="limit per egress queue (egress), per input partition (ingress), of the pool (shared) "
        "or per (input, output) partition (partitioned)",
    )


class HostSpec(Strict):
    """An end station with one NIC (per-flow FIFOs, rate limiters, round-robin scheduler)."""

    name: Name = Field(description="unique node name")
    response_delay: Time | None = Field(
        None, description="delay between a feedback frame's arrival and the rate change (default [defaults])"
    )

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, data: object) -> object:
        return {"name": data} if isinstance(data, str) else data


class SwitchSpec(Strict):
    """A shared-memory output-queued switch (model reference §1.3); a name string is short for ``{name = ...}``."""

    name: Name = Field(description="unique node name")
    latency: Time | None = Field(None, description="last-bit arrival to egress enqueue (default [defaults])")
    buffer: BufferSpec | None = Field(None, description="buffer admission (default [defaults].buffer)")
    ecn_threshold: Size | None = Field(None, description="ECN marking threshold (default [defaults].ecn_threshold)")

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, data: object) -> object:
        return {"name": data} if isinstance(data, str) else data


class LinkSpec(Strict):
    """A full-duplex point-to-point link; ``["h1", "sw1"]`` is short for ``{a = "h1", b = "sw1"}``."""

    a: Name = Field(description="one end (node name)")
    b: Name = Field(description="the other end (node name)")
    rate: Rate | None = Field(None, description="rate per direction (default [defaults].link_rate)")
    delay: Time | None = Field(None, description="propagation delay (default [defaults].link_delay)")

    @model_validator(mode="before")
    @classmethod
    def _from_pair(cls, data: object) -> object:
        if isinstance(data, (list, tuple)):
            if len(data) != 2:
                raise ValueError("a link written as a list must be [a, b]")
            return {"a": data[0], "b": data[1]}
        return data

    def key(self) -> frozenset[str]:
        """End points, unordered: two specs with the same key are the same link."""
        return frozenset((self.a, self.b))


class Elements(BaseModel):
    """An explicit topology as produced by a preset (all element lists, in order)."""

    model_config = ConfigDict(defer_build=True)

    hosts: list[HostSpec] = []
    switches: list[SwitchSpec] = []
    links: list[LinkSpec] = []


__all__ = ["BufferSpec", "HostSpec", "SwitchSpec", "LinkSpec", "Elements", "Strict", "BufferPolicy"]

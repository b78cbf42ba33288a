"""Turn pydantic validation errors into :class:`~cnsim.exceptions.Problem` lines.

Paths are dotted and match ``--set`` paths (``traffic.0.rate``, ``cm.params.gd``); union and
discriminator tags that pydantic puts in its locations are dropped; an unknown key lists the keys
that are allowed at that place.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from cnsim.exceptions import Problem

_PREFIXES = ("Value error, ", "Assertion failed, ")


def _is_tag(part: object) -> bool:
    """A location element that names a union member or a validator wrapper, not a field."""
    if not isinstance(part, str):
        return False
    return "[" in part or part in {"str", "int", "float", "bool", "list", "dict", "tuple"}


def _members(annotation: Any) -> list[Any]:
    """The model classes an annotation may hold (through Optional, Union, list, Annotated)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, tuple):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def allowed_keys(model: type[BaseModel], loc: tuple) -> list[str] | None:
    """Field names of the model found at ``loc`` inside ``model`` (None if not a model)."""
    current: list[type[BaseModel]] = [model]
    for part in loc:
        if isinstance(part, int):
            continue
        nxt: list[type[BaseModel]] = []
        for m in current:
            if part in m.model_fields:
                nxt += _members(m.model_fields[part].annotation)
        if not nxt:  # a discriminator tag selects one member of the union
            nxt = [m for m in current if _tag_of(m) == part]
        if not nxt:
            return None
        current = nxt
    return sorted({k for m in current for k in m.model_fields}) if current else None


def _tag_of(model: type[BaseModel]) -> str | None:
    field = model.model_fields.get("kind")
    if field is None:
        return None
    args = typing.get_args(field.annotation)
    return args[0] if len(args) == 1 else None


def problems_from(
    err: ValidationError, model: type[BaseModel], prefix: str = "", union_tags: frozenset[str] = frozenset()
) -> list[Problem]:
    """One Problem per (path, value), union alternatives joined with 'or'.

    ``union_tags`` are discriminator values that pydantic inserts after a list index
    (``traffic.0.cbr.rate``); they are dropped from the path (``traffic.0.rate``).
    """
    merged: dict[str, tuple[list[str], Any]] = {}
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        kept = [
            p
            for k, p in enumerate(loc)
            if not _is_tag(p) and not (k and isinstance(loc[k - 1], int) and p in union_tags)
        ]
        path = ".".join(str(p) for p in kept)
        path = ".".join(p for p in (prefix, path) if p)
        msg = e["msg"]
        for p in _PREFIXES:
            if msg.startswith(p):
                msg = msg[len(p) :]
        if e["type"] == "extra_forbidden":
            keys = allowed_keys(model, loc[:-1])
            msg = "unknown key" + (f"; allowed: {', '.join(keys)}" if keys else "")
        elif e["type"] == "missing":
            msg = "required field is missing"
        msgs, value = merged.setdefault(path, ([], e.get("input")))
        if msg not in msgs:
            msgs.append(msg)
    out = []
    for path, (msgs, value) in merged.items():
        message = " or ".join(msgs)
        if "required field is missing" in msgs or isinstance(value, dict):
            out.append(Problem(path, message))
        else:
            out.append(Problem(path, message, value))
    return out

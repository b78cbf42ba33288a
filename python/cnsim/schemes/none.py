"""``none``: no congestion management (PAUSE, if configured, still acts)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

TAG = "none"
SUMMARY = "No congestion management; drop-tail queues, optionally with PAUSE."


class Params(BaseModel):
    """The scheme takes no parameters."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


def to_ir(params: Params) -> dict[str, Any]:
    """``none`` takes ``{}``."""
    return {}

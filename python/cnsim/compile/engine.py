"""The engine extension ``cnsim._core``, loaded on first use (``cnsim --help`` and ``cnsim validate`` never load it)."""

from __future__ import annotations

from cnsim.exceptions import CnsimError


def core():
    """The engine extension ``cnsim._core`` (a CnsimError if it has not been built)."""
    try:
        from cnsim import _core  # the extension: loaded by the first command that runs the engine
    except ImportError as exc:
        raise CnsimError(f"the engine extension cnsim._core is not built ({exc}); run `make build`") from None
    return _core

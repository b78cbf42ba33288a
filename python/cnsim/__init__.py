"""cnsim — packet-level simulator of congestion management in data-center Ethernet.

>>> import cnsim
>>> sc = cnsim.load_scenario("scenarios/baseline/fan-in-4.toml", overrides={"run.duration": "5ms"})
>>> r = cnsim.run(sc, seed=1)            # doctest: +SKIP
>>> r.summary["frames"]["dropped"]       # doctest: +SKIP
"""

from importlib.metadata import PackageNotFoundError, version as _version

from cnsim.exceptions import CnsimError, ConfigError, InvariantError, RunInterrupted

# The heavy parts (pandas, pyarrow, the scenario models) load on first use, so that `cnsim --help`,
# `cnsim validate` and short runs start fast.
_LAZY = {"run": ("cnsim.api", "run"), "load_scenario": ("cnsim.loader", "load_scenario"),
         "Result": ("cnsim.results", "Result")}


_SUBMODULES = {"api", "sweep", "reproduce", "report", "series", "model", "schemes", "units", "loader", "compile"}
"""Submodules reachable as attributes (``cnsim.api``) without importing them at ``import cnsim``."""


def __getattr__(name: str):
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"cnsim.{name}")
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cnsim' has no attribute {name!r}")


__all__ = ["run", "load_scenario", "Result", "CnsimError", "ConfigError", "InvariantError", "RunInterrupted"]

try:
    __version__ = _version("cnsim")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.1.0"

__all__ = ["run", "load_scenario", "Result", "CnsimError", "ConfigError", "InvariantError", "RunInterrupted", "__version__"]

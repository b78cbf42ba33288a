"""cnsim — packet-level simulator of congestion management in data-center Ethernet.

>>> import cnsim
>>> sc = cnsim.load_scenario("scenarios/baseline/fan-in-4.toml", overrides={"run.duration": "5ms"})
>>> r = cnsim.run(sc, seed=1)            # doctest: +SKIP
>>> r.summary["frames"]["dropped"]       # doctest: +SKIP
"""

TYPE_CHECKING = False  # typing's own: `import typing` here would be paid before `cnsim run` can tune the collector
if TYPE_CHECKING:
    from cnsim.exceptions import CnsimError, ConfigError, InvariantError, RunInterrupted

# The heavy parts (pandas, pyarrow, the scenario models) load on first use, so that `cnsim --help`,
# `cnsim validate` and short runs start fast. So do the exceptions (dataclasses, typing): `import cnsim`
# runs before the `cnsim` command sets the garbage collector's pace (cnsim.entry).
_LAZY = {
    "run": ("cnsim.api", "run"),
    "load_scenario": ("cnsim.compile.loader", "load_scenario"),
    "Result": ("cnsim.results.result", "Result"),
    "CnsimError": ("cnsim.exceptions", "CnsimError"),
    "ConfigError": ("cnsim.exceptions", "ConfigError"),
    "InvariantError": ("cnsim.exceptions", "InvariantError"),
    "RunInterrupted": ("cnsim.exceptions", "RunInterrupted"),
}


_SUBMODULES = {
    "api",
    "exceptions",
    "scenario",
    "compile",
    "results",
    "experiments",
    "report",
    "cli",
    "model",
    "schemes",
    "workloads",
}
"""Subpackages and modules reachable as attributes (``cnsim.api``) without importing them at ``import cnsim``."""


def _installed_version() -> str:
    """The installed distribution's version, read from its ``cnsim-VERSION.dist-info`` folder name
    (importing importlib.metadata costs a tenth of a second at start-up); importlib.metadata if that
    folder is not found, "0.1.0" for a source tree without installation."""
    import os
    import sys

    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for n in names:
            if n.startswith("cnsim-") and n.endswith(".dist-info"):
                return n[len("cnsim-") : -len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cnsim")
    except PackageNotFoundError:
        return "0.1.0"


def __getattr__(name: str):
    if name == "__version__":
        value = globals()["__version__"] = _installed_version()
        return value
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


__all__ = [
    "run",
    "load_scenario",
    "Result",
    "CnsimError",
    "ConfigError",
    "InvariantError",
    "RunInterrupted",
    "__version__",
]

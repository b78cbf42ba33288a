"""cnsim — packet-level simulator of congestion management in data-center Ethernet.

>>> import cnsim
>>> sc = cnsim.load_scenario("scenarios/baseline/fan-in-4.toml", overrides={"run.duration": "5ms"})
>>> r = cnsim.run(sc, seed=1)            # doctest: +SKIP
>>> r.summary["frames"]["dropped"]       # doctest: +SKIP
"""

from importlib.metadata import PackageNotFoundError, version as _version

from cnsim.api import run
from cnsim.exceptions import CnsimError, ConfigError, InvariantError, RunInterrupted
from cnsim.loader import load_scenario
from cnsim.results import Result

try:
    __version__ = _version("cnsim")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.1.0"

__all__ = ["run", "load_scenario", "Result", "CnsimError", "ConfigError", "InvariantError", "RunInterrupted", "__version__"]

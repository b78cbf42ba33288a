"""Shared fixtures: paths, the shipped scenarios, the CLI runner, the engine guard."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").rglob("*.toml"))

HAVE_CORE = importlib.util.find_spec("cnsim._core") is not None
FOREGROUND = [
    sys.executable,
    "-c",
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('cnsim', run_name='__main__', alter_sys=True)",
]
"""``python -m cnsim`` as a terminal's foreground job, for tests that send it SIGINT: the signal is handled
even when the tests run with it ignored (a background job of a non-interactive shell inherits SIGINT
ignored, and Python keeps it so)."""
needs_core = pytest.mark.skipif(not HAVE_CORE, reason="cnsim._core is not built yet (run `make build`)")


@pytest.fixture
def cli():
    """Invoke the Typer app in-process: ``cli(["run", ...]) -> Result`` (stdout and stderr apart)."""
    from cnsim.cli.main import app

    runner = CliRunner()

    def invoke(args: list[str]):
        return runner.invoke(app, [str(a) for a in args])

    return invoke

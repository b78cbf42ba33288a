"""``cnsim run`` in its plain forms without typer: the same work, output and exit status, a start-up
without typer's import and command building (about 30 ms, a tenth of a 1-ms run).

A plain form is ``cnsim run SCENARIO`` with any of ``--seed N``, ``--set PATH=VALUE`` (repeatable),
``--out DIR`` / ``-o DIR``, ``--quiet`` / ``-q``, ``--no-progress``, ``--json``, ``--force``,
``--plots``, each option and its value as separate words, in any order. Anything else (``--help``,
``--out=DIR``, ``-qo DIR``, a value starting with ``-``, an unknown or repeated option, a second
argument, shell completion) goes to the typer app, which parses and reports it as always. The
options are those :func:`cnsim.cli.main.run` declares; tests/test_cli.py checks the two stay alike.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

VALUE_OPTIONS = {"--seed": "seed", "--set": "sets", "--out": "out", "-o": "out"}
"""Options taking a value, and the keyword of :func:`cnsim.cli.runner.run_command` they set."""
FLAGS = {
    "--quiet": "quiet",
    "-q": "quiet",
    "--no-progress": "no_progress",
    "--json": "as_json",
    "--force": "force",
    "--plots": "plots",
}
"""Flags, and the keyword they set to True."""


def plain_run(args: list[str]) -> dict[str, Any] | None:
    """The keywords of :func:`cnsim.cli.runner.run_command` for the words after ``cnsim run``, or None
    when they are not a plain form (typer then parses them)."""
    if any(name.endswith("_COMPLETE") for name in os.environ):  # a shell asking click to complete
        return None
    found: dict[str, Any] = {"sets": []}
    scenario = None
    words = iter(args)
    for word in words:
        if word in FLAGS:
            found[FLAGS[word]] = True
        elif word in VALUE_OPTIONS:
            key, value = VALUE_OPTIONS[word], next(words, None)
            if value is None or value == "" or value.startswith("-"):
                return None
            if key == "sets":
                found["sets"].append(value)
            elif key in found or (key == "seed" and not (value.isascii() and value.isdigit())):
                return None
            else:
                found[key] = int(value) if key == "seed" else Path(value)
        elif word == "" or word.startswith("-") or scenario is not None:
            return None
        else:
            scenario = Path(word)
    if scenario is None:
        return None
    return {"scenario": scenario, **found}


def command(keywords: dict[str, Any]) -> Callable[[], None]:
    """``cnsim run`` with ``keywords`` (from :func:`plain_run`) as the typer app would run it, in the
    process as :mod:`cnsim.cli.process` sets it up: call it to run and exit."""
    from cnsim.cli import process
    from cnsim.cli.common import guarded
    from cnsim.cli.runner import run_command

    return lambda: process.main(lambda: guarded(run_command)(**keywords))

"""The README's commands run as written (issue 34: its `sweep.toml` did not exist, `my.toml` neither).

Every line of the README's "Use" shell block is run by bash, in order, in a scratch folder that
holds the repository's `scenarios/`, `sweeps/`, `tests/` and `.venv/` (links), so the outputs
(`results/...`) land there; then the Python snippet. The long commands — a full reproduction, the
model beside a 100-ms simulation — run in `make test-extensive`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, needs_core

pytestmark = needs_core
LONG = ("cnsim reproduce", "cnsim model")
"""Commands (after `.venv/bin/`) left to the extensive run."""


def _blocks(kind: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    use = text.split("## Use", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{kind}\n(.*?)```", use, re.S)


def _commands() -> list[str]:
    lines = [ln.strip() for block in _blocks("sh") for ln in block.splitlines() if ln.strip()]
    return [re.split(r"\s{2,}#", ln)[0].strip() for ln in lines]


def _long(cmd: str) -> bool:
    return cmd.removeprefix(".venv/bin/").startswith(LONG)


@pytest.fixture(scope="module")
def here(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("readme")
    for name in ("scenarios", "sweeps", "tests", ".venv"):
        (d / name).symlink_to(ROOT / name)
    return d


def _bash(cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True, timeout=1800)


def test_the_readme_has_commands_and_they_name_files_that_exist():
    cmds = _commands()
    assert len(cmds) >= 8 and all(c.startswith(".venv/bin/cnsim ") for c in cmds), cmds
    for c in cmds:
        for word in c.split()[2:]:
            if re.search(r"\.toml$", word) and "*" not in word:
                assert (ROOT / word).is_file(), (c, word)


def test_the_readme_commands_run_as_written(here):
    """In the README's order (the sweep before its summary and plot); each exits 0."""
    for cmd in _commands():
        if _long(cmd):
            continue
        r = _bash(cmd, here)
        assert r.returncode == 0, (cmd, r.stdout[-2000:], r.stderr[-2000:])
    assert (here / "results/sweep/summary.csv").exists() and (here / "results/sym/manifest.json").exists()
    assert list((here / "results/sweep/plots").glob("*.png"))


def test_the_readme_python_snippet_runs(here):
    (snippet,) = _blocks("python")
    r = subprocess.run(
        [sys.executable, "-c", snippet + "\nprint('ok')"], cwd=here, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr


@pytest.mark.extensive
@pytest.mark.timeout(3600)  # the full reproduction: about 8 minutes on an idle 2-core machine
@pytest.mark.parametrize("cmd", [c for c in _commands() if _long(c)])
def test_the_readme_long_commands_run_as_written(here, cmd):
    r = _bash(cmd, here)
    assert r.returncode == 0 and "Traceback" not in r.stderr, (cmd, r.stderr[-2000:])

"""T20 packaging (TESTING.md): the abi3 wheel, installed into a fresh virtualenv with no Rust toolchain on
PATH, imports from that virtualenv and passes ``cnsim selftest --quick`` and a run with outputs.

What this catches that the editable install of ``make build`` cannot: a module, data file (workloads,
studies, scheme pages) or the compiled engine missing from the wheel, a runtime dependency the wheel's
metadata does not declare, and a run path that needs cargo or the source tree's ``python/`` folder.
The virtualenv gets the runtime pins of ``requirements.txt`` (pip's cache makes that ≈ 45 s here).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from conftest import ROOT, needs_core

pytestmark = needs_core


def _runtime_pins() -> list[str]:
    """The pins of requirements.txt above its "build and test" part."""
    pins = []
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith("# build and test"):
            break
        if line.strip() and not line.startswith("#"):
            pins.append(line.strip())
    return pins


def test_the_wheel_works_in_a_fresh_virtualenv_without_rust(tmp_path):
    maturin = Path(sys.executable).with_name("maturin")
    subprocess.run([str(maturin), "build", "--release", "--quiet", "-o", str(tmp_path / "dist")], cwd=ROOT,
                   check=True, capture_output=True)
    wheels = list((tmp_path / "dist").glob("cnsim-*-abi3-*.whl"))
    assert len(wheels) == 1, wheels
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py, cnsim_bin = env_dir / "bin" / "python", env_dir / "bin" / "cnsim"
    pins = _runtime_pins()
    assert any(p.startswith("pydantic==") for p in pins) and not any(p.startswith("maturin") for p in pins)
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-compile", "--disable-pip-version-check",
                    *pins, str(wheels[0])], check=True, capture_output=True)

    # no cargo, no rustc, no project virtualenv, no PYTHONPATH: only what the wheel installed
    env = {"HOME": os.environ.get("HOME", str(tmp_path)), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    assert shutil.which("cargo", path=env["PATH"]) is None and shutil.which("rustc", path=env["PATH"]) is None

    def run(*args: str, cwd: Path = tmp_path) -> subprocess.CompletedProcess:
        return subprocess.run([*args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)

    where = run(str(py), "-c", "import cnsim, cnsim._core; print(cnsim.__file__); print(cnsim._core.__file__)")
    assert where.returncode == 0, where.stderr
    site = str(env_dir / "lib")
    assert all(line.startswith(site) for line in where.stdout.split()), where.stdout

    # the fingerprint regression needs the repository's scenarios and CSV (selftest looks in ./scenarios)
    st = run(str(cnsim_bin), "selftest", "--quick", cwd=ROOT)
    assert st.returncode == 0, st.stdout + st.stderr
    assert "runs match" in st.stdout

    out = tmp_path / "out"
    r = run(str(cnsim_bin), "run", str(ROOT / "scenarios/baseline/fan-in-4.toml"), "--set", "run.duration=1ms",
            "-o", str(out), "--plots", "--no-progress", "-q")
    assert r.returncode == 0, r.stdout + r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "ok" and "flow_tp.parquet" in manifest["files"]
    assert any(name.endswith(".png") for name in manifest["files"]), "plots drawn from the wheel's matplotlib"
    # a bundled workload (package data) resolves from the installed package
    wl = run(str(py), "-c", "from cnsim import workloads as w; "
             "print(len(w.BUNDLED), w.mean_bytes(w.read_cdf(str(w.cdf_path('websearch')))))")
    assert wl.returncode == 0, wl.stderr
    count, mean = wl.stdout.split()
    assert int(count) >= 2 and float(mean) > 1e6, wl.stdout  # WebSearch: ≈ 1.6 MB mean flow

"""Packaging: the abi3 wheel, installed into a fresh virtualenv with no Rust toolchain on PATH, imports
from that virtualenv and passes ``cnsim selftest --quick`` and a run with outputs.

What this catches that the editable install of ``make build`` cannot: a module, data file (workloads,
studies, scheme pages) or the compiled engine missing from the wheel, a runtime dependency the wheel's
metadata does not declare, and a run path that needs cargo or the source tree's ``python/`` folder.

Two tests: in ``make test`` the wheel is unpacked into a virtualenv that borrows the project
virtualenv's third-party packages (a path, not its ``.pth`` files: the editable cnsim stays out of
sight), which checks the wheel's contents, metadata and run path in seconds; the complete check —
``pip install`` of the wheel with the runtime pins of ``requirements.txt`` into an empty virtualenv
(≈ 45 s of pip) — is ``extensive``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
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


def _wheel(tmp_path: Path) -> Path:
    maturin = Path(sys.executable).with_name("maturin")
    subprocess.run(
        [str(maturin), "build", "--release", "--quiet", "-o", str(tmp_path / "dist")],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    wheels = list((tmp_path / "dist").glob("cnsim-*-abi3-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_the_wheel_holds_the_package_and_runs_from_it(tmp_path):
    """The wheel's contents and metadata, then the installed package run from a virtualenv without
    pip, cargo or the source tree (third-party packages borrowed from the project's virtualenv)."""
    import sysconfig
    import zipfile

    wheel = _wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    package = ROOT / "python" / "cnsim"
    shipped = {
        f"cnsim/{p.relative_to(package).as_posix()}"
        for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".so"
    }
    assert shipped <= names, shipped - names
    assert "cnsim/_core.abi3.so" in names
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = zipfile.ZipFile(wheel).read(info).decode()
    declared = {
        re.split(r"[<>=!~ ;\[]", line.split(": ", 1)[1])[0].lower()
        for line in meta.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    }
    assert declared == {re.split(r"[<>=!~ ;\[]", p)[0].lower() for p in _runtime_pins()}
    entry = zipfile.ZipFile(wheel).read(info.replace("METADATA", "entry_points.txt")).decode()
    assert "cnsim=cnsim.entry:main" in entry.replace(" ", "")

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    site = Path(
        subprocess.run(
            [str(env_dir / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    zipfile.ZipFile(wheel).extractall(site)
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # a path: its .pth files unread
    env = {"HOME": os.environ.get("HOME", str(tmp_path)), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    py = str(env_dir / "bin" / "python")
    where = subprocess.run(
        [py, "-c", "import cnsim, cnsim._core; print(cnsim.__file__, cnsim._core.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.returncode == 0 and all(x.startswith(str(site)) for x in where.stdout.split()), where
    out = tmp_path / "out"
    r = subprocess.run(
        [
            py,
            "-m",
            "cnsim",
            "run",
            str(ROOT / "scenarios/baseline/fan-in-4.toml"),
            "--set",
            "run.duration=1ms",
            "-o",
            str(out),
            "--plots",
            "--no-progress",
            "-q",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert {"flow_tp.parquet", "plots/queue.png"} <= set(json.loads((out / "manifest.json").read_text())["files"])
    st = subprocess.run(
        [py, "-m", "cnsim", "selftest", "--quick"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert st.returncode == 0 and "runs match" in st.stdout, st.stdout + st.stderr


@pytest.mark.extensive
def test_the_wheel_works_in_a_fresh_virtualenv_without_rust(tmp_path):
    wheel = _wheel(tmp_path)
    wheels = [wheel]
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py, cnsim_bin = env_dir / "bin" / "python", env_dir / "bin" / "cnsim"
    pins = _runtime_pins()
    assert any(p.startswith("pydantic==") for p in pins) and not any(p.startswith("maturin") for p in pins)
    subprocess.run(
        [
            str(py),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-compile",
            "--disable-pip-version-check",
            *pins,
            str(wheels[0]),
        ],
        check=True,
        capture_output=True,
    )

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
    r = run(
        str(cnsim_bin),
        "run",
        str(ROOT / "scenarios/baseline/fan-in-4.toml"),
        "--set",
        "run.duration=1ms",
        "-o",
        str(out),
        "--plots",
        "--no-progress",
        "-q",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "ok" and "flow_tp.parquet" in manifest["files"]
    assert any(name.endswith(".png") for name in manifest["files"]), "plots drawn from the wheel's matplotlib"
    # a bundled workload (package data) resolves from the installed package
    wl = run(
        str(py),
        "-c",
        "from cnsim import workloads as w; "
        "print(len(w.BUNDLED), w.mean_bytes(w.read_cdf(str(w.cdf_path('websearch')))))",
    )
    assert wl.returncode == 0, wl.stderr
    count, mean = wl.stdout.split()
    assert int(count) >= 2 and float(mean) > 1e6, wl.stdout  # WebSearch: ≈ 1.6 MB mean flow

"""The golden-trace IRs (tests/golden/<case>.ir.json, read by the engine's golden test without Python) are fixed
inputs: a scenario file may change since (seed 003's Pareto alpha did) without touching them. What must not drift is
their format: when the compiler writes a field the committed IR lacks, or no longer writes one it has, the engine
test runs an IR of an older format, and this test names the case and the fields (regenerate with
tests/golden/make_irs.py, then the traces, and say why in the commit)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("make_irs", GOLDEN / "make_irs.py")
make_irs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_irs)


def key_paths(value, path: str = "") -> set[str]:
    """Every key path of a JSON value, list positions collapsed to ``[]``."""
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in {f"{path}.{k}"} | key_paths(v, f"{path}.{k}")}
    if isinstance(value, list):
        return {p for v in value for p in key_paths(v, f"{path}[]")}
    return set()


@pytest.mark.parametrize("case", sorted(make_irs.CASES))
def test_committed_golden_ir_has_the_compilers_format(case):
    committed = key_paths(json.loads((GOLDEN / f"{case}.ir.json").read_text()))
    current = key_paths(json.loads(make_irs.ir_text(case)))
    assert committed == current, (
        f"tests/golden/{case}.ir.json: fields only in the compiler's IR "
        f"{sorted(current - committed)}, only in the committed one {sorted(committed - current)}"
    )

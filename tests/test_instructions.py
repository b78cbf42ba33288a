"""T17 — performance regression by instruction count (bench/instructions.py): extensive tier, since it
builds the Rust runner and runs three workloads under valgrind; the tolerance rule runs always."""

import importlib.util
import shutil

import pytest
from conftest import ROOT


def _module():
    spec = importlib.util.spec_from_file_location("bench_instructions", ROOT / "bench" / "instructions.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_more_than_five_percent_over_the_stored_count_fails():
    m = _module()
    stored = {"a": 1_000_000, "b": 1_000_000}
    assert m.compare({"a": 1_049_999, "b": 900_000}, stored) == []
    assert m.compare({"a": 1_050_001, "b": 1_000_000}, stored) == [
        "a: 1,050,001 instructions, +5.0% over the stored 1,000,000"
    ]
    assert m.compare({"c": 1}, stored) == ["c: no stored count"]


@pytest.mark.extensive
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_instruction_counts_stay_within_five_percent_of_the_stored_ones():
    assert _module().main([]) == 0

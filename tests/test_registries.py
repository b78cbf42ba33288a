"""The engine's scheme registry (Rust, cm::REGISTRY) and the Python parameter registry agree."""

from pathlib import Path

import pytest
from cnsim import schemes
from conftest import needs_core


@needs_core
def test_rust_and_python_scheme_registries_agree():
    from cnsim import _core

    assert sorted(_core.schemes()) == sorted(schemes.SCHEMES), (
        "a scheme is registered on one side only: add its row to cm::REGISTRY (Rust) and its params "
        "module to cnsim.schemes.SCHEMES (Python)"
    )
    assert len(set(_core.schemes())) == len(_core.schemes())


def test_each_scheme_module_is_named_by_its_tag():
    """cnsim.schemes imports a scheme's module by its tag (lazily): module name and TAG must agree."""
    for tag in schemes.SCHEMES:
        s = schemes.SCHEMES[tag]
        assert s.tag == tag and s.module.__name__ == f"cnsim.schemes.{tag}"
    assert "nope" not in schemes.SCHEMES


def _ir_keys(ir: dict, prefix: str = ""):
    for key, value in ir.items():
        if isinstance(value, dict):
            yield from _ir_keys(value, f"{prefix}{key}.")
        else:
            yield prefix + key


def test_every_engine_parameter_has_the_scenario_fields_name():
    """Issue 35: one name per parameter from the TOML to the engine. Every key a scheme's ``to_ir`` writes is its
    scenario field's name, with the unit suffix of its quantity (``qeq`` → ``qeq_bytes``); 22 of 128 were not
    (``q_eq_bytes``, ``sample_p``, ``tmax0_ps``, ``rl_per_transfer``...), and their engine errors named the IR."""
    for tag, scheme in schemes.SCHEMES.items():
        names = scheme.engine_names()
        variants = [scheme.params()]
        if tag in ("bcn", "ecm"):
            variants.append(scheme.params(slow_cp_rate="1Gbps", zero_encoding="legacy", rl_scope="transfer"))
        if tag == "hpcc":
            variants += [scheme.params(base_rtt="12us"), scheme.params(base_rtt="path")]
        for params in variants:
            unnamed = [k for k in _ir_keys(scheme.to_ir(params)) if k not in names]
            assert not unnamed, f"{tag}: engine parameters without a scenario field: {unnamed}"


@needs_core
def test_an_engine_error_names_the_users_field():
    """The engine's own check of a renamed parameter, nested ones included, surfaces under the scenario's name."""
    import json

    from cnsim import api
    from cnsim.exceptions import ConfigError

    def engine_error(tag: str, path: tuple[str, ...], value):
        scheme = schemes.get(tag)
        params = scheme.to_ir(scheme.params())
        node = params
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        ir = json.loads((Path(__file__).parent / "golden" / "fan-in-4-pause.ir.json").read_text())
        ir["cm"] = {"scheme": tag, "params": params}
        with pytest.raises(ConfigError) as err:
            api.engine_check(ir)
        return [p.path for p in err.value.problems]

    assert engine_error("qcn", ("qeq_bytes",), 0) == ["cm.params.qeq"]
    assert engine_error("becn", ("message_size_bytes",), 10) == ["cm.params.message_size"]
    assert engine_error("becn", ("switch", "qeq_bytes"), 0.0) == ["cm.params.qeq"]

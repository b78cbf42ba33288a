"""The engine's scheme registry (Rust, cm::REGISTRY) and the Python parameter registry agree."""

from cnsim import schemes

from conftest import needs_core


@needs_core
def test_rust_and_python_scheme_registries_agree():
    from cnsim import _core

    assert sorted(_core.schemes()) == sorted(schemes.SCHEMES), (
        "a scheme is registered on one side only: add its row to cm::REGISTRY (Rust) and its params "
        "module to cnsim.schemes.SCHEMES (Python)")
    assert len(set(_core.schemes())) == len(_core.schemes())


def test_each_scheme_module_is_named_by_its_tag():
    """cnsim.schemes imports a scheme's module by its tag (lazily): module name and TAG must agree."""
    for tag in schemes.SCHEMES:
        s = schemes.SCHEMES[tag]
        assert s.tag == tag and s.module.__name__ == f"cnsim.schemes.{tag}"
    assert "nope" not in schemes.SCHEMES

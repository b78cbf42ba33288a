"""The code kept between ``cnsim`` processes (cnsim.cli.codecache): the same code as the compiler makes, a bad
file is no file, and the classes made from it behave as without it."""

import marshal
import os
import subprocess
import sys
import textwrap

from cnsim.cli.codecache import CodeCache, cache_path


def test_kept_code_is_the_compilers(tmp_path):
    path = str(tmp_path / "code.marshal")
    first = CodeCache(path)
    text = "def __create_fn__(a, b):\n def f(self, x: a = b): return (self, x)\n return f\n"
    code = first.compiled(text, "exec")
    assert code == compile(text, "<string>", "exec", dont_inherit=True)
    assert first.compiled(text, "exec") is code and first.new == 1
    first.save()
    second = CodeCache(path)
    assert second.compiled(text, "exec") == code and second.new == 0
    second.save()  # nothing new: the file is left as it is
    assert not list(tmp_path.glob("*.tmp"))


def test_a_bad_file_is_no_file(tmp_path):
    path = str(tmp_path / "code.marshal")
    # empty, not marshal, marshal but not a list of entries, an entry without code
    for data in (b"", b"\x00garbage", marshal.dumps([1]), marshal.dumps([("eval", "1 + 1", 2)])):
        (tmp_path / "code.marshal").write_bytes(data)
        cache = CodeCache(path)
        assert cache.compiled("1 + 1", "eval") == compile("1 + 1", "<string>", "eval") and cache.new == 1


def test_no_file_without_an_absolute_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert cache_path() is None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert os.path.dirname(cache_path()) == str(tmp_path / "cnsim")


PROBE = textwrap.dedent(
    """
    import sys
    if sys.argv[1] == "cached":
        from cnsim.cli import codecache
        cache = codecache.install()
    import collections, dataclasses, typing

    @dataclasses.dataclass(frozen=True)
    class P:
        path: str
        value: int = 3
        tags: tuple = dataclasses.field(default_factory=tuple)

    Pair = collections.namedtuple("Pair", "left right")
    p = P("a")
    try:
        p.path = "b"
        frozen = "no error"
    except dataclasses.FrozenInstanceError as exc:
        frozen = repr(exc)
    ref = typing.ForwardRef("dict[str, int]")
    getattr(dataclasses, "exec", exec)("answer = 6 * 7")  # without namespaces: the caller's, as exec's
    print(repr(p), p == P("a"), hash(p) == hash(P("a")), frozen, Pair(1, right=2), Pair._make([3, 4]),
          ref, ref._evaluate(globals(), None, frozenset()), typing.get_type_hints(P), answer)
    if sys.argv[1] == "cached":
        print(cache.new > 0, file=sys.stderr)
        cache.save()
    """
)


def test_classes_made_with_kept_code_behave_alike(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}

    def probe(mode: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", PROBE, mode], env=env, capture_output=True, text=True, timeout=60, check=True
        )

    plain = probe("plain").stdout
    first, second = probe("cached"), probe("cached")
    assert first.stdout == plain and second.stdout == plain
    assert (first.stderr.strip(), second.stderr.strip()) == ("True", "False")  # the second took all from the file
    assert list((tmp_path / "cnsim").glob("code-*.marshal"))

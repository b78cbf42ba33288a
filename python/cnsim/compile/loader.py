"""Reading scenarios: TOML file or dict → ``--set`` overrides → schema → whole-scenario checks.

Every failure is a :class:`~cnsim.exceptions.ConfigError` with one ``path: message (got value)``
line per problem; nothing else escapes for any input (property-tested).
"""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Any, Mapping

import tomli_w
from pydantic import ValidationError

from cnsim.compile.compiler import compile_ir_once
from cnsim.compile.errors import problems_from
from cnsim.exceptions import ConfigError
from cnsim.scenario.spec import TRAFFIC_KINDS, Scenario, build_validators

LIST_KEYS = {"hosts", "switches", "links", "traffic", "hotspot"}
"""Keys whose value is a list of tables (an override may address an element by index or name)."""


def parse_value(text: str) -> Any:
    """A ``--set`` value: a TOML value if it parses (``5``, ``0.5``, ``true``, ``[1, 2]``, ``"x"``), else the text."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(data: dict[str, Any], path: str, value: Any) -> None:
    """Set ``path`` (dotted; list elements by index or by ``name``) to ``value`` in ``data``.

    Missing tables are created; index ``len(list)`` appends; a list element addressed by a name
    that does not exist yet is appended as ``{name = ...}`` (so ``topology.switches.sw1.latency`` overrides a preset switch).
    """
    parts = path.split(".")
    if not path or any(not p for p in parts):
        raise ConfigError.single(f"--set {path}", "empty path element; write e.g. run.duration=5ms")
    node: Any = data
    for k, part in enumerate(parts):
        last = k == len(parts) - 1
        where = ".".join(parts[: k + 1])
        if isinstance(node, list):
            if part.isdigit():
                i = int(part)
                if i > len(node):
                    raise ConfigError.single(
                        f"--set {path}", f"{where}: index out of range (0..{len(node)}; {len(node)} appends)"
                    )
                if i == len(node):
                    node.append({})
            else:
                matches = [j for j, e in enumerate(node) if isinstance(e, dict) and e.get("name") == part]
                if not matches and ".".join(parts[:k]) in ("traffic", "hotspot"):
                    known = [str(e.get("name")) for e in node if isinstance(e, dict) and e.get("name")]
                    raise ConfigError.single(
                        f"--set {path}",
                        f"no {'.'.join(parts[:k])} element named {part!r}; "
                        f"address one by index 0..{len(node) - 1}"
                        + (f" or by name: {', '.join(known)}" if known else ""),
                    )
                if not matches:
                    node.append({"name": part})
                    matches = [len(node) - 1]
                i = matches[0]
            if last:
                node[i] = value
            else:
                if not isinstance(node[i], dict):
                    node[i] = {"name": node[i]} if isinstance(node[i], str) else {}
                node = node[i]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                if part not in node or not isinstance(node[part], (dict, list)):
                    nxt = parts[k + 1]
                    node[part] = [] if part in LIST_KEYS and not nxt.isdigit() else {}
                node = node[part]
        else:
            raise ConfigError.single(f"--set {path}", f"{'.'.join(parts[:k])} is a value, not a table")


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; syntax errors become a ConfigError naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError.single(str(path), f"cannot read file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError.single(str(path), "not a UTF-8 text file") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError.single(str(path), f"TOML syntax error: {exc}") from None


def load_scenario(source: str | Path | Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Load, override, validate and check a scenario (a TOML path or a dict).

    ``overrides`` maps dotted paths to values (``{"cm.params.gd": 5e-4, "run.duration": "5ms"}``).
    The scenario name defaults to the file name. Raises :class:`ConfigError` listing every problem.
    """
    if isinstance(source, Mapping):
        data = copy.deepcopy(dict(source))
        stem = None
    else:
        path = Path(source)
        data = read_toml(path)
        stem = path.stem
    for key, value in (overrides or {}).items():
        apply_override(data, key, value)
    if stem is not None and isinstance(data.get("run", {}), dict):
        data.setdefault("run", {}).setdefault("name", name_from_file(stem))
    build_validators()
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as err:
        raise ConfigError(problems_from(err, Scenario, union_tags=frozenset(TRAFFIC_KINDS))) from None
    compile_ir_once(scenario, keep=True)  # whole-scenario rules (the IR is kept for the run that follows)
    return scenario


def name_from_file(stem: str) -> str:
    """A valid ``run.name`` from any file name: other characters become '_', a leading digit or
    symbol gets a '_' in front, at most 64 characters (``8hosts`` → ``_8hosts``, ``my incast`` →
    ``my_incast``)."""
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", stem) or "scenario"
    if not re.match(r"[A-Za-z_]", name):
        name = "_" + name
    return name[:64]


def dump_toml(scenario: Scenario) -> str:
    """The scenario with every default filled in, as TOML that loads back into the same scenario.

    TOML has no null: unset fields are left out, also inside free-form tables (``cm.params``), where a
    ``None`` means the scheme's default, which leaving the key out gives too."""
    return tomli_w.dumps(_drop_none(scenario.model_dump(mode="json", exclude_none=True)))


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value

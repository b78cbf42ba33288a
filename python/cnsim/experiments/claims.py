"""The claims of a study's reproduction: the ``holds`` expression of a claim (comparisons, and/or/not,
arithmetic and abs/min/max of its terms) checked, and evaluated with a margin — a comparison holds only
when its difference is at least its own 95 % confidence half-width (issue 32's tightened criterion)."""

from __future__ import annotations

import ast
import math
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from cnsim.experiments.reproduce import Claim

_CLAIM_NODES = (
    ast.Expression,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.UnaryOp,
    ast.Not,
    ast.USub,
    ast.UAdd,
    ast.Compare,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.BinOp,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.Pow,
    ast.Name,
    ast.Load,
    ast.Constant,
    ast.Call,
)
_CLAIM_FUNCS = {"abs": abs, "min": min, "max": max}


def check_claim_expr(expr: str, names: set[str]) -> ast.Expression:
    """Parse a claim's ``holds`` expression: comparisons, and/or/not, arithmetic, abs/min/max of the
    term names and numbers. Raises ValueError naming what is not allowed."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an expression: {exc.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _CLAIM_NODES):
            raise ValueError(f"not allowed in a claim: {type(node).__name__}")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _CLAIM_FUNCS):
            raise ValueError("the only functions are abs, min, max")
        if isinstance(node, ast.Name) and node.id not in names and node.id not in _CLAIM_FUNCS:
            raise ValueError(f"unknown term {node.id!r}; terms: {', '.join(sorted(names))}")
    return tree


def claim_verdict(
    claim: Claim, values: Mapping[str, float | None], cis: Mapping[str, float | None] | None = None
) -> str:
    """holds / does not hold / not available (a term without a value). See :func:`claim_margins`."""
    return claim_margins(claim, values, cis)[0]


def claim_margins(
    claim: Claim, values: Mapping[str, float | None], cis: Mapping[str, float | None] | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """The verdict and, per comparison of ``holds``, its margin (spec issue 32: a claim holds only with a
    margin at least its 95 % CI). Each comparison ``L op R`` is true when ``L - R`` has the right sign and
    ``|L - R|`` is at least the 95 % half-width of ``L - R``, propagated from the terms' half-widths (``cis``;
    a missing one counts as 0) by one-sided differences, the steeper side, in quadrature. ``and``/``or``/``not`` combine them."""
    if any(v is None for v in values.values()):
        return "not available", []
    tree = check_claim_expr(claim.holds, set(values))
    env = {k: float(v) for k, v in values.items()}
    half = {k: float(c) for k, c in (cis or {}).items() if c is not None and math.isfinite(c) and c > 0}
    margins: list[dict[str, Any]] = []
    try:
        ok = _truth(tree.body, env, half, margins)
    except ZeroDivisionError:
        return "not available", margins
    return ("holds" if ok else "does not hold"), margins


def _value(node: ast.AST, env: Mapping[str, float]) -> float:
    """An arithmetic sub-expression of a claim (checked by :func:`check_claim_expr`) at the values ``env``."""
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        v = _value(node.operand, env)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _value(node.left, env), _value(node.right, env)
        ops = {
            ast.Add: lambda: a + b,
            ast.Sub: lambda: a - b,
            ast.Mult: lambda: a * b,
            ast.Div: lambda: a / b,
            ast.Pow: lambda: a**b,
        }
        return float(ops[type(node.op)]())
    if isinstance(node, ast.Call):
        return float(_CLAIM_FUNCS[node.func.id](*(_value(x, env) for x in node.args)))
    raise ValueError(f"not a number in a claim: {ast.unparse(node)}")


def _truth(node: ast.AST, env: Mapping[str, float], half: Mapping[str, float], margins: list) -> bool:
    if isinstance(node, ast.BoolOp):
        vals = [_truth(v, env, half, margins) for v in node.values]  # every comparison is recorded
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _truth(node.operand, env, half, margins)
    if not isinstance(node, ast.Compare):
        raise ValueError(f"not a comparison: {ast.unparse(node)}")
    ok = True
    left = node.left
    for op, right in zip(node.ops, node.comparators):
        ok = _compare(left, op, right, env, half, margins) and ok
        left = right
    return ok


def _compare(
    left: ast.AST, op: ast.cmpop, right: ast.AST, env: Mapping[str, float], half: Mapping[str, float], margins: list
) -> bool:
    """One comparison with its margin: the difference must exceed its own 95 % half-width."""

    def diff(e: Mapping[str, float]) -> float:
        return _value(left, e) - _value(right, e)

    d = diff(env)
    sq = 0.0
    for k, h in half.items():
        up, down = dict(env), dict(env)
        up[k] += h
        down[k] -= h
        try:  # the steeper side: a kink (abs, min, max) near the mean must not hide the term's spread
            sq += max(abs(diff(up) - d), abs(d - diff(down))) ** 2
        except ZeroDivisionError:
            sq = math.inf
    ci = math.sqrt(sq)
    want_less = isinstance(op, (ast.Lt, ast.LtE))
    signed = -d if want_less else d  # > 0 when the comparison holds
    strict = isinstance(op, (ast.Lt, ast.Gt))
    ok = (signed > 0 if strict else signed >= 0) and signed >= ci
    margins.append(
        {
            "comparison": f"{ast.unparse(left)} {_OPS[type(op)]} {ast.unparse(right)}",
            "difference": d,
            "ci95": ci,
            "holds": ok,
        }
    )
    return ok


_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}

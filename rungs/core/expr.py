"""A tiny, safe evaluator for the roofline formulas in task specs (`2*M*N*K`, `4*B*H*S*S*D*(0.5 if causal else 1)`).

Only arithmetic, comparisons, `x if c else y`, names of shape variables and min/max/sqrt: a task file is data,
never code that runs in the harness.
"""
from __future__ import annotations

import ast
import math
import operator
from typing import Any

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow, ast.Mod: operator.mod}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}
_FUNCS = {"min": min, "max": max, "sqrt": math.sqrt, "ceil": math.ceil, "floor": math.floor}


class ExprError(ValueError):
    def __init__(self, message: str, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name
        """The shape variable at fault, when one is (its value is not a number)."""


def check_expr(text: str) -> None:
    """Raise ExprError if `text` uses anything the evaluator does not allow."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"not a formula: {exc.msg}") from None
    for node in ast.walk(tree):
        allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.USub, ast.UAdd, ast.Constant, ast.Name, ast.Load,
                   ast.IfExp, ast.Compare, ast.Call, ast.BoolOp, ast.And, ast.Or, ast.Not, *_BINOPS, *_CMPOPS)
        if not isinstance(node, allowed):
            raise ExprError(f"'{type(node).__name__}' is not allowed in a formula")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS):
            raise ExprError(f"only {', '.join(_FUNCS)} may be called in a formula")


def evaluate(text: str, names: dict[str, Any]) -> float:
    check_expr(text)

    def ev(node: ast.AST) -> Any:
        match node:
            case ast.Expression(body=body):
                return ev(body)
            case ast.Constant(value=value):
                return value
            case ast.Name(id=name):
                if name in names:
                    value = names[name]
                    if not isinstance(value, (int, float)):  # bool is an int: `causal` may scale a formula
                        raise ExprError(f"shape variable {name} is {value!r}, not a number", name=name)
                    return value
                raise ExprError(f"unknown name {name!r} (shape variables: {', '.join(names)})")
            case ast.BinOp(left=left, op=op, right=right):
                return _BINOPS[type(op)](ev(left), ev(right))
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                return -ev(operand)
            case ast.UnaryOp(op=ast.UAdd(), operand=operand):
                return ev(operand)
            case ast.UnaryOp(op=ast.Not(), operand=operand):
                return not ev(operand)
            case ast.IfExp(test=test, body=body, orelse=orelse):
                return ev(body) if ev(test) else ev(orelse)
            case ast.BoolOp(op=ast.And(), values=values):
                return all(ev(v) for v in values)
            case ast.BoolOp(op=ast.Or(), values=values):
                return any(ev(v) for v in values)
            case ast.Compare(left=left, ops=[op], comparators=[right]):
                return _CMPOPS[type(op)](ev(left), ev(right))
            case ast.Call(func=ast.Name(id=fn), args=args):
                return _FUNCS[fn](*(ev(a) for a in args))
        raise ExprError(f"cannot evaluate {ast.dump(node)}")

    return float(ev(ast.parse(text, mode="eval")))

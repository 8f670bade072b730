"""Evaluating parsed rule conditions (:mod:`advisor.engine.expr`) over facts and thresholds.

Unknown values (a fact that could not be computed) are ``None`` and propagate with
three-valued logic: ``None > 3`` is unknown, ``false and None`` is false, ``true or None`` is true.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from advisor.engine.expr import (Attr, BoolOp, Binary, Call, Compare, Const, ExprError, Index, ListExpr, Name,
                                 Node, Unary, parse)


def _len(x):
    return None if x is None else len(x)


def _nullsafe(fn):
    def wrapped(*args):
        if any(a is None for a in args):
            return None
        return fn(*args)
    return wrapped


def _over_values(fn):
    """`fn` of its arguments or of one list argument; unknown when there is none or one is unknown."""
    def wrapped(*args):
        vals = list(args[0] if len(args) == 1 and isinstance(args[0], list) else args)
        return None if not vals or any(v is None for v in vals) else fn(vals)
    return wrapped


FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {
    # name: (function, min args, max args)
    "min": (_over_values(min), 1, 8),
    "max": (_over_values(max), 1, 8),
    "abs": (_nullsafe(abs), 1, 1),
    "len": (_len, 1, 1),
    "log2": (_nullsafe(lambda x: math.log2(x) if x > 0 else None), 1, 1),
    "ceil": (_nullsafe(math.ceil), 1, 1),
    "floor": (_nullsafe(math.floor), 1, 1),
    "known": (lambda x: x is not None, 1, 1),
    "default": (lambda x, d: d if x is None else x, 2, 2),
}
"""Pure functions a condition may call (plus ``fired('CODE')``, handled by the engine)."""

_SCALARS = (int, float, str, bool, type(None))


class Evaluator:
    """Evaluates parsed conditions over `lookup(name)` (facts and thresholds) and `fired(code)`."""

    def __init__(self, lookup: Callable[[str], Any], fired: Callable[[str], bool] | None = None):
        self.lookup = lookup
        self.fired = fired or (lambda code: False)

    def evaluate(self, node: Node) -> Any:
        try:
            return self._eval(node)
        except ExprError:
            raise
        except (TypeError, ValueError, OverflowError, KeyError, IndexError) as exc:
            raise ExprError(f"cannot evaluate: {exc}", node.pos + 1) from None
        except RecursionError:
            raise ExprError("condition nested too deeply") from None

    def _eval(self, node: Node) -> Any:
        method = getattr(self, "_" + type(node).__name__)
        return method(node)

    def _Const(self, node: Const) -> Any:
        return node.value

    def _Name(self, node: Name) -> Any:
        return self.lookup(node.name)

    def _ListExpr(self, node: ListExpr) -> Any:
        return [self._eval(item) for item in node.items]

    def _Call(self, node: Call) -> Any:
        if node.func == "fired":
            if len(node.args) != 1 or not isinstance(node.args[0], Const) \
                    or not isinstance(node.args[0].value, str):
                raise ExprError("fired() takes one rule code in quotes", node.pos + 1)
            return bool(self.fired(node.args[0].value))
        if node.func not in FUNCTIONS:
            raise ExprError(f"unknown function {node.func!r}", node.pos + 1)
        fn, lo, hi = FUNCTIONS[node.func]
        if not lo <= len(node.args) <= hi:
            raise ExprError(f"{node.func}() takes {lo}..{hi} arguments", node.pos + 1)
        return fn(*(self._eval(a) for a in node.args))

    def _Attr(self, node: Attr) -> Any:
        base = self._eval(node.base)
        if base is None:
            return None
        if not isinstance(base, dict):
            raise ExprError(f"'.{node.name}' on a {type(base).__name__}", node.pos + 1)
        if node.name not in base:
            raise ExprError(f"no field {node.name!r}", node.pos + 1)
        return base[node.name]

    def _Index(self, node: Index) -> Any:
        base, index = self._eval(node.base), self._eval(node.index)
        if base is None or index is None:
            return None
        if isinstance(base, list) and isinstance(index, int) and not isinstance(index, bool):
            return base[index] if -len(base) <= index < len(base) else None
        if isinstance(base, dict) and isinstance(index, str):
            return base.get(index)
        raise ExprError(f"cannot index a {type(base).__name__} with {type(index).__name__}",
                        node.pos + 1)

    def _Unary(self, node: Unary) -> Any:
        value = self._eval(node.operand)
        if value is None:
            return None
        if node.op == "not":
            return not _truth(value, node)
        _need_number(value, node)
        return -value

    def _Binary(self, node: Binary) -> Any:
        left, right = self._eval(node.left), self._eval(node.right)
        if left is None or right is None:
            return None
        _need_number(left, node)
        _need_number(right, node)
        if node.op == "+":
            return left + right
        if node.op == "-":
            return left - right
        if node.op == "*":
            return left * right
        if right == 0:
            return None  # a ratio over nothing is unknown, not an error
        return left / right if node.op == "/" else left % right

    def _Compare(self, node: Compare) -> Any:
        left = self._eval(node.first)
        result: bool | None = True
        for op, rest in zip(node.ops, node.rest):
            right = self._eval(rest)
            step = _compare(op, left, right, node)
            if step is False:
                return False
            if step is None:
                result = None
            left = right
        return result

    def _BoolOp(self, node: BoolOp) -> Any:
        unknown = False
        stop = node.op == "or"  # `or` stops at the first true, `and` at the first false
        for item in node.items:
            value = self._eval(item)
            if value is None:
                unknown = True
            elif _truth(value, item) is stop:
                return stop
        return None if unknown else not stop


def _truth(value: Any, node: Node) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, (list, dict, str)):
        return len(value) > 0
    raise ExprError(f"a {type(value).__name__} is neither true nor false", node.pos + 1)


def _need_number(value: Any, node: Node) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ExprError(f"arithmetic on a {type(value).__name__}", node.pos + 1)


def _compare(op: str, left: Any, right: Any, node: Node) -> bool | None:
    if left is None or right is None:
        return None
    if op == "in":
        if not isinstance(right, (list, dict, str)):
            raise ExprError(f"'in' needs a list, not a {type(right).__name__}", node.pos + 1)
        if isinstance(right, str) and not isinstance(left, str):
            raise ExprError("'in' on text needs text on the left", node.pos + 1)
        return left in right
    if op in ("==", "!="):
        equal = left == right
        return equal if op == "==" else not equal
    numeric = (isinstance(left, (int, float)) and isinstance(right, (int, float)))
    if not numeric and not (isinstance(left, str) and isinstance(right, str)):
        raise ExprError(f"cannot compare {type(left).__name__} with {type(right).__name__}",
                        node.pos + 1)
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


def evaluate(text_or_node: str | Node, values: dict[str, Any] | None = None,
             fired: Callable[[str], bool] | None = None) -> Any:
    """Convenience: evaluate `text_or_node` with names from `values` (unknown names are errors)."""
    node = parse(text_or_node) if isinstance(text_or_node, str) else text_or_node
    values = values or {}

    def lookup(name: str) -> Any:
        if name not in values:
            raise ExprError(f"unknown name {name!r}")
        return values[name]

    return Evaluator(lookup, fired).evaluate(node)

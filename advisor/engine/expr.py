"""The rule condition language: a small expression grammar, parsed and evaluated without `eval`.

    expr    := or
    or      := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare
    compare := sum (("<" | "<=" | ">" | ">=" | "==" | "!=" | "in") sum)*   (chained like Python)
    sum     := term (("+" | "-") term)*
    term    := unary (("*" | "/" | "%") unary)*
    unary   := "-" unary | postfix
    postfix := atom ("." NAME | "[" expr "]")*
    atom    := NUMBER [UNIT] | STRING | "true" | "false" | "null" | NAME | NAME "(" args ")"
             | "(" expr ")" | "[" [expr ("," expr)*] "]"

Numbers take a unit: ``4KiB``, ``1MiB``, ``2GiB``, ``10%`` (= 0.1), ``5s``, ``100ms``.
Names are facts or thresholds; the only functions are :data:`FUNCTIONS` and ``fired('CODE')``.

Unknown values (a fact that could not be computed) are ``None`` and propagate with
three-valued logic: ``None > 3`` is unknown, ``false and None`` is false, ``true or None`` is true.
"""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

MAX_LENGTH = 4000
MAX_DEPTH = 60

UNITS = {
    "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
    "KB": 1000, "MB": 1000**2, "GB": 1000**3,
    "%": 0.01, "s": 1.0, "ms": 1e-3, "us": 1e-6,
}
KEYWORDS = {"and", "or", "not", "in", "true", "false", "null"}


class ExprError(Exception):
    """A condition that cannot be parsed or evaluated; `column` is 1-based within the text."""

    def __init__(self, message: str, column: int | None = None):
        super().__init__(message if column is None else f"{message} (column {column})")
        self.column = column


# ---------------------------------------------------------------- tokens

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:KiB|MiB|GiB|TiB|KB|MB|GB|ms|us|%|s(?![A-Za-z_0-9]))?)
  | (?P<string>'[^'\\\n]*'|"[^"\\\n]*")
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op><=|>=|==|!=|[<>+\-*/%().,\[\]])
""", re.VERBOSE)


@dataclass(frozen=True)
class Token:
    kind: str  # number, string, name, op, end
    text: str
    pos: int


def tokenize(text: str) -> list[Token]:
    if len(text) > MAX_LENGTH:
        raise ExprError(f"condition longer than {MAX_LENGTH} characters")
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ExprError(f"unexpected character {text[pos]!r}", pos + 1)
        if m.lastgroup != "ws":
            tokens.append(Token(m.lastgroup, m.group(), pos))
        pos = m.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


def _number(text: str) -> float | int:
    m = re.fullmatch(r"([0-9.eE+-]+?)(KiB|MiB|GiB|TiB|KB|MB|GB|ms|us|%|s)?", text)
    digits, unit = m.group(1), m.group(2)
    value: float | int = float(digits) if any(c in digits for c in ".eE") else int(digits)
    if unit:
        value = value * UNITS[unit]
        if isinstance(value, float) and value.is_integer() and unit not in ("%", "ms", "us", "s"):
            value = int(value)
    return value


def quantity(value: Any) -> int | float:
    """A threshold value: a number, or text with a unit ('10%', '4MiB', '-2s')."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        node = parse(value.strip())
        if isinstance(node, Unary) and node.op == "-" and isinstance(node.operand, Const):
            node = Const(node.pos, -node.operand.value) if isinstance(node.operand.value, (int, float)) else node
        if isinstance(node, Const) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
    raise ExprError(f"{value!r} is not a number (units: {', '.join(UNITS)})")


# ---------------------------------------------------------------- AST

@dataclass(frozen=True)
class Node:
    pos: int


@dataclass(frozen=True)
class Const(Node):
    value: Any


@dataclass(frozen=True)
class Name(Node):
    name: str


@dataclass(frozen=True)
class Call(Node):
    func: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Attr(Node):
    base: Node
    name: str


@dataclass(frozen=True)
class Index(Node):
    base: Node
    index: Node


@dataclass(frozen=True)
class ListExpr(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Unary(Node):
    op: str  # "-" or "not"
    operand: Node


@dataclass(frozen=True)
class Binary(Node):
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Compare(Node):
    first: Node
    ops: tuple[str, ...]
    rest: tuple[Node, ...]


@dataclass(frozen=True)
class BoolOp(Node):
    op: str  # "and" / "or"
    items: tuple[Node, ...]


# ---------------------------------------------------------------- parser

class _Parser:
    def __init__(self, text: str):
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def next(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def accept(self, *texts: str) -> Token | None:
        tok = self.tok
        if tok.kind in ("op", "name") and tok.text in texts:
            self.i += 1
            return tok
        return None

    def expect(self, text: str) -> Token:
        tok = self.accept(text)
        if tok is None:
            raise ExprError(f"expected {text!r}, found {self.tok.text or 'end of condition'!r}",
                            self.tok.pos + 1)
        return tok

    def parse(self) -> Node:
        node = self.expr()
        if self.tok.kind != "end":
            raise ExprError(f"unexpected {self.tok.text!r}", self.tok.pos + 1)
        return node

    @contextmanager
    def deeper(self, pos: int) -> Iterator[None]:
        """One nesting level more; refused past MAX_DEPTH, well before Python's recursion limit."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprError("condition nested too deeply", pos + 1)
        try:
            yield
        finally:
            self.depth -= 1

    def expr(self) -> Node:
        with self.deeper(self.tok.pos):
            return self.boolop("or", self.and_)

    def and_(self) -> Node:
        return self.boolop("and", self.not_)

    def boolop(self, op: str, operand: Callable[[], Node]) -> Node:
        pos = self.tok.pos
        items = [operand()]
        while self.accept(op):
            items.append(operand())
        return items[0] if len(items) == 1 else BoolOp(pos, op, tuple(items))

    def not_(self) -> Node:
        tok = self.accept("not")
        if tok:
            with self.deeper(tok.pos):
                return Unary(tok.pos, "not", self.not_())
        return self.compare()

    def compare(self) -> Node:
        pos = self.tok.pos
        first = self.sum()
        ops, rest = [], []
        while True:
            tok = self.accept("<", "<=", ">", ">=", "==", "!=", "in")
            if not tok:
                break
            ops.append(tok.text)
            rest.append(self.sum())
        return Compare(pos, first, tuple(ops), tuple(rest)) if ops else first

    def sum(self) -> Node:
        node = self.term()
        while tok := self.accept("+", "-"):
            node = Binary(tok.pos, tok.text, node, self.term())
        return node

    def term(self) -> Node:
        node = self.unary()
        while tok := self.accept("*", "/", "%"):
            node = Binary(tok.pos, tok.text, node, self.unary())
        return node

    def unary(self) -> Node:
        tok = self.accept("-")
        if tok:
            with self.deeper(tok.pos):
                return Unary(tok.pos, "-", self.unary())
        return self.postfix()

    def postfix(self) -> Node:
        node = self.atom()
        while True:
            if tok := self.accept("."):
                name = self.next()
                if name.kind != "name" or name.text in KEYWORDS:
                    raise ExprError("expected a field name after '.'", name.pos + 1)
                node = Attr(tok.pos, node, name.text)
            elif tok := self.accept("["):
                node = Index(tok.pos, node, self.expr())
                self.expect("]")
            else:
                return node

    def atom(self) -> Node:
        tok = self.next()
        if tok.kind == "number":
            return Const(tok.pos, _number(tok.text))
        if tok.kind == "string":
            return Const(tok.pos, tok.text[1:-1])
        if tok.kind == "name":
            if tok.text in ("true", "false", "null"):
                return Const(tok.pos, {"true": True, "false": False, "null": None}[tok.text])
            if tok.text in KEYWORDS:
                raise ExprError(f"unexpected {tok.text!r}", tok.pos + 1)
            if self.accept("("):
                args = []
                if not self.accept(")"):
                    args.append(self.expr())
                    while self.accept(","):
                        args.append(self.expr())
                    self.expect(")")
                return Call(tok.pos, tok.text, tuple(args))
            return Name(tok.pos, tok.text)
        if tok.kind == "op" and tok.text == "(":
            node = self.expr()
            self.expect(")")
            return node
        if tok.kind == "op" and tok.text == "[":
            items = []
            if not self.accept("]"):
                items.append(self.expr())
                while self.accept(","):
                    items.append(self.expr())
                self.expect("]")
            return ListExpr(tok.pos, tuple(items))
        raise ExprError(f"unexpected {tok.text or 'end of condition'!r}", tok.pos + 1)


def parse(text: str) -> Node:
    """Parse a condition; :class:`ExprError` (with the column) when it is not well formed."""
    if not isinstance(text, str):
        raise ExprError(f"a condition must be text, not {type(text).__name__}")
    return _Parser(text).parse()


# ---------------------------------------------------------------- names and calls used

def names(node: Node) -> set[str]:
    """Every bare name the expression reads (facts and thresholds)."""
    found: set[str] = set()
    _walk(node, lambda n: found.add(n.name) if isinstance(n, Name) else None)
    return found


def calls(node: Node) -> list[Call]:
    found: list[Call] = []
    _walk(node, lambda n: found.append(n) if isinstance(n, Call) else None)
    return found


def _walk(node: Node, visit: Callable[[Node], None]) -> None:
    visit(node)
    for child in _children(node):
        _walk(child, visit)


def _children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Call):
        return node.args
    if isinstance(node, Attr):
        return (node.base,)
    if isinstance(node, Index):
        return (node.base, node.index)
    if isinstance(node, ListExpr):
        return node.items
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, Compare):
        return (node.first, *node.rest)
    if isinstance(node, BoolOp):
        return node.items
    return ()


# ---------------------------------------------------------------- evaluation

def _len(x):
    return None if x is None else len(x)


def _nullsafe(fn):
    def wrapped(*args):
        if any(a is None for a in args):
            return None
        return fn(*args)
    return wrapped


def _min(*args):
    vals = [a for a in (args[0] if len(args) == 1 and isinstance(args[0], list) else args)]
    return None if not vals or any(v is None for v in vals) else min(vals)


def _max(*args):
    vals = [a for a in (args[0] if len(args) == 1 and isinstance(args[0], list) else args)]
    return None if not vals or any(v is None for v in vals) else max(vals)


FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {
    # name: (function, min args, max args)
    "min": (_min, 1, 8),
    "max": (_max, 1, 8),
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

"""The rule condition language: a small expression grammar, parsed without `eval`.

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
Names are facts or thresholds; the only functions are
:data:`advisor.engine.evaluator.FUNCTIONS` and ``fired('CODE')``.
Evaluation (three-valued, over facts) is :mod:`advisor.engine.evaluator`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from advisor.records import Frozen
from advisor.units import NUMBER, UNITS, with_unit

MAX_LENGTH = 4000
MAX_DEPTH = 60

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


class Token(Frozen):
    """A lexical token of a condition."""
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
    m = re.fullmatch(rf"({NUMBER})({'|'.join(UNITS)})?", text)
    return with_unit(m.group(1), m.group(2))


# ---------------------------------------------------------------- AST

class Node(Frozen):
    """A node of a parsed condition (its position, for errors)."""
    pos: int


class Const(Node):
    """A literal: number, string, true, false or null."""
    value: Any


class Name(Node):
    """A fact or threshold named in a condition."""
    name: str


class Call(Node):
    """A call of one of the evaluator's functions."""
    func: str
    args: tuple[Node, ...]


class Attr(Node):
    """A field of a value: ``base.name``."""
    base: Node
    name: str


class Index(Node):
    """An item of a value: ``base[index]``."""
    base: Node
    index: Node


class ListExpr(Node):
    """A list literal."""
    items: tuple[Node, ...]


class Unary(Node):
    """``-x`` or ``not x``."""
    op: str  # "-" or "not"
    operand: Node


class Binary(Node):
    """An arithmetic operation."""
    op: str
    left: Node
    right: Node


class Compare(Node):
    """A comparison chain, as Python's: ``a < b <= c``."""
    first: Node
    ops: tuple[str, ...]
    rest: tuple[Node, ...]


class BoolOp(Node):
    """``and`` / ``or`` over two or more items."""
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


def unparse(node: Node) -> str:
    """The expression as source text (every operation parenthesised): for rule docs."""
    match node:
        case Const(value=bool() as value):
            return "true" if value else "false"
        case Const(value=None):
            return "null"
        case Const(value=str() as value):
            return repr(value)
        case Const(value=value):
            return str(value)
        case Name(name=name):
            return name
        case Call(func=func, args=args):
            return f"{func}({', '.join(map(unparse, args))})"
        case Attr(base=base, name=name):
            return f"{unparse(base)}.{name}"
        case Index(base=base, index=index):
            return f"{unparse(base)}[{unparse(index)}]"
        case ListExpr(items=items):
            return f"[{', '.join(map(unparse, items))}]"
        case Unary(op=op, operand=operand):
            return f"{op} {unparse(operand)}" if op == "not" else f"{op}{unparse(operand)}"
        case Binary(op=op, left=left, right=right):
            return f"({unparse(left)} {op} {unparse(right)})"
        case Compare(first=first, ops=ops, rest=rest):
            return "(" + unparse(first) + "".join(f" {op} {unparse(x)}" for op, x in zip(ops, rest)) + ")"
        case BoolOp(op=op, items=items):
            return "(" + f" {op} ".join(map(unparse, items)) + ")"
    raise TypeError(f"not an expression node: {node!r}")

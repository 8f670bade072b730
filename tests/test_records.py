"""advisor.records.Frozen behaves as the frozen dataclass it replaces: construction, defaults,
equality, hashing, repr, immutability, pickling and match patterns, side by side with a
dataclass of the same fields, and on the parsed conditions of the real rule catalogue."""

from __future__ import annotations

import copy
import pickle
from dataclasses import FrozenInstanceError, dataclass

import pytest

from advisor.engine import expr
from advisor.engine.rules import load_catalogue
from advisor.records import Frozen


class Point(Frozen):
    """A record with a default."""
    x: int
    y: int = 0


class Labelled(Point):
    """A subclass: its parent's fields first."""
    label: str = ""


@dataclass(frozen=True)
class PointDC:
    x: int
    y: int = 0


def test_construction_and_defaults_as_a_dataclass():
    assert Point(1).y == 0 and Point(1, 2).y == 2 and Point(y=3, x=1) == Point(1, 3)
    assert Labelled(1, 2, "a")._fields == ("x", "y", "label") and Labelled(1).label == ""
    assert Labelled.__match_args__ == ("x", "y", "label")
    for bad in (lambda: Point(), lambda: Point(1, 2, 3), lambda: Point(1, x=2), lambda: Point(1, z=2)):
        with pytest.raises(TypeError):
            bad()


def test_equality_hash_and_repr_as_a_dataclass():
    for a, b, dc_a, dc_b in ((Point(1, 2), Point(1, 2), PointDC(1, 2), PointDC(1, 2)),
                             (Point(1, 2), Point(1, 3), PointDC(1, 2), PointDC(1, 3))):
        assert (a == b) == (dc_a == dc_b) and (hash(a) == hash(b)) == (hash(dc_a) == hash(dc_b))
    assert hash(Point(1, 2)) == hash(PointDC(1, 2))  # both hash the tuple of the fields
    assert repr(Point(1, "b")) == repr(PointDC(1, "b")).replace("PointDC", "Point")
    assert Point(1, 2) != Labelled(1, 2) and Point(1, 2) != (1, 2)  # the same class only


def test_immutable_and_pickled_by_value():
    p = Labelled(1, 2, "a")
    for change in (lambda: setattr(p, "x", 5), lambda: delattr(p, "x"), lambda: setattr(p, "new", 1)):
        with pytest.raises(FrozenInstanceError):
            change()
    for again in (pickle.loads(pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL)), copy.deepcopy(p), copy.copy(p)):
        assert again == p and type(again) is Labelled and again.label == "a"


def test_the_catalogue_conditions_survive_a_pickle_and_unparse_the_same():
    rules = load_catalogue().rules
    nodes = [node for rule in rules for node in rule.expressions()]
    assert len(nodes) > 100
    back = pickle.loads(pickle.dumps(nodes, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == nodes and [hash(n) for n in back] == [hash(n) for n in nodes]
    assert [expr.unparse(n) for n in back] == [expr.unparse(n) for n in nodes]
    assert all(expr.parse(expr.unparse(n)) == expr.parse(expr.unparse(expr.parse(expr.unparse(n)))) for n in nodes)
    match expr.parse("a < 1"):
        case expr.Compare(first=expr.Name(name="a"), ops=("<",)):
            pass
        case other:
            pytest.fail(f"match patterns: {other!r}")

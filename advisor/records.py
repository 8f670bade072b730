"""Immutable records made without generated code: what a frozen dataclass gives, for classes
made by the dozen at start-up.

A dataclass compiles and runs the source of its ``__init__``, ``__repr__``, ``__eq__`` and, when
frozen, ``__hash__``, ``__setattr__`` and ``__delattr__`` for every class (about 1 ms each here;
a one-log ``diagnose`` imported some 80 of them). :class:`Frozen` has one of each for all its
subclasses, reading the fields from the class annotations.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any


class Frozen:
    """A record of the fields its class annotates (a parent's first), set once by ``__init__`` and
    compared, hashed and shown by their values, as a ``@dataclass(frozen=True)``: a field given a
    value in the class body has it as its default (no ``field()``); equal only to a record of the
    same class; pickled and copied by its ``__dict__``."""

    _fields: tuple[str, ...] = ()
    _defaults: dict[str, Any] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = tuple(cls.__dict__.get("__annotations__", ()))
        cls._fields = cls._fields + own
        cls._defaults = {**cls._defaults, **{name: cls.__dict__[name] for name in own if name in cls.__dict__}}
        cls.__match_args__ = cls._fields

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = self._fields
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes {len(names)} arguments, {len(args)} given")
        values = {**self._defaults, **dict(zip(names, args))}
        for name, value in kwargs.items():
            if name not in names or name in names[:len(args)]:
                raise TypeError(f"{type(self).__name__}() got an unexpected or repeated argument {name!r}")
            values[name] = value
        missing = [name for name in names if name not in values]
        if missing:
            raise TypeError(f"{type(self).__name__}() missing arguments: {', '.join(missing)}")
        self.__dict__.update((name, values[name]) for name in names)

    def _values(self) -> tuple[Any, ...]:
        return tuple(self.__dict__[name] for name in self._fields)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={self.__dict__[name]!r}" for name in self._fields)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

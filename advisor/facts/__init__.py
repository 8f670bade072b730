"""Named facts about one job: the only thing rules may look at.

A fact is a function of a :class:`FactContext` (the job profile, the site config and the
other facts), registered with :func:`fact` under a name, its unit kind (advisor.units.KINDS:
bytes, seconds, rate, ratio, fraction, count ...), a one-line doc and a label: the words every
report shows for it (evidence tables, JSON ``evidence_meta``, docs/rules.md). A record-valued
fact declares its fields' kinds too. Values are in their kind's base unit (bytes, seconds,
bytes/s), so the JSON needs no unit per number.
Facts are computed lazily, once per profile. A fact that cannot be computed for this
profile raises :class:`Missing` with the reason (the rules that need it go to
``not_checked``); a fact that does not apply to this kind of input (Darshan facts of an
IOR run) raises :class:`NotApplicable` and the rule is skipped silently.

Every module of this package is a concern (``requests``, ``lustre``, ``ost`` ...) and is
imported by :func:`registry`, so a new module adds facts without touching anything else.
The checked rule catalogue keeps which module defines each name (:func:`index`); given it
(:func:`use_index`), the engine imports only the modules of the facts it asks for
(:func:`known`): a Darshan log loads none of the IOR, IOzone, fio, campaign or snapshot facts.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from advisor.config import SiteConfig
from advisor.expectation import JobExpectation
from advisor.profile import JobProfile
from advisor.records import Frozen
from advisor.units import KINDS, Field, check_kind


class Missing(Exception):
    """This fact cannot be computed for this profile; `reason` says why (no DXT, no LUSTRE ...)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class NotApplicable(Missing):
    """This fact means nothing for this kind of input (rules needing it are skipped silently)."""


class Fact(Frozen):
    """A registered fact: its name, unit kind, documentation and how it is computed."""
    name: str
    kind: str  # a unit kind of advisor.units.KINDS; a list-valued fact has its items' kind
    doc: str
    compute: Callable[[FactContext], Any]
    module: str
    label: str  # what reports call it: 'small writes', 'share of writes that are small'
    fields: Mapping[str, Any] | None = None  # a record's fields: Field, nested mapping, or None (not shown)

    def meta(self) -> dict[str, Any]:
        """What the JSON says about a value of this fact (``evidence_meta``)."""
        return describe(self.label, self.kind, self.fields)


class Param(Frozen):
    """A tunable number a fact uses (overridable globally in the site config's [thresholds]).

    `stands_for` marks a parameter whose default stands for a property of the system the input
    does not record (glibc's STDIO buffer size ...): used at its default, it is an assumption."""

    name: str
    default: Any
    doc: str
    kind: str  # unit kind, as a fact's
    label: str
    stands_for: str = ""

    def meta(self) -> dict[str, Any]:
        return describe(self.label, self.kind)


@dataclass(frozen=True)
class Assumption:
    """A value a fact used that neither the input nor the site config gave.

    `value` says what was assumed ("8 OSTs in the file system"); `key` is the site-config key
    that would make it exact ("[system] osts"), or `how` says what would when no key can (a
    job's node count comes from DXT host names)."""

    value: str
    key: str = ""
    how: str = ""
    ran_on: str = ""  # a Lustre default assumed for a job whose files were elsewhere: their file systems



FACTS: dict[str, Fact] = {}
PARAMS: dict[str, Param] = {}
_LOADED = False
_DEFINED_BY: dict[str, str] = {}  # fact or parameter name -> the module of this package whose import defines it
_INDEX: dict[str, str] | None = None  # the same, given by a cached catalogue before any module is imported


def fact(name: str, kind: str, doc: str, *, label: str, fields: Mapping[str, Any] | None = None):
    """Register `fn(ctx)` as the fact `name`, of unit kind `kind` (a record's `fields`: their kinds,
    'rate MiB/s' where a field keeps its own unit, a nested mapping, or None to keep it out of reports)."""
    check_kind(kind)
    if (kind == "record") != (fields is not None):
        raise ValueError(f"fact {name!r}: a record declares its fields, and only a record")
    shape = _fields(fields) if fields is not None else None

    def register(fn: Callable[[FactContext], Any]) -> Callable[[FactContext], Any]:
        if name in FACTS and FACTS[name].compute is not fn:
            raise ValueError(f"fact {name!r} registered twice ({FACTS[name].module}, {fn.__module__})")
        FACTS[name] = Fact(name, kind, doc, fn, fn.__module__, label, shape)
        return fn

    return register


def _fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {k: None if v is None else _fields(v) if isinstance(v, Mapping) else Field.parse(v)
            for k, v in spec.items()}


def describe(label: str, kind: str, fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`{label, kind, unit}` (the unit of the JSON value: the kind's base), a record's `fields` too."""
    meta: dict[str, Any] = {"label": label, "kind": kind, "unit": KINDS[kind].base}
    if fields is not None:
        meta["fields"] = _field_meta(fields)
    return meta


def _field_meta(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {k: {"kind": "record", "fields": _field_meta(v)} if isinstance(v, Mapping) else v.meta()
            for k, v in fields.items() if v is not None}


def param(name: str, default: Any, doc: str, stands_for: str = "", *, kind: str, label: str = "") -> str:
    """Declare a fact parameter of unit kind `kind`; returns its name for :meth:`FactContext.param`."""
    PARAMS[name] = Param(name, default, doc, check_kind(kind), label or name.replace("_", " "), stands_for)
    return name


def meta_of(name: str) -> dict[str, Any] | None:
    """What reports say about the fact or parameter `name` (label, kind, unit), None if it is neither."""
    found = known(name)
    return found.meta() if found else None


def registry() -> dict[str, Fact]:
    """Every fact, importing each module of this package once."""
    global _LOADED
    if not _LOADED:
        import pkgutil  # here: a cached catalogue's index names the modules (use_index)

        for info in pkgutil.iter_modules(__path__):
            if not info.name.startswith("_"):
                module = f"{__name__}.{info.name}"
                before = FACTS.keys() | PARAMS.keys()
                importlib.import_module(module)
                _DEFINED_BY.update(dict.fromkeys((FACTS.keys() | PARAMS.keys()) - before, module))
        _LOADED = True
    return FACTS


def index() -> dict[str, str]:
    """Every fact and parameter of this package -> the module that defines it (imports them all)."""
    registry()
    return dict(_DEFINED_BY)


def use_index(defined_by: dict[str, str]) -> None:
    """From now on :func:`known` imports only the module defining the name asked for (an
    :func:`index` made by this same code: the rule cache's key covers this package)."""
    global _INDEX
    _INDEX = defined_by


def known(name: str) -> Fact | Param | None:
    """The fact or parameter `name`, else None; imports the module that defines it when an index
    was given, else every module."""
    found = FACTS.get(name) or PARAMS.get(name)
    if found is None and not _LOADED:
        module = _INDEX.get(name) if _INDEX is not None else None
        if module is not None:
            importlib.import_module(module)
        else:  # no index, or a name it does not hold: the whole registry decides
            registry()
        found = FACTS.get(name) or PARAMS.get(name)
    return found


def is_param(name: str) -> bool:
    """Whether `name` is a fact parameter (the site config may override it) rather than a fact."""
    return name in PARAMS or (name not in FACTS and isinstance(known(name), Param))


@dataclass
class FactContext:
    """One profile's facts, computed on first use and cached (values and reasons).

    `expectation` is the learned model's view of the job, when the model stage ran
    (:mod:`advisor.pipeline`); the anomaly facts read it.
    """

    profile: JobProfile
    config: SiteConfig = field(default_factory=SiteConfig)
    expectation: JobExpectation | None = None
    _values: dict[str, Any] = field(default_factory=dict)
    _missing: dict[str, Missing] = field(default_factory=dict)
    _memo: dict[str, Any] = field(default_factory=dict)
    _active: set[str] = field(default_factory=set)
    # what each fact or memo entry assumed, itself or through what it read (see assume())
    _assumed: dict[str, tuple[Assumption, ...]] = field(default_factory=dict)
    _collecting: list[dict[Assumption, None]] = field(default_factory=list)

    def get(self, name: str) -> Any:
        """The value of fact `name`; raises :class:`Missing` (or NotApplicable) when there is none."""
        if name in self._values:
            self._inherit(name)
            return self._values[name]
        if name in self._missing:
            raise self._missing[name]
        found = known(name)
        if not isinstance(found, Fact):
            raise KeyError(f"unknown fact {name!r}")
        if name in self._active:
            raise RuntimeError(f"fact {name!r} depends on itself")
        self._active.add(name)
        try:
            value = self._tracked(name, lambda: found.compute(self))
        except Missing as exc:
            self._missing[name] = exc
            raise
        finally:
            self._active.discard(name)
        if value is None:
            exc = Missing(f"{name} is not available for this input")
            self._missing[name] = exc
            raise exc
        self._values[name] = value
        return value

    def value(self, name: str) -> Any:
        """Fact `name` or None when missing (for facts that degrade gracefully)."""
        try:
            return self.get(name)
        except Missing:
            return None

    def reason(self, name: str) -> str | None:
        """Why `name` is missing (after a failed :meth:`get`), else None."""
        exc = self._missing.get(name)
        return exc.reason if exc else None

    def release(self) -> None:
        """Drop the tracebacks of the reasons kept for missing facts. Each holds the frames it
        passed through, and they hold this context: cycles only the garbage collector frees,
        about a tenth of a fleet worker's CPU when left to it."""
        for exc in self._missing.values():
            exc.__traceback__ = None

    def applicable(self, name: str) -> bool:
        return not isinstance(self._missing.get(name), NotApplicable)

    def param(self, name: str) -> Any:
        """A fact parameter: the site config's global override, else the declared default (an
        assumption when the parameter stands for a property of the system)."""
        declared = PARAMS[name]
        value = self.config.threshold(name, declared.default)
        if declared.stands_for and name not in self.config.thresholds:
            self.assume(declared.stands_for, f"[thresholds] {name}")
        return value

    def memo(self, key: str, build: Callable[[], Any]) -> Any:
        """Share an intermediate result (e.g. the per-file table) between the facts of a module."""
        memo_key = "memo:" + key
        if key not in self._memo:
            self._memo[key] = self._tracked(memo_key, build)
        else:
            self._inherit(memo_key)
        return self._memo[key]

    # -- where values come from ------------------------------------------------------------
    def assume(self, value: str, key: str = "", how: str = "", ran_on: str = "") -> None:
        """Record, for the fact being computed (and every fact reading it), that it used `value`
        which neither the input nor the site config gave; `key` or `how` says what would;
        `ran_on` names the job's file systems when `value` is a Lustre default and none was Lustre."""
        if self._collecting:
            self._collecting[-1][Assumption(value, key, how, ran_on)] = None

    @contextmanager
    def tracing(self) -> Iterator[dict[Assumption, None]]:
        """What every fact read inside the block assumed (the engine traces one rule at a time, and
        inside it the rule's cost); an enclosing block sees them too."""
        self._collecting.append({})
        try:
            yield self._collecting[-1]
        finally:
            found = self._collecting.pop()
            if self._collecting:
                self._collecting[-1].update(found)

    def assumptions(self, name: str) -> tuple[Assumption, ...]:
        """What fact `name` assumed, itself or through the facts it read (after it was computed)."""
        return self._assumed.get(name, ())

    def _tracked(self, name: str, compute: Callable[[], Any]) -> Any:
        self._collecting.append({})
        try:
            return compute()
        finally:
            found = self._collecting.pop()
            if found:
                self._assumed[name] = tuple(found)
                self._inherit(name)

    def _inherit(self, name: str) -> None:
        """The fact being computed read `name`: it rests on what `name` assumed."""
        if self._collecting and name in self._assumed:
            self._collecting[-1].update(dict.fromkeys(self._assumed[name]))

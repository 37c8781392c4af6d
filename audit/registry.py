"""One registry for everything found by name: versioned components (extractors, graders, prompt
templates) and named entries (package kinds, document schemas, claim recipes, benchmark specs,
floor role tables).

A component is registered once as `name@version` and never changes behaviour. Each kind
has a table here, created by the module that defines the kind (`audit.extractors`,
`audit.graders`, `audit.prompts`) with its home: the package whose modules
register its components. A table loads on first use by importing its home and every
public module in it, so a new family module is found without being listed anywhere.

A named entry has no version: a `Catalog` maps names to entries (a read-only Mapping), loaded
the same way from the modules that register them. Every table raises the same two errors: a
`DuplicateError` for a name registered twice and an `UnknownError` for a lookup that finds
nothing, each worded once here.

Fingerprints make immutability checkable: a sha256 over the source of a component's
functions and of every function, class, pattern and constant of this project that they
reach through global names, plus its frozen config. Lock files (`audit.lock`) pin them.

This module is the bottom layer: it imports nothing from audit, extractors or graders.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import json
import pkgutil
import re
import sys
import textwrap
import threading
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, Protocol, TypeVar

OWN_PACKAGES = ("audit.extractors", "audit.graders")
"""Code in these packages is fingerprinted by source; anything else is named only."""


class RegistryError(LookupError):
    """Unknown or duplicate `name@version` or name."""


class DuplicateError(RegistryError, ValueError):
    """A name (or `name@version`) registered twice (a ValueError too, as a bad registration)."""


class UnknownError(RegistryError, KeyError):
    """A lookup that finds no registered entry; its message lists the known ones. A KeyError too, so a
    catalog is a Mapping (`get`, `in`); printed as its message, not as a quoted key."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def duplicate_error(kind: str, key: str, *, versioned: bool = False) -> DuplicateError:
    """The one wording of a name registered twice (a versioned component says what a change needs)."""
    tail = "; a changed behaviour needs a new version" if versioned else ""
    return DuplicateError(f"{kind} {key} is already registered{tail}")


def unknown_error(kind: str, spec: str, known: Iterable[str]) -> UnknownError:
    """The one wording of a lookup that finds nothing: `unknown KIND 'SPEC' (known: ...)`, sorted."""
    return UnknownError(f"unknown {kind} {spec!r} (known: {', '.join(sorted(known)) or 'none'})")


class Component(Protocol):
    """What every registered component has."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def key(self) -> str: ...

    @property
    def fingerprint(self) -> str: ...


T = TypeVar("T", bound=Component)


class Registry(Generic[T]):
    """One kind's components by `name@version`; `get(name)` returns the version registered last.

    `home` names the module or package whose modules register this kind; it is imported
    (with every public submodule of a package) the first time the table is read.
    """

    def __init__(self, kind: str, home: str | None = None):
        self.kind = kind
        self.home = home
        self._entries: dict[str, T] = {}
        self._latest: dict[str, str] = {}
        self._loaded = home is None
        self._lock = threading.RLock()

    def add(self, entry: T) -> T:
        key = f"{entry.name}@{entry.version}"
        if "@" in entry.name or not entry.name or not entry.version or "@" in entry.version:
            raise RegistryError(f"bad {self.kind} name or version: {key!r}")
        if key in self._entries:
            raise duplicate_error(self.kind, key, versioned=True)
        self._entries[key] = entry
        self._latest[entry.name] = key
        return entry

    def load(self) -> None:
        """Import the home module and, for a package, each public module in it (sorted by name)."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            assert self.home is not None
            import_public_modules(self.home)
            self._loaded = True

    def get(self, spec: str) -> T:
        """`name@version` exactly, or `name` for its latest version."""
        self.load()
        key = spec if "@" in spec else self._latest.get(spec, spec)
        try:
            return self._entries[key]
        except KeyError:
            raise unknown_error(self.kind, spec, self._entries) from None

    def __contains__(self, spec: str) -> bool:
        try:
            self.get(spec)
        except RegistryError:
            return False
        return True

    def __iter__(self) -> Iterator[T]:
        self.load()
        return iter(list(self._entries.values()))

    def keys(self) -> list[str]:
        """Every `name@version`, in registration order."""
        self.load()
        return list(self._entries)

    def all(self) -> list[T]:
        """Every registered version, in registration order."""
        return list(self)


N = TypeVar("N")


class Catalog(Mapping[str, N]):
    """Named entries of one kind (no versions): a read-only Mapping from name to entry.

    `homes` name the modules (or packages, with their public modules) that register the entries. A
    lookup imports them one at a time, in order, until the name is found (so finding an entry of the
    first home imports nothing else); iterating imports them all. Entries iterate in the order of the
    home that registered them (`add(..., home=__name__)`), then of registration, whatever order the
    modules were imported in. `add` refuses a name given twice (the same entry again, from a module
    imported twice, is accepted); an unknown name raises `UnknownError` (`catalog[name]` too, so
    `name in catalog` and `catalog.get(name)` work as for a dict).
    """

    def __init__(self, kind: str, homes: Iterable[str] = ()):
        self.kind = kind
        self.homes = tuple(homes)
        self._entries: dict[str, N] = {}
        self._rank: dict[str, int] = {}
        self._imported = 0
        self._lock = threading.RLock()

    def add(self, name: str, entry: N, *, home: str | None = None) -> N:
        """Register `entry` under `name` (by module `home`); DuplicateError when another entry has it."""
        if not name:
            raise RegistryError(f"bad {self.kind} name: {name!r}")
        if name in self._entries and self._entries[name] is not entry:
            raise duplicate_error(self.kind, repr(name))
        self._entries[name] = entry
        self._rank.setdefault(name, self._home_index(home))
        return entry

    def registered(self, name: str) -> N | None:
        """The entry registered under `name` so far, or None; imports nothing (for registering code)."""
        return self._entries.get(name)

    def get(self, name: str, default: Any = None) -> Any:
        """The entry named `name`, or `default` when no home registers it."""
        found = self.find(name)
        return default if found is None else found

    def __setitem__(self, name: str, entry: N) -> None:
        """Put `entry` under `name`, replacing any (for tests: a registration goes through `add`)."""
        self._entries[name] = entry
        self._rank.setdefault(name, len(self.homes))

    def __delitem__(self, name: str) -> None:
        """Remove `name` (for tests that register an entry of their own)."""
        del self._entries[name]
        del self._rank[name]

    def copy(self) -> Catalog[N]:
        """A separate catalog with the same homes and entries (homes imported so far stay imported)."""
        other: Catalog[N] = Catalog(self.kind, self.homes)
        other._entries, other._rank, other._imported = dict(self._entries), dict(self._rank), self._imported
        return other

    def _home_index(self, home: str | None) -> int:
        for i, h in enumerate(self.homes):
            if home is not None and (home == h or home.startswith(h + ".")):
                return i
        return len(self.homes)

    def _import_next(self) -> bool:
        """Import the next home not imported yet; False when every home is."""
        with self._lock:
            if self._imported >= len(self.homes):
                return False
            home = self.homes[self._imported]
            self._imported += 1  # first: a home that reads the catalog sees what is registered so far
            import_public_modules(home)
            return True

    def load(self) -> None:
        """Import every home (each public module of a package home too), once."""
        while self._import_next():
            pass

    def find(self, name: str) -> N | None:
        """The entry named `name`, importing homes in order until one registers it; None otherwise."""
        while name not in self._entries:
            if not self._import_next():
                return None
        return self._entries[name]

    def first(self, test: Callable[[N], bool]) -> N | None:
        """The first entry (in home order) for which `test` holds, importing homes only until one does."""
        while True:
            for name in self._ordered():
                if test(self._entries[name]):
                    return self._entries[name]
            if not self._import_next():
                return None

    def _ordered(self) -> list[str]:
        order = {name: i for i, name in enumerate(self._entries)}
        return sorted(self._entries, key=lambda n: (self._rank[n], order[n]))

    def __getitem__(self, name: str) -> N:
        found = self.find(name)
        if found is None:
            raise unknown_error(self.kind, name, self._entries)
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None

    def __iter__(self) -> Iterator[str]:
        self.load()
        return iter(self._ordered())

    def __len__(self) -> int:
        self.load()
        return len(self._entries)


def import_public_modules(package: str) -> None:
    """Import `package` and, when it is a package, each public module in it (sorted by name, so the
    versions of a name register in a fixed order)."""
    home = importlib.import_module(package)
    for info in sorted(pkgutil.iter_modules(getattr(home, "__path__", [])), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")


_TABLES: dict[str, Registry[Any]] = {}
_CATALOGS: dict[str, Catalog[Any]] = {}


def table(kind: str, home: str | None = None) -> Registry[Any]:
    """The registry of `kind`, created on the first call (by the module that defines the kind)."""
    reg = _TABLES.get(kind)
    if reg is None:
        if kind in _CATALOGS:
            raise RegistryError(f"{kind} is a catalog of named entries, not a versioned registry")
        reg = _TABLES[kind] = Registry(kind, home)
    elif home is not None and reg.home != home:
        raise RegistryError(f"the {kind} registry belongs to {reg.home}, not {home}")
    return reg


def catalog(kind: str, homes: Iterable[str] = ()) -> Catalog[Any]:
    """The catalog of named `kind` entries, created on the first call (by the module that defines the kind)."""
    cat = _CATALOGS.get(kind)
    homes = tuple(homes)
    if cat is None:
        if kind in _TABLES:
            raise RegistryError(f"{kind} is a versioned registry, not a catalog of named entries")
        cat = _CATALOGS[kind] = Catalog(kind, homes)
    elif homes and cat.homes != homes:
        raise RegistryError(f"the {kind} catalog is loaded from {', '.join(cat.homes)}, not {', '.join(homes)}")
    return cat


def registry_of(kind: str) -> Registry[Any]:
    """The versioned registry of `kind` created so far (by the module that defines it); UnknownError otherwise."""
    try:
        return _TABLES[kind]
    except KeyError:
        raise unknown_error("registry", kind, _TABLES) from None


def kinds() -> list[str]:
    """Every kind with a registry or a catalog in this process."""
    return sorted({*_TABLES, *_CATALOGS})


# --------------------------------------------------------------------------- fingerprints


def _own(module: str | None) -> bool:
    return module is not None and any(module == p or module.startswith(p + ".") for p in OWN_PACKAGES)


def _code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def _stable(value: Any) -> Any:
    """A JSON-able, order-stable rendering of a constant."""
    if isinstance(value, re.Pattern):
        return {"pattern": value.pattern, "flags": int(value.flags)}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [_stable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_stable(v) for v in value), key=repr)
    if isinstance(value, dict):
        return [[_stable(k), _stable(v)] for k, v in value.items()]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"dataclass": type(value).__qualname__,
                "fields": [[f.name, _stable(getattr(value, f.name))] for f in dataclasses.fields(value)]}
    if isinstance(value, types.MappingProxyType):
        return _stable(dict(value))
    return {"repr": type(value).__qualname__}


def code_fingerprint(*roots: Any, config: Any = None) -> str:
    """sha256 over the source of `roots` and of everything of this project they reach by global name."""
    parts: list[Any] = []
    seen: set[int] = set()

    def visit_code_object(obj: Any, namespace: dict[str, Any]) -> None:
        code = getattr(obj, "__code__", None)
        names = set(_code_names(code)) if code is not None else set()
        if inspect.isclass(obj):
            for member in vars(obj).values():
                fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
                if isinstance(fn, property):
                    fn = fn.fget
                if inspect.isfunction(fn):
                    names |= set(_code_names(fn.__code__))
        for name in sorted(names):
            if name in namespace:
                visit(name, namespace[name], names)

    def visit(label: str, obj: Any, attr_names: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, types.ModuleType):
            if _own(obj.__name__):
                # `module.attr` uses: follow the attributes the code names.
                for name in sorted(attr_names):
                    if hasattr(obj, name):
                        visit(f"{obj.__name__}.{name}", getattr(obj, name))
            else:
                parts.append(["module", obj.__name__])
            return
        if inspect.isfunction(obj) or inspect.isclass(obj):
            mod = getattr(obj, "__module__", None)
            if not _own(mod):
                parts.append(["external", f"{mod}.{getattr(obj, '__qualname__', label)}"])
                return
            try:
                src = textwrap.dedent(inspect.getsource(obj))
            except (OSError, TypeError):
                src = f"<no source for {mod}.{obj.__qualname__}>"
            parts.append(["code", f"{mod}.{obj.__qualname__}", src])
            namespace = obj.__globals__ if inspect.isfunction(obj) else vars(sys.modules[str(mod)])
            visit_code_object(obj, namespace)
            if inspect.isclass(obj):
                # A subclass runs code its own source does not show: its bases of this project are part of it.
                for base in obj.__bases__:
                    if _own(getattr(base, "__module__", None)):
                        visit(f"{label}.__base__", base)
            return
        if callable(obj) and not isinstance(obj, type):
            # Builtins and other callables from outside the project (e.g. math.isclose).
            parts.append(["callable", f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', label)}"])
            return
        parts.append(["value", label, _stable(obj)])

    for i, root in enumerate(roots):
        visit(f"root{i}", root)
    if config is not None:
        parts.append(["config", _stable(config)])
    blob = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()

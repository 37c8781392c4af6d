"""The leak check of releases: no protected text, and no protected answer beside its item.

Two rules, applied to every file of a release before it is written:

1. No string of `MIN_LEAK_CHARS` (20) or more letters and digits taken from the question,
   an option, the reference or a response of a protected item appears anywhere, once
   both sides are normalized (`normalize`): Unicode NFKC (full-width and other look-alikes
   become plain letters), case-folded, and stripped of everything that is not a letter or
   a digit (spaces and the `_`, `-`, `.` put in their place, punctuation, zero-width and
   other invisible characters). JSON files are checked on their decoded string values, so
   JSON escaping does not hide a leak; each value is checked, and so is the concatenation
   of a row's (object's) values in order, and the junction of every two of its values, so
   text split into pieces shorter than the window is found too.
2. No reference answer of a protected item appears as a whole token in the same
   row (JSONL), object (JSON) or line (text) as that item's id (its dataset id or its
   salted id): a bare `B` beside `gpqa/17` gives the key away (compared after NFKC and
   case folding).

Transformations (rule 1). The check is named and versioned (`TRANSFORMS`, recorded in
release.json as `leak_check.transforms`; a release is verified under the version it records).
`leakcheck@1` compares the values as they are. `leakcheck@2`, the current one, also compares,
for every value, every concatenation of a row's values, and every column (a field's values over
all rows in published order; a JSON document's values in document order):
rot13, the reversed text, base64 (standard and URL-safe), base32 and hex decodings of every run
that could be one, and every 2nd and every 3rd character (text interleaved with filler), each
of the raw and of the normalized text. A protected text spread over rows in pieces shorter than
the window, or encoded so, is found. The release adds the concatenated references of its
protected items (in published and in dataset order, as letters and as digits) to the protected
strings: a public value spelling the key is a leak. `leakcheck@3` adds short keys (rule 3): the
same references at any length from MIN_KEY_ITEMS (3), forwards and reversed, found as a word or a
run of one-letter words of a value (`B A D C`), or inside a column where chance could not put them
(KEY_CHANCE): an answer key of fewer than 20 protected items is text of fewer than 20 characters.

The leak check is the second layer of a release: a release holding protected items publishes no
free-text field at all (audit.release), so what this module lists is what `--public-text` text, and
releases written before that structure, are checked against.

Findings name the file, row, field, protected item and what kind of text matched, never the
text. What the rules cannot see (an id whose shape encodes the answer, statuses chosen per
answer) the statistical check of `audit.inference` covers.

Method for rule 1: protected texts are indexed by a hash of their 11-character
windows at every 10th position (11 + 10 − 1 = 20: any common substring of 20
characters contains one indexed window whole); every 11-character window of the
scanned text is hashed (numpy, polynomial over 64-bit words) and looked up, and each
hit is confirmed by extending the match character by character. So the index is
small (a tenth of the text), there are no false positives, and no match of 20+
characters can be missed.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

import numpy as np

from audit.errors import Problem
from audit.models import Verdict

MIN_LEAK_CHARS = 20
"""Shortest protected substring that counts as a leak, in letters and digits (after `normalize`)."""

TRANSFORMS: dict[str, tuple[str, ...]] = {
    "leakcheck@1": ("identity",),
    "leakcheck@2": ("identity", "rot13", "reversed", "base64", "base64url", "base32", "hex",
                    "every 2nd character", "every 3rd character", "rows concatenated in published order"),
    "leakcheck@3": ("identity", "rot13", "reversed", "base64", "base64url", "base32", "hex",
                    "every 2nd character", "every 3rd character", "rows concatenated in published order",
                    "short keys"),
}
"""The named, versioned lists of transformations rule 1 compares under (a version's list never changes)."""

CURRENT = "leakcheck@3"

MIN_KEY_ITEMS = 3
"""leakcheck@3: the shortest key (protected references spelled in sequence) looked for, in items."""
KEY_CHANCE = 1e-6
"""leakcheck@3: a key is looked for in a column (a field's values over the rows) only where a column of random
symbols would hold it by chance with at most this probability (its length times alphabet^-items)."""

MIN_PERIOD = 6
"""leakcheck@2: a transformed text's match that repeats with a period of 6 or less is not counted (see find)."""
"""The version new releases are checked and recorded under."""

MAX_LEAKS_PER_FILE = 100
"""Leaks listed per file; the rest are counted in one line."""

_K = 11
_STRIDE = MIN_LEAK_CHARS - _K + 1
_SEP = 0  # code point separating texts in the index; never inside a window that is indexed
_WS = re.compile(r"\s+")
_NOT_ALNUM = re.compile(r"[\W_]+")


_ASCII_NOT_ALNUM = str.maketrans({i: None for i in range(128) if not chr(i).isalnum()})


def normalize(text: str) -> str:
    """The form protected text is compared in (rule 1): NFKC, case-folded, letters and digits only."""
    s = unicodedata.normalize("NFKC", text).casefold().translate(_ASCII_NOT_ALNUM)  # the fast part first
    return s if s.isascii() else _NOT_ALNUM.sub("", s)


@functools.lru_cache(maxsize=1 << 16)
def _fold(text: str) -> str:
    """The form of rule 2 (tokens kept apart): NFKC, case-folded, invisible characters dropped, spaces collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if not text.isprintable():
        text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Cc") or c.isspace())
    return _WS.sub(" ", text)


def _weights() -> np.ndarray:
    rng = np.random.default_rng(0x5EED_1EAC)
    return rng.integers(1, 2**63 - 1, size=_K, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)


_W = _weights()


def _codes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)


def _window_hashes(codes: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Polynomial hash of the K-character windows starting at `starts` (64-bit wrap-around)."""
    h = np.zeros(len(starts), dtype=np.uint64)
    for j in range(_K):
        h += codes[starts + j].astype(np.uint64) * _W[j]
    return h


@dataclass(frozen=True)
class ProtectedText:
    """One protected string: whose it is and which field (for the error message)."""

    item_id: str
    what: str
    text: str


@dataclass
class LeakIndex:
    """Protected strings of a set of items, ready to scan files for leaks."""

    texts: list[ProtectedText]
    references: Mapping[str, Collection[str]] = field(default_factory=dict)
    """Protected item id -> its reference answer(s) (rule 2)."""
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Id as it may appear in the files (dataset id or salted id) -> dataset id, for protected items."""
    keys: Sequence[tuple[str, str]] = ()
    """leakcheck@3: (what, key) of every short key: the protected references spelled in one sequence (see
    `find_keys`); any length from MIN_KEY_ITEMS symbols."""

    def __post_init__(self) -> None:
        norm = [normalize(t.text) for t in self.texts]
        self._starts = np.zeros(len(norm) + 1, dtype=np.int64)
        pieces = []
        pos = 0
        for i, s in enumerate(norm):
            self._starts[i] = pos
            pieces.append(s)
            pos += len(s) + 1
        self._starts[len(norm)] = pos
        joined = "\x00".join(pieces) + "\x00"
        self._codes = _codes(joined)
        n = len(self._codes)
        self._sep_prefix = np.concatenate([[0], np.cumsum(self._codes == _SEP, dtype=np.int64)])
        if n >= _K:
            starts = np.arange(0, n - _K + 1, _STRIDE, dtype=np.int64)
            sep = self._sep_prefix
            starts = starts[sep[starts + _K] - sep[starts] == 0]  # windows inside one text only
            h = _window_hashes(self._codes, starts)
            order = np.argsort(h, kind="stable")
            self._hashes, self._positions = h[order], starts[order]
        else:
            self._hashes = np.zeros(0, np.uint64)
            self._positions = np.zeros(0, np.int64)
        self._folded_aliases = {_fold(k): v for k, v in self.aliases.items()}
        self._ref_patterns: dict[str, re.Pattern[str]] = {}
        for item, refs in self.references.items():
            alts = sorted({_fold(r).strip() for r in refs} - {""}, key=lambda x: (-len(x), x))
            if alts:
                self._ref_patterns[item] = re.compile(
                    r"(?<![^\W_])(?:" + "|".join(re.escape(a) for a in alts) + r")(?![^\W_])")

    @property
    def windows(self) -> int:
        """Indexed windows (for the record of what the check covered)."""
        return int(len(self._hashes))

    # ----------------------------------------------------------------- rule 1

    def find(self, values: list[str], min_period: int = 0) -> list[tuple[int, int, int]]:
        """(value index, protected text index, match length) for each value sharing a 20-character window
        with a protected text, both normalized; one vectorised pass over all values. With `min_period`, a
        window that repeats with a period up to it (`aaaa…`, `abab…`) is no match: transformed text (every
        3rd character of a column) is often such a run, and so is degenerate text in a response."""
        if not len(self._hashes) or not values:
            return []
        uniq: dict[str, int] = {}
        keys = [normalize(v) for v in values]  # once: the back-mapping below needs them again
        for k in keys:
            uniq.setdefault(k, len(uniq))
        norm = list(uniq)
        offsets = np.zeros(len(norm) + 1, dtype=np.int64)
        np.cumsum([len(v) + 1 for v in norm], out=offsets[1:])
        hay = _codes("\x00".join(norm) + "\x00")
        if len(hay) < _K:
            return []
        h = _window_hashes(hay, np.arange(0, len(hay) - _K + 1, dtype=np.int64))
        lo = np.searchsorted(self._hashes, h, side="left")
        hi = np.searchsorted(self._hashes, h, side="right")
        hits = np.flatnonzero(hi > lo)
        if not len(hits):
            return []
        # Every (hay position, indexed needle position) pair whose K-windows hash alike.
        counts = hi[hits] - lo[hits]
        first = np.repeat(lo[hits] - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
        q_all = np.repeat(hits, counts)
        p_all = self._positions[first + np.arange(int(counts.sum()))]
        # A shared 20-window containing the K-window starts 0..STRIDE-1 characters before it.
        found_q, found_p = [], []
        a, n_hay, n_a = self._codes, len(hay), len(self._codes)
        hay_sep = np.concatenate([[0], np.cumsum(hay == _SEP, dtype=np.int64)])
        for d in range(_STRIDE):
            qs, ps = q_all - d, p_all - d
            ok = (qs >= 0) & (ps >= 0) & (qs + MIN_LEAK_CHARS <= n_hay) & (ps + MIN_LEAK_CHARS <= n_a)
            qs, ps = qs[ok], ps[ok]
            ok = ((self._sep_prefix[ps + MIN_LEAK_CHARS] == self._sep_prefix[ps])
                  & (hay_sep[qs + MIN_LEAK_CHARS] == hay_sep[qs]))
            qs, ps = qs[ok], ps[ok]
            for j in range(MIN_LEAK_CHARS):
                if not len(qs):
                    break
                ok = hay[qs + j] == a[ps + j]
                qs, ps = qs[ok], ps[ok]
            for period in range(1, min_period + 1):
                if not len(qs):
                    break
                periodic = np.ones(len(qs), dtype=bool)
                for j in range(MIN_LEAK_CHARS - period):
                    periodic &= hay[qs + j] == hay[qs + j + period]
                qs, ps = qs[~periodic], ps[~periodic]
            found_q.append(qs)
            found_p.append(ps)
        q = np.concatenate(found_q)
        p = np.concatenate(found_p)
        if not len(q):
            return []
        v_of = np.searchsorted(offsets, q, side="right") - 1
        t_of = np.searchsorted(self._starts, p, side="right") - 1
        _, first_of_pair = np.unique(v_of * (len(self.texts) + 1) + t_of, return_index=True)
        best: dict[tuple[int, int], int] = {}
        for i in first_of_pair.tolist():
            best[(int(v_of[i]), int(t_of[i]))] = self._length(hay, int(q[i]), int(p[i]))
        back: dict[int, list[int]] = {}
        for i, k in enumerate(keys):
            back.setdefault(uniq[k], []).append(i)
        out = [(i, t, n) for (v, t), n in best.items() for i in back[v]]
        return sorted(out)

    def _length(self, hay: np.ndarray, q: int, p: int) -> int:
        """Length of the common substring through hay[q:q+20] == text[p:p+20] (for the message)."""
        a = self._codes
        left = 0
        while q - left > 0 and p - left > 0 and a[p - left - 1] != _SEP and hay[q - left - 1] == a[p - left - 1]:
            left += 1
        right = MIN_LEAK_CHARS
        while q + right < len(hay) and p + right < len(a) and a[p + right] != _SEP and hay[q + right] == a[p + right]:
            right += 1
        return left + right

    # ----------------------------------------------------------------- rule 2

    def paired(self, record: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """(protected item, field) where the item's reference stands beside its id in one record."""
        if not self._ref_patterns:
            return []
        items = set()
        aliases = self._folded_aliases
        for _, v in record:
            f = _fold(v)
            if f in aliases:
                items.add(aliases[f])
            else:
                items.update(aliases[t] for t in _TOKEN.findall(f) if t in aliases)
        out = []
        for item in sorted(items):
            pat = self._ref_patterns.get(item)
            if pat is None:
                continue
            for fname, v in record:
                if _fold(v) in aliases or v in SKIP_VALUES.get(fname, ()):
                    continue
                if pat.search(_fold(v)):
                    out.append((item, fname))
        return out


_TOKEN = re.compile(r"[^\s|,;:\"'`()\[\]{}<>=]+")
_WORD = re.compile(r"[^\W_]+")


def _key_forms(value: str) -> tuple[list[str], list[str]]:
    """The forms a short key is looked for in one value: its words, and its runs of one-character words joined
    (`B A D C`, `B,A,D,C`), case-folded."""
    words = _WORD.findall(_fold(value))
    runs: list[str] = []
    run: list[str] = []
    for w in words + [""]:
        if len(w) == 1:
            run.append(w)
            continue
        if len(run) >= MIN_KEY_ITEMS:
            runs.append("".join(run))
        run = []
    return words, runs


def find_keys(values: list[tuple[int | None, str | None, str]], columns: list[tuple[str | None, str]],
              keys: Sequence[tuple[str, str]]) -> list[tuple[int | None, str | None, str]]:
    """(row, field, what) wherever a short key is spelled: a whole word or run of one-letter words of a value
    equal to a key (or holding it, for runs), or a column's values joined holding it where chance could not
    (KEY_CHANCE). `values`: (row, field, text); `columns`: (field, its values joined in published order)."""
    wanted = [(what, _fold(k)) for what, k in keys if len(k) >= MIN_KEY_ITEMS]
    if not wanted:
        return []
    out = []
    for row, fname, text in values:
        words, runs = _key_forms(text)
        for what, k in wanted:
            if k in words or any(k in r for r in runs):
                out.append((row, fname, what))
    for fname, joined in columns:
        norm = normalize(joined)
        for what, k in wanted:
            alphabet = max(2, len(set(k)))
            if len(norm) * float(alphabet) ** -len(k) <= KEY_CHANCE and k in norm:
                out.append((None, fname, what))
    return out

SKIP_VALUES = {"verdict": frozenset(get_args(Verdict))}
"""Field values from a fixed vocabulary, never read as a reference answer (rule 2)."""


def _string_values(obj: Any) -> Iterator[str]:
    """Every string value of a JSON value in document order (object keys left out)."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            yield x
        elif isinstance(x, dict):
            stack += reversed(list(x.values()))
        elif isinstance(x, list):
            stack += reversed(x)


def _strings(obj: Any, path: str) -> Iterator[tuple[str, str]]:
    """(JSON path, value) of every string in a JSON value, object keys included."""
    if isinstance(obj, str):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            p = f"{path}.{k}" if path else str(k)
            yield p, str(k)
            yield from _strings(v, p)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _strings(v, f"{path}.{i}" if path else str(i))


def _records(obj: Any, path: str) -> Iterator[list[tuple[str, str]]]:
    """One record per JSON object: its own string values and those of its lists (not of nested objects)."""
    if isinstance(obj, dict):
        own: list[tuple[str, str]] = []
        for k, v in obj.items():
            p = f"{path}.{k}" if path else str(k)
            stack = [(p, v)]
            while stack:
                q, x = stack.pop()
                if isinstance(x, str):
                    own.append((q, x))
                elif isinstance(x, list):
                    stack += [(f"{q}.{i}", y) for i, y in enumerate(x)]
                elif isinstance(x, dict):
                    yield from _records(x, q)
        yield own
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _records(v, f"{path}.{i}" if path else str(i))


@dataclass(frozen=True)
class _Value:
    row: int | None
    field: str | None
    text: str


def _junctions(values: list[str]) -> list[str]:
    """Normalized texts a leak split across a record's values would show: all of them joined in
    order, and the junction of every two (the end of one, the start of another, in either order)."""
    norm = [x for x in (normalize(v) for v in values) if x]
    if len(norm) < 2:
        return []
    edge = MIN_LEAK_CHARS - 1
    out = ["".join(norm)]
    for i, a in enumerate(norm):
        for j, b in enumerate(norm):
            if i != j:
                out.append(a[-edge:] + b[:edge])
    return out


_B64 = re.compile(r"[A-Za-z0-9+/]{16,}")
_B64URL = re.compile(r"[A-Za-z0-9_-]{16,}")
_B32 = re.compile(r"[A-Z2-7]{16,}")
_HEX = re.compile(r"[0-9a-fA-F]{20,}")
_ROT13 = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                       "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm")


def _decoded(data: bytes) -> str:
    return data.decode("utf-8", errors="ignore")


def _base64(text: str, pattern: re.Pattern[str], alt: bytes | None) -> list[str]:
    import base64
    import binascii

    out = []
    for run in pattern.findall(text):
        for start in range(4):  # a run may begin mid-block (glued to a word before it)
            piece = run[start:]
            piece = piece[:len(piece) - len(piece) % 4] if len(piece) % 4 == 1 else piece + "=" * (-len(piece) % 4)
            try:
                out.append(_decoded(base64.b64decode(piece, altchars=alt)))
            except (binascii.Error, ValueError):
                continue
    return out


def _transformed(text: str) -> list[tuple[str, str]]:
    """(how, text) for every transformation of leakcheck@2 but identity (see the module docstring)."""
    import base64
    import binascii

    out = [("rot13", text.translate(_ROT13)), ("reversed", text[::-1])]
    out += [("base64-decoded", t) for t in _base64(text, _B64, None)]
    out += [("base64url-decoded", t) for t in _base64(text, _B64URL, b"-_")]
    for run in _B32.findall(text):
        for start in range(8):
            piece = run[start:]
            piece = piece[:len(piece) - len(piece) % 8]
            if len(piece) >= 16:
                try:
                    out.append(("base32-decoded", _decoded(base64.b32decode(piece))))
                except (binascii.Error, ValueError):
                    pass
    for run in _HEX.findall(text):
        for start in (0, 1):
            piece = run[start:]
            out.append(("hex-decoded", _decoded(bytes.fromhex(piece[:len(piece) - len(piece) % 2]))))
    norm = normalize(text)
    for step, name in ((2, "every 2nd character"), (3, "every 3rd character")):
        for k in range(step):
            out += [(name, text[k::step]), (name, norm[k::step])]
    return [(how, t) for how, t in out if len(t) >= MIN_LEAK_CHARS]


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _of(pt: ProtectedText) -> str:
    return f"the {pt.what}" + (f" of protected item {pt.item_id!r}" if pt.item_id else "")


def find_leaks(files: Mapping[str, bytes], index: LeakIndex, transforms: str = CURRENT) -> list[Problem]:
    """Every leak in the given files (name -> bytes), one Problem per (file, row, field, protected item).

    JSONL files are read per row (rows numbered from 1, fields by name), JSON files per
    value (fields by JSON path), other files per line (rows are line numbers). A leak split
    across a row's values is reported on the row, without a field. `transforms` names the
    list of transformations compared under (TRANSFORMS).
    """
    if transforms not in TRANSFORMS:
        raise ValueError(f"unknown leak check {transforms!r}")
    problems: list[Problem] = []
    for name in sorted(files):
        text = files[name].decode("utf-8", errors="replace")
        values: list[_Value] = []
        records: list[tuple[int | None, list[tuple[str, str]]]] = []
        joined: list[_Value] = []  # concatenations of a record's values (rule 1 across values)
        whole: list[_Value] = []  # each record's values joined, raw (for the transformations)
        if name.endswith(".jsonl"):
            for i, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                obj = _parsed(line)
                try:
                    rec = list(_strings(obj, "")) if isinstance(obj, (dict, list)) else [("", line)]
                    own = list(_string_values(obj)) if isinstance(obj, (dict, list)) else []
                except RecursionError:
                    rec, own = [("", line)], []
                values += [_Value(i, f or None, v) for f, v in rec]
                records.append((i, rec))
                junctions = _junctions(own)
                joined += [_Value(i, None, j) for j in junctions]
                whole += [_Value(i, None, "".join(own))] if junctions else []
        elif name.endswith(".json") and (obj := _parsed(text)) is not None:
            try:
                values += [_Value(None, f or "$", v) for f, v in _strings(obj, "")]
                recs = list(_records(obj, ""))
            except RecursionError:
                values, recs = [_Value(None, None, text)], []
            records += [(None, rec) for rec in recs]
            for rec in recs:
                junctions = _junctions([v for _, v in rec])
                joined += [_Value(None, None, j) for j in junctions]
                whole += [_Value(None, None, "".join(v for _, v in rec))] if junctions else []
        else:
            lines = text.splitlines()
            values += [_Value(i, None, line) for i, line in enumerate(lines, 1)]
            records += [(i, [("", line)]) for i, line in enumerate(lines, 1)]
        found = index.find([v.text for v in values])
        if not found and not name.endswith((".jsonl", ".json")):
            # A leak spread over short lines: check the text as a whole.
            found = [(-1, t, n) for _, t, n in index.find([text])]
        hit = set()
        for vi, t, n in found:
            pt = index.texts[t]
            where = values[vi] if vi >= 0 else _Value(None, None, "")
            hit.add((where.row, pt.item_id))
            problems.append(Problem(name, f"leak: {n} letters and digits of {_of(pt)}", where.row, where.field))
        for vi, t, n in index.find([v.text for v in joined]) if joined else []:
            pt = index.texts[t]
            where = joined[vi]
            if (where.row, pt.item_id) not in hit:
                hit.add((where.row, pt.item_id))
                problems.append(Problem(name, f"leak: {n} letters and digits of {_of(pt)}, split across the "
                                              f"values of one row", where.row))
        if transforms != "leakcheck@1":
            problems += _transformed_leaks(name, text, values, whole, index, hit)
        if transforms not in ("leakcheck@1", "leakcheck@2") and index.keys:
            problems += _key_leaks(name, values, index)
        for row, rec in records:
            for item, fname in index.paired(rec):
                problems.append(Problem(name, f"leak: the reference answer of protected item {item!r} beside its id",
                                        row, fname or None))
    seen: set[Problem] = set()
    unique = [p for p in problems if not (p in seen or seen.add(p))]  # type: ignore[func-returns-value]
    unique.sort(key=lambda p: (p.path, p.row or 0, p.field or "", p.message))
    out: list[Problem] = []
    per_file: dict[str, int] = {}
    for p in unique:
        per_file[p.path] = per_file.get(p.path, 0) + 1
        if per_file[p.path] <= MAX_LEAKS_PER_FILE:
            out.append(p)
    for path, n in sorted(per_file.items()):
        if n > MAX_LEAKS_PER_FILE:
            out.append(Problem(path, f"leak: {n - MAX_LEAKS_PER_FILE} more leaks in this file not listed"))
    return out


def _key_leaks(name: str, values: list[_Value], index: LeakIndex) -> list[Problem]:
    """leakcheck@3's short keys in one file: in every value, and in every column (a JSONL field over the rows)."""
    columns: dict[str | None, list[str]] = {}
    plain = []
    for v in values:
        last = (v.field or "").split(".")[-1]
        if v.text == last:
            continue  # an object key
        plain.append((v.row, v.field, v.text))
        columns.setdefault(last if name.endswith(".jsonl") else None, []).append(v.text)
    joined = [(f, "".join(vs)) for f, vs in sorted(columns.items(), key=lambda x: x[0] or "") if len(vs) > 1]
    return [Problem(name, f"leak: {what} spelled out" + (" (the column concatenated over the rows in published "
                                                         "order)" if row is None and name.endswith(".jsonl") else ""),
                    row, fname) for row, fname, what in find_keys(plain, joined, index.keys)]


def _transformed_leaks(name: str, text: str, values: list[_Value], whole: list[_Value], index: LeakIndex,
                       hit: set[tuple[int | None, str]]) -> list[Problem]:
    """Rule 1 under leakcheck@2's transformations, on every value, each record's values joined, and every
    column of one file (object keys, from a closed set, are left out; identical texts are searched once)."""
    columns: dict[str, list[str]] = {}  # a field's values over the rows (a document's values), in published order
    for v in values:
        last = (v.field or "").split(".")[-1]
        if v.text == last:
            continue  # an object key (listed with the values: see _strings)
        columns.setdefault(last if name.endswith(".jsonl") else "", []).append(v.text)
    spread = [_Value(None, f or None, "".join(vs)) for f, vs in sorted(columns.items()) if len(vs) > 1]
    if not name.endswith((".jsonl", ".json")):
        spread.append(_Value(None, None, "".join(text.splitlines())))
    # (value, across rows?, how) per text searched: the columns as they are, then every transformation.
    texts: list[str] = [v.text for v in spread]
    meta: list[tuple[_Value, bool, str]] = [(v, True, "") for v in spread]
    seen: set[str] = set()
    for group, across in ((values, False), (whole, False), (spread, True)):
        for v in group:
            if v.text == (v.field or "").split(".")[-1] or (not across and v.text in seen):
                continue  # an object key, or a text already transformed (reported where first seen)
            seen.add(v.text)
            for how, t in _transformed(v.text):
                if t != v.text:
                    texts.append(t)
                    meta.append((v, across, how))
    items_hit = {item for _, item in hit}
    out: list[Problem] = []
    for vi, ti, n in index.find(texts, min_period=MIN_PERIOD) if texts else []:
        pt = index.texts[ti]
        where, across, how = meta[vi]
        if (pt.item_id in items_hit) if across else ((where.row, pt.item_id) in hit):
            continue
        hit.add((where.row, pt.item_id))
        items_hit.add(pt.item_id)
        parts = ([f"{where.field or 'every value'} concatenated over the rows in published order"] if across
                 else []) + ([how] if how else [])
        out.append(Problem(name, f"leak: {n} letters and digits of {_of(pt)} ({', '.join(parts)})",
                           where.row, None if across else where.field))
    return out

"""Salted ids: the strength a salt must have, the key each release derives from it, and the hashed ids."""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import secrets

from audit.errors import AuditError

MIN_SALT_CHARS = 32
MIN_SALT_BITS = 112
"""NIST SP 800-131A's minimum security strength: a salt estimated below it is refused (`salt_problem`)."""
HASHED_ID_HEX = 32


def hash_id(item_id: str, salt: str) -> str:
    """The salted id of an item: HMAC-SHA256(salt, item_id), first 32 hex digits."""
    return hmac.new(salt.encode("utf-8"), item_id.encode("utf-8"), hashlib.sha256).hexdigest()[:HASHED_ID_HEX]


def release_id_key(salt: str, context: str) -> str:
    """The id key of one release (scheme `hmac-sha256/release`): HMAC-SHA256(salt, `audit-release-ids:` +
    context) as hex. Different gradings released with one salt get unrelated ids (they do not link row for
    row); a holder with the salt and release.json's id_context maps their ids (`hash_id(id, key)`)."""
    return hmac.new(salt.encode("utf-8"), ("audit-release-ids:" + context).encode("utf-8"), hashlib.sha256).hexdigest()


def salt_check(salt: str) -> str:
    """What releases before the hardening recorded about the salt (kept to verify them; never written now)."""
    return hashlib.sha256(("audit-release-salt:" + salt).encode("utf-8")).hexdigest()


def generate_salt() -> str:
    """A new salt: 32 random bytes from the operating system (`secrets`), as 64 hex digits."""
    return secrets.token_hex(32)


_COMMON = ("password", "passwd", "secret", "salt", "test", "admin", "letmein", "welcome", "qwerty", "asdf", "zxcv",
           "changeme", "default", "example", "audit", "release", "hello", "dragon", "monkey", "iloveyou", "summer",
           "winter", "spring", "autumn", "master", "shadow", "football", "baseball", "princess", "sunshine",
           "trustno1", "gpqa", "mmlu")
"""Words and runs guessers try first; each counts as one character of a salt (a dictionary-ish salt fails)."""


def _alphabet_bits(salt: str) -> float:
    """log2 of the alphabet the salt draws from: hex 16, digits 10, letters 26 or 52, ... up to printable ASCII."""
    if re.fullmatch(r"[0-9a-f]+", salt) or re.fullmatch(r"[0-9A-F]+", salt):
        return 4.0
    size = 0
    for cls, n in ((r"[a-z]", 26), (r"[A-Z]", 26), (r"[0-9]", 10), (r"[^a-zA-Z0-9]", 33)):
        if re.search(cls, salt):
            size += n
    return math.log2(size)


def salt_bits(salt: str) -> float:
    """Estimated strength of a salt in bits: log2(alphabet) per character that a guesser cannot predict.

    Characters that continue a run (`aaa`) or a sequence (`abc`, `987`) past its second character,
    that repeat an earlier piece of 4 or more (`0123…0123…`), or that belong to a common word
    (`password`, `summer`) are not counted (a word counts as one character). A salt of letters only whose vowels make it
    read like words (25-60% vowels) is counted at 2 bits per letter, English's entropy being
    about 1-2 bits per letter. Not a proof of randomness: a floor under guessable salts.
    """
    s = salt
    low = s.lower()
    n = len(s)
    skip = [False] * n
    for w in _COMMON:
        start = low.find(w)
        while start >= 0:
            for k in range(start + 1, start + len(w)):
                skip[k] = True
            start = low.find(w, start + 1)
    for i in range(2, n):  # the third character on of a run (aaa) or a sequence (abc, 987) adds nothing
        d1, d2 = ord(s[i]) - ord(s[i - 1]), ord(s[i - 1]) - ord(s[i - 2])
        if d1 == d2 and abs(d1) <= 1:
            skip[i] = True
    i = 4
    while i < n:  # a piece of 4+ characters seen before: only its first character counts
        k = 0
        while i + k < n and s[i:i + k + 1] in s[:i]:
            k += 1
        if k >= 4:
            for j in range(i + 1, i + k):
                skip[j] = True
            i += k
        else:
            i += 1
    counted = sum(not x for x in skip)
    letters = [c for c in low if c.isalpha()]
    one_case = s == s.lower() or s == s.upper()
    if letters and one_case and len(letters) >= n - low.count("-") - low.count("_") - low.count(" "):
        vowels = sum(c in "aeiouy" for c in letters) / len(letters)
        if 0.25 <= vowels <= 0.6:
            return 2.0 * counted
    return _alphabet_bits(s) * counted


def salt_problem(salt: str) -> str | None:
    """Why `salt` is too weak for --hash-ids (never repeating the salt), or None when it is strong enough."""
    if len(salt) < MIN_SALT_CHARS:
        return f"it is shorter than {MIN_SALT_CHARS} characters"
    bits = salt_bits(salt)
    if bits < MIN_SALT_BITS:
        return (f"its strength is estimated at {bits:.0f} bits, {MIN_SALT_BITS} needed (runs, sequences, repeats "
                f"and common words add nothing)")
    return None


def strong_salt(salt: str | None) -> str:
    """The salt for --hash-ids, refused (AuditError, never repeating it) when absent or too weak."""
    if salt is None:
        raise AuditError("--hash-ids needs a salt: give none to have one generated, or --salt-file FILE")
    why = salt_problem(salt)
    if why:
        raise AuditError(f"the salt is too weak: {why}; leave --salt out to have a random one generated "
                         f"(32 bytes from the operating system)")
    return salt

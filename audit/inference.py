"""Answer inference: can what a release publishes predict the protected references?

A release hides a protected item's answer, rule and reference, but publishes its id and, per
sample, its verdict and status. GPQA imported with ids `...-v{k}` (the dataset's version k puts
the gold at letter k) passes every text check and still gives the key away. So each published
*feature* of a protected item is tested as a predictor of its reference:

- `item_id token k` and `item_id token k from the end` (the id split at every character that is
  not a letter or digit), `item_id piece k from the end` (split further into runs of letters and
  of digits), `item_id's last character`;
- `verdict` and `status`: the item's verdicts (statuses) over its samples, in sample order;
- `sample indices`: the sample numbers the item's rows carry (an item's only sample set to its
  gold letter's index spells the key), and `sample indices modulo k` (k = 2..8: a sample number
  4j + the letter's index is unique per item, and its remainder is the key);
- cross-item: `status` and `verdict of the next (previous) protected item in published order`, and of
  the one two away (NEIGHBOUR_OFFSETS), and the rows (verdict, status, answer) of the item next to it
  among all published items, public ones too: an item's key carried by its neighbour's rows;
- `row order`: the item's position among the protected items in published order, modulo m
  (m = 2..8) and in b equal blocks (b = 2, 4, 8, 16): rows follow the ids, and ids can be
  chosen so that their sorted order groups the items by answer;
- `random guess` (policy-derived): when the grading's policy is a guess (`random-guess`, `upstream-guess@964a136`), the
  guess `audit grade` drew for a row is recomputed from what the release publishes (its
  `guess_seed`, the published id and the sample); a `correct` verdict names the reference, an
  `incorrect` one rules a letter out. The feature is the set of letters left. Under dataset
  ids it gives the key back (real GPQA: 782 of 792 items); under salted ids the published id is
  not the one the guess was drawn from and it predicts nothing.

The test (TEST): leave-one-out majority vote. Each item's reference is predicted as the most
common reference among the *other* items sharing its value of the feature (ties go to the most
common reference overall; a value no other item has predicts nothing, a miss). Under no
association, no predictor beats `chance`, the share of the most common reference; the one-sided
exact binomial test gives p = P(X >= hits | n items, chance). A feature fails when p < ALPHA / F
(Bonferroni over the F features tested) and its accuracy is at least MIN_LIFT above chance ("far
above chance": a model that favours one letter makes `verdict` predict a little, not by 10 points).
Leave-one-out keeps a feature unique per item (the full id) from predicting anything.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

TEST = "leave-one-out majority vote, one-sided exact binomial test against chance"
ALPHA = 1e-6
"""Family-wise threshold over the features of one release (Bonferroni)."""
MIN_LIFT = 0.10
"""Accuracy must exceed chance by this much (10 points) to count as far above chance."""

_TOKEN = re.compile(r"[^\W_]+")
_PIECE = re.compile(r"[^\W\d_]+|\d+")


@dataclass(frozen=True)
class Finding:
    """One feature's result."""

    feature: str
    field: str
    items: int
    hits: int
    chance: float
    log10_p: float

    @property
    def accuracy(self) -> float:
        return self.hits / self.items if self.items else 0.0

    def p_text(self) -> str:
        return f"{10 ** self.log10_p:.1e}" if self.log10_p > -300 else f"1e{math.floor(self.log10_p)}"


@dataclass(frozen=True)
class Result:
    """Every feature tested, and those that predict the references far above chance."""

    features: int
    items: int
    failed: list[Finding]
    worst: Finding | None


ORDER_MODULI = range(2, 9)
SAMPLE_MODULI = range(2, 9)
NEIGHBOUR_OFFSETS = {1: "next", -1: "previous", 2: "second next", -2: "second previous"}
"""Neighbours in published order whose status and verdict are tested as predictors of an item's reference."""
ORDER_BLOCKS = (2, 4, 8, 16)
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Guess:
    """What the random-guess policy makes derivable: its seed, and the option count of each item
    (published id -> options; items without a count are tried with every count in DEFAULT_OPTIONS)."""

    seed: int
    options: Mapping[str, int]
    policy: str = "random-guess"
    """`random-guess` (audit's per-item draw) or `upstream-guess@964a136` (one letter per option count)."""


DEFAULT_OPTIONS = (4, 10)
"""Option counts tried for an item whose count is unknown (GPQA's 4, MMLU-Pro's 10)."""


def draw(seed: int, item_id: str, sample: int, options: int, policy: str = "random-guess") -> str:
    """The letter `audit grade`'s guess policy draws (the formulas of audit.grade.decision.seeded_guess)."""
    import random

    if policy == "upstream-guess@964a136":
        return LETTERS[random.Random(seed).randint(0, options - 1)]
    return LETTERS[random.Random(f"{seed}:{item_id}:{sample}").randrange(options)]


def published_items(rows: Sequence[tuple[str, int, str, str, str | None]]) -> dict[str, str]:
    """Every published item, public or protected, in published order -> what its rows publish (verdict, status
    and answer per sample), from (item_id, sample, verdict, status, answer) rows: the `neighbours` of features."""
    out: dict[str, list[str]] = {}
    for item_id, sample, verdict, status, answer in rows:
        out.setdefault(item_id, []).append(f"{sample}:{verdict}:{status}:{answer or ''}")
    return {k: "|".join(v) for k, v in out.items()}


def features(rows: Sequence[tuple[str, int, str, str]], guess: Guess | None = None,
             neighbours: Mapping[str, str] | None = None) -> dict[tuple[str, str], dict[str, str]]:
    """(feature, field) -> {item id: value} over released rows (item_id, sample, verdict, status) of
    protected items, in published order; ids are as published (dataset or salted). `neighbours`
    (published_items): every published item in published order, public ones too, whose rows next to a
    protected item's are tested as a predictor of its reference."""
    by_item: dict[str, list[tuple[int, str, str]]] = {}
    for item_id, sample, verdict, status in rows:
        by_item.setdefault(item_id, []).append((sample, verdict, status))
    out: dict[tuple[str, str], dict[str, str]] = {}

    def put(name: str, field: str, item: str, value: str) -> None:
        out.setdefault((name, field), {})[item] = value

    for item, samples in by_item.items():
        tokens = _TOKEN.findall(item)
        pieces = _PIECE.findall(item)
        for k, t in enumerate(tokens, 1):
            put(f"item_id token {k}", "item_id", item, t)
            put(f"item_id token {len(tokens) - k + 1} from the end", "item_id", item, t)
        for k, t in enumerate(reversed(pieces), 1):
            put(f"item_id piece {k} from the end", "item_id", item, t)
        if item:
            put("item_id's last character", "item_id", item, item[-1])
        samples.sort()
        put("verdict", "verdict", item, "|".join(v for _, v, _ in samples))
        put("status", "status", item, "|".join(s for _, _, s in samples))
        put("sample indices", "sample", item, "|".join(str(n) for n, _, _ in samples))
        for m in SAMPLE_MODULI:
            put(f"sample indices modulo {m}", "sample", item, "|".join(str(n % m) for n, _, _ in samples))
    n = len(by_item)
    _cross_item(by_item, neighbours or {}, put)
    for pos, item in enumerate(by_item):  # dicts keep the published order
        for m in ORDER_MODULI:
            put(f"row order: position mod {m}", "order", item, str(pos % m))
        for b in ORDER_BLOCKS:
            put(f"row order: position in {b} blocks", "order", item, str(pos * b // max(n, 1)))
    if guess is not None:
        for item, samples in by_item.items():
            counts = (guess.options[item],) if guess.options.get(item) else DEFAULT_OPTIONS
            for k in counts:
                left = set(LETTERS[:k])
                for sample, verdict, status in samples:
                    if status == "random_guess" and verdict in ("correct", "incorrect"):
                        g = draw(guess.seed, item, sample, k, guess.policy)
                        left = left & {g} if verdict == "correct" else left - {g}
                name = "the random guess" if len(counts) == 1 else f"the random guess ({k} options)"
                put(f"{name} recomputed from the published seed, ids and samples", "verdict", item,
                    "".join(sorted(left)))
    return out


def _cross_item(by_item: Mapping[str, list[tuple[int, str, str]]], neighbours: Mapping[str, str],
                put: Callable[[str, str, str, str], None]) -> None:
    """The cross-item features: the statuses and verdicts of the protected items NEIGHBOUR_OFFSETS away in
    published order, and the rows of the published items (public ones too) that far away."""
    order = list(by_item)  # dicts keep the published order
    for pos, item in enumerate(order):
        for offset, name in NEIGHBOUR_OFFSETS.items():
            if 0 <= pos + offset < len(order):
                other = by_item[order[pos + offset]]
                put(f"status of the {name} protected item in published order", "status", item,
                    "|".join(s for _, _, s in other))
                put(f"verdict of the {name} protected item in published order", "verdict", item,
                    "|".join(v for _, v, _ in other))
    every = list(neighbours)
    at = {item: pos for pos, item in enumerate(every)}
    for item in by_item:
        here = at.get(item)
        for offset, name in NEIGHBOUR_OFFSETS.items():
            if here is not None and 0 <= here + offset < len(every):
                put(f"rows of the {name} item in published order, public or protected", "order", item,
                    neighbours[every[here + offset]])


def check(feats: Mapping[tuple[str, str], Mapping[str, str]], references: Mapping[str, str]) -> Result:
    """Test every feature against the references of the items it covers (see the module docstring)."""
    overall = Counter(references.values())
    rank = {r: i for i, (r, _) in enumerate(sorted(overall.items(), key=lambda x: (-x[1], x[0])))}
    findings = []
    for (name, field), values in feats.items():
        items = [i for i in values if i in references]
        n = len(items)
        if n < 2:
            continue
        refs = Counter(references[i] for i in items)
        chance = max(refs.values()) / n
        table: dict[str, Counter[str]] = {}
        for i in items:
            table.setdefault(values[i], Counter())[references[i]] += 1
        hits = 0
        for i in items:
            counts = table[values[i]].copy()
            counts[references[i]] -= 1
            best = max(counts.values(), default=0)
            if best <= 0:
                continue  # no other item shares the value: no prediction
            guess = min((r for r, c in counts.items() if c == best), key=lambda r: rank[r])
            hits += guess == references[i]
        log_p = _log_tail(hits, n, chance)
        findings.append(Finding(name, field, n, hits, chance, log_p / math.log(10)))
    if not findings:
        return Result(0, len(references), [], None)
    threshold = math.log10(ALPHA / len(findings))
    failed = [f for f in findings if f.log10_p < threshold and f.accuracy - f.chance >= MIN_LIFT]
    worst = min(findings, key=lambda f: (f.log10_p, -f.accuracy))
    return Result(len(findings), len(references), sorted(failed, key=lambda f: f.log10_p), worst)


def _log_tail(hits: int, n: int, chance: float) -> float:
    """ln P(X >= hits) for X ~ Binomial(n, chance), exact in log space (no underflow at p = 1e-500).

    At or below the expected count the p-value is at least about one half and never significant:
    it is reported as 1 (ln 0) without summing.
    """
    if hits <= n * chance or chance >= 1.0:
        return 0.0
    if chance <= 0.0:
        return -math.inf
    lc, lq = math.log(chance), math.log1p(-chance)

    def term(k: int) -> float:
        return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * lc + (n - k) * lq

    # Terms fall from k = hits on (hits is above the mode): sum until they stop mattering.
    first = term(hits)
    total = 1.0
    for k in range(hits + 1, n + 1):
        r = math.exp(term(k) - first)
        total += r
        if r < 1e-17:
            break
    return first + math.log(total)


def message(f: Finding) -> str:
    """The one-line finding: feature, counts, chance and p; never a value of the feature."""
    return (f"answer inference: {f.feature} predicts the reference of {f.items:,} protected items {f.hits:,} times "
            f"(chance {100 * f.chance:.2f}%; exact binomial p = {f.p_text()}, threshold {ALPHA:g} over the features "
            f"tested); use --hash-ids (salted ids), or publish less")

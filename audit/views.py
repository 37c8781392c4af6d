"""What people read of a grading: figures with their intervals in words, per-subject figures, the rules that
fired, and the one-screen summaries `audit show` prints for verdict files and releases (the other package
kinds' summaries are their own: `audit.packages.kinds`).

Everything here formats; nothing decides a verdict.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from audit.summary import pct
from audit.verdicts.models import AT_BUDGET_NOTE, ComponentRef, Figure, Interval, SubjectSummary, VerdictFile

_LEVEL = re.compile(r"\(1−([0-9.]+)\)")


_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp", "Zs"})
"""Characters that print as nothing, or as a plain space: control, format (zero-width, bidi), private-use,
unassigned, surrogate, line and paragraph separators, and every space but U+0020."""


def visible(s: str) -> str:
    r"""`s` with every invisible character written `<U+XXXX>`: `q3` and `q3\u200b` print apart.

    Escaped: the categories in `_HIDDEN_CATEGORIES`, a combining mark with no base character before it
    (at the start, after a space or after an escaped character), and a space at either end (a table cell
    or a line end hides it). Letters, marks on a base (`e\u0301`) and every visible script print as they are.
    """
    if s.isascii() and s.isprintable() and s.strip(" ") == s:
        return s  # the common case, fast
    import unicodedata

    out: list[str] = []
    base = False  # whether the previous character can carry a combining mark
    last = len(s) - 1
    for i, ch in enumerate(s):
        cat = unicodedata.category(ch)
        hidden = (cat in _HIDDEN_CATEGORIES and ch != " ") or (cat in ("Mn", "Me") and not base) \
            or (ch == " " and (i == 0 or i == last))
        if hidden:
            out.append(f"<U+{ord(ch):04X}>")
            base = False
        else:
            out.append(ch)
            base = ch != " "
    return "".join(out)


def text_table(rows: list[list[str]], indent: str = "") -> list[str]:
    """Rows (the first one the header) as left-aligned columns two spaces apart, trailing spaces cut."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [(indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True))).rstrip() for r in rows]


def interval_words(iv: Interval) -> str:
    """An interval as printed: `binomial_2se [a, b]`, and the one-sided bounds said in words.

    `zero_failure_upper` is the exact bound used when a run has no wrong row (accuracy at least
    (1−0.95)^(1/n)) or no correct row (accuracy at most 1−(1−0.95)^(1/n)); its id alone read as
    "upper" for either case.
    """
    if iv.method == "zero_failure_upper":
        m = _LEVEL.search(iv.formula)
        level = f"{float(m.group(1)) * 100:g}%" if m else "95%"
        if iv.high >= 1.0 and iv.low > 0.0:
            return f"no row wrong: accuracy ≥ {100 * iv.low:.2f}% (exact one-sided {level} lower bound)"
        return f"no row correct: accuracy ≤ {100 * iv.high:.2f}% (exact one-sided {level} upper bound)"
    return f"{iv.method} [{100 * iv.low:.2f}, {100 * iv.high:.2f}]"


def shown_intervals(f: Figure) -> list[Interval]:
    """A figure's intervals as printed (`audit.summary.shown_intervals`: stored from verdict file version 3 on)."""
    from audit.summary import shown_intervals as shown

    return shown(f)


def figure_lines(figures: Iterable[Figure]) -> list[str]:
    """One line per figure: name, value, counts and its intervals (Wilson and Clopper–Pearson beside
    `binomial_2se`)."""
    lines = []
    for f in figures:
        ivs = "; ".join(interval_words(iv) for iv in shown_intervals(f))
        lines.append(f"{f.name:<28} {100 * f.value:6.2f}%  ({f.correct}/{f.total})" + (f"  {ivs}" if ivs else ""))
    return lines


def sample_figure_lines(figs: list[Any], stored: bool = False) -> list[str]:
    """pass@k and maj@k, each with its named interval (the summary's `sample_figures`, or
    audit.summary.sample_figures of the rows for a file older than version 3)."""
    if not figs:
        return []
    where = "stored in the summary" if stored else "computed from the rows, not stored"
    lines = [f"over {figs[0].items:,} items with {figs[-1].name.split('@')[1]} samples each ({where}):"]
    for f in figs:
        iv = f"  {interval_words(f.interval)}" if f.interval is not None else ""
        lines.append(f"  {f.name:<10} {100 * f.value:6.2f}%{iv}" + (f"  ({f.note})" if f.note else ""))
    return lines


def bad_input_lines(bad_input: int) -> list[str]:
    """The note under the figures when rows were recorded ungraded for bad input: they are in no figure silently."""
    if not bad_input:
        return []
    rows = "row" if bad_input == 1 else "rows"
    return [f"note: {bad_input:,} {rows} with status bad_input (the source record disagrees with itself): counted "
            f"as not graded in accuracy_all, left out of accuracy"]


def coverage_lines(summary: Any) -> list[str]:
    """The headline when responses cover only some items: how many, and what each figure counts.

    Read from the summary's ungraded rows: an item none of whose samples has a response is uncovered.
    """
    samples = max(summary.samples, 1)
    missing: dict[str, int] = {}
    for row in summary.excluded:
        if row.get("status") == "missing":
            missing[row["item_id"]] = missing.get(row["item_id"], 0) + 1
    uncovered = sum(1 for n in missing.values() if n >= samples)
    if not uncovered:
        return []
    items = summary.items
    covered = items - uncovered
    return [f"coverage: responses cover {covered:,} of {items:,} items ({pct(covered / items)}): `accuracy` is over "
            f"the rows with a response; `accuracy_all` counts the {uncovered:,} items without one as wrong"]


def _rate(f: Figure | None) -> str:
    return "n/a" if f is None or not f.total else f"{pct(f.value)} ({f.correct:,}/{f.total:,})"


def subject_lines(subjects: list[SubjectSummary] | None) -> list[str]:
    """The per-subject table (all runs pooled): items, accuracy (ungraded left out), accuracy_all."""
    if not subjects:
        return []
    names = [visible(s.subject) if s.subject else "(no subject)" for s in subjects]
    width = max(len("subject"), *map(len, names))
    lines = [f"per subject ({len(subjects)}):", f"  {'subject':<{width}} {'items':>6}  {'accuracy':<22}accuracy_all"]
    for name, s in zip(names, subjects, strict=True):
        by = {f.denominator: f for f in s.figures}
        lines.append(f"  {name:<{width}} {len(s.items):>6}  {_rate(by.get('graded')):<22}{_rate(by.get('all'))}")
    return lines


def rule_explained(rule: str, extractors: Iterable[ComponentRef | None]) -> tuple[str, str] | None:
    """(key, the rule in words) of the first of `extractors` (registered versions) that declares it."""
    from audit import extractors as registry

    for ref in extractors:
        if ref is None or ref.key not in registry.REGISTRY:
            continue
        words = registry.get(ref.key).explain(rule)
        if words:
            return ref.key, words
    return None


def rule_lines(counts: Mapping[str | None, int], extractors: list[ComponentRef | None]) -> list[str]:
    """What the extractor read: each rule that fired, how often, and what it means."""
    named = [e for e in extractors if e is not None]
    if not named or not counts:
        return []
    keys = " and ".join(e.key for e in named)
    lines = [f"rules that fired ({keys}):"]
    shown = [(visible(r), n) for r, n in counts.items() if r is not None]
    width = max((len(r) for r, _ in shown), default=4)
    for rule, n in sorted(shown, key=lambda x: (-x[1], x[0])):
        found = rule_explained(rule, named)  # (an escaped label is no declared rule: no words)
        lines.append(f"  {rule:<{width}} {n:>8,}" + (f"  {found[1]}" if found else ""))
    if counts.get(None):
        lines.append(f"  {'—':<{width}} {counts[None]:>8,}  no response was read (missing or excluded rows)")
    return lines


def strength_lines(counts: Mapping[str | None, int], extractors: list[ComponentRef | None],
                   cut: Mapping[str | None, int] | None = None) -> list[str]:
    """The reads by strength (answer statement, format match, fallback) and, when the texts were read, the
    rows that may have been cut (a labelled heuristic)."""
    from audit import extractors as registry

    exs = [registry.get(e.key) for e in extractors if e is not None and e.key in registry.REGISTRY]
    if not exs or not counts:
        return []
    total = sum(n for r, n in counts.items() if r is not None)
    by: dict[str, int] = {}
    fallback_rules = []
    for rule, n in counts.items():
        if rule is None:
            continue
        strength = next((x for x in (e.strength(rule) for e in exs) if x), None) or "no answer"
        by[strength] = by.get(strength, 0) + n
        if strength == "fallback":
            fallback_rules.append(rule)
    order = ("statement", "format", "fallback", "no answer")
    lines = ["reads by strength: " + ", ".join(f"{k} {by[k]:,} ({pct(by[k] / total)})" for k in order if by.get(k))]
    if by.get("fallback"):
        n = by["fallback"]
        lines.append(f"  {n:,} {'rows rest' if n != 1 else 'row rests'} on a fallback read "
                     f"({', '.join(sorted(fallback_rules))}): a read of last resort from text that states no answer")
    if cut:
        n_cut = sum(cut.values())
        parts = []
        for label, rules in (("fallback reads", fallback_rules),
                             ("no-answer rows", [r for r in counts if r is not None and not any(
                                 e.strength(r) for e in exs)])):
            of = sum(counts[r] for r in rules)
            if of:
                parts.append(f"{sum(cut.get(r, 0) for r in rules):,} of the {of:,} {label}")
        lines.append(f"possibly cut (a heuristic, not a verdict): {n_cut:,} row{'s have' if n_cut != 1 else ' has'} no "
                     f"finish reason and stop{'s' if n_cut == 1 else ''} mid-sentence"
                     + (f"; {' and '.join(parts)} are among them" if parts else ""))
    return lines


# --------------------------------------------------------------------------- audit show


def _ref_line(label: str, ref: Any) -> str:
    return (f"{label:<10} {visible(ref.package_id)} (digest {ref.digest[:12]}…)"
            + (f" at {visible(ref.path)}" if ref.path else ""))


def verdict_file_view(path: str | Path) -> list[str]:
    """`audit show` on a verdict file: what was graded, how, and the figures."""
    from audit.verdicts.read import read_verdicts

    read = read_verdicts(path)
    header, table = read.header, read.rows
    vf: VerdictFile = header
    lines = [f"verdicts   {visible(str(path))} (verdict file, schema version {vf.schema_version})",
             f"benchmark  {visible(vf.benchmark)}: {table.num_rows:,} rows, {vf.summary.items:,} items x "
             f"{vf.summary.samples} samples"]
    if vf.responses_package is not None:
        lines.append(_ref_line("responses", vf.responses_package))
    else:
        lines.append("responses  not named (imported verdicts)")
    if vf.items_package is not None:
        lines.append(_ref_line("items", vf.items_package))
    for label, ref in (("extractor", vf.extractor), ("grader", vf.grader), ("mc extr.", vf.mc_extractor),
                       ("mc grader", vf.mc_grader)):
        if ref is not None:
            lines.append(f"{label:<10} {visible(ref.key)} (fingerprint {ref.fingerprint[:12]}…)")
    if vf.extractor is None and vf.grader is None:
        who = vf.environment.get("recorded_by")
        lines.append("graded by  " + (f"{visible(str(who))} (imported: no extractor or grader is named)" if who else
                                      "unknown (imported: no extractor or grader is named)"))
    if vf.extractor is None and vf.grader is None:
        # An imported file's Policies are placeholders: it applied none of them.
        lines.append("policies   none applied here (imported verdicts: the run's own rules decided them)")
    else:
        policies = vf.policies.model_dump()
        if policies.get("at_budget") == "count":
            policies.pop("at_budget")  # the default, not written in the file either
        if policies.get("judge_error") == "wrong":
            policies.pop("judge_error")  # likewise
        lines.append("policies   " + ", ".join(f"{k}={','.join(v) if isinstance(v, list) else v}"
                                               for k, v in policies.items() if v not in ([],)))
    prod = vf.producer
    commit = f" {prod.git_commit[:12]}{'+dirty' if prod.git_dirty else ''}" if prod.git_commit else ""
    lines.append(f"producer   {prod.tool} {prod.version}{commit}")
    lines += coverage_lines(vf.summary)
    lines.append("figures" + (" (one run: the run's figures are the overall ones)" if vf.summary.samples == 1 else ""))
    shown = [f for f in vf.summary.figures if vf.summary.samples != 1 or f.sample is None]
    lines += ["  " + x for x in figure_lines(shown)]
    lines += bad_input_lines(vf.summary.bad_input)
    lines.append("statuses   " + ", ".join(f"{visible(k)}={v:,}" for k, v in vf.summary.statuses.items()))
    lines += at_budget_lines(table.column("reason").to_pylist(), vf.policies.at_budget)
    lines += subject_lines(getattr(vf.summary, "subjects", None))  # (verdict file v2 and later)
    stored = getattr(vf.summary, "sample_figures", None)  # (verdict file v3 and later)
    if vf.summary.samples > 1 and stored is not None:
        lines += sample_figure_lines(stored, stored=True)
    elif vf.summary.samples > 1:
        from audit.summary import sample_figures

        columns = table.select(["item_id", "sample", "verdict", "answer"])
        lines += sample_figure_lines(sample_figures(columns.to_pandas()))
    if vf.extractor is not None:
        counts = Counter(table.column("rule").to_pylist())
        lines += rule_lines(counts, [vf.extractor, vf.mc_extractor])
    return lines


def format_summary(vf: VerdictFile) -> list[str]:
    """Short human-readable lines: the figures with their intervals (one-sided bounds in words), status
    counts, and the per-subject figures when the items name subjects."""
    lines = coverage_lines(vf.summary) + figure_lines(vf.summary.figures) + bad_input_lines(vf.summary.bad_input)
    lines.append("statuses: " + ", ".join(f"{k}={v}" for k, v in vf.summary.statuses.items()))
    return lines + subject_lines(getattr(vf.summary, "subjects", None))  # a version-1 summary has none


def at_budget_lines(reasons: Iterable[str | None], policy: str) -> list[str]:
    """A note on rows whose reply used exactly max_tokens and said `stop`, if any, from the rows' reasons."""
    head, tail = AT_BUDGET_NOTE.split("{}")
    cut = "used all max_tokens="
    n = sum(1 for r in reasons if r and ((head in r and r.endswith(tail)) or (r.startswith(cut) and "at_budget" in r)))
    if not n:
        return []
    how = ("taken as cut (at_budget=truncated)" if policy == "truncated" else
           "graded as any other; --policy at_budget=truncated takes them as cut")
    return [f"at budget: {n:,} row{'s' if n != 1 else ''} used exactly max_tokens and said stop: {how}"]


def release_view(release: Mapping[str, Any]) -> list[str]:
    """The lines `audit show` adds for a release package: what it publishes, from its release.json."""
    lines = []
    if isinstance(release.get("rows"), int):
        lines.append(f"release    {release['rows']:,} rows: {release.get('items', 0):,} items x "
                     f"{release.get('samples', 0)} samples; {release.get('protected_items', 0):,} protected items "
                     f"published as verdict and status only")
    graded = [f"{c['name']}@{c['version']}" for c in (release.get("extractor"), release.get("grader"))
              if isinstance(c, dict) and "name" in c and "version" in c]
    if graded:
        lines.append("graded by  " + " + ".join(graded))
    statuses = release.get("statuses")
    if isinstance(statuses, dict):
        lines.append("statuses   " + ", ".join(f"{k}={v:,}" for k, v in statuses.items()))
    try:
        figs = [Figure.model_validate(f) for f in release.get("figures") or []]
    except Exception:  # a damaged release.json: `audit validate` says what is wrong
        figs = []
    if figs:
        lines.append("figures")
        lines += ["  " + x for x in figure_lines(figs)]
    return lines

"""Run every attack test (tests/test_attacks_*.py) and print, per attack, whether the defence held.

    .venv/bin/python benchmarks/attacks_report.py [-n 2] [pytest args...]

Each attack of tests/attacks.py is listed with where it came from (issue 11 or added), how it
fared before the hardening (measured on the commit that added the attack tests, where the ones
that succeeded were marked xfail(strict=True); for the `kinds.*` attacks and pkg.toctou-bundle, on
main at 11bb3c1, before the hardening was merged into it) and now. An attack holds when every test naming
it passes. The last line is the closing figure: "N tried, M held before, K held now".
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    import pytest

    sys.path.insert(0, str(REPO))
    os.chdir(REPO)
    from tests import attacks

    attacks._outcomes.clear()
    files = sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").glob("test_attacks_*.py"))
    code = pytest.main(["-q", "-p", "no:cacheprovider", "--no-header", "-o", "console_output_style=classic",
                        *argv, *files])
    outcomes = dict(attacks._outcomes)
    if not outcomes:  # xdist: the controller's plugin saw the reports through conftest
        return int(code)
    print()
    print(f"{'attack':<32} {'source':<6} {'before':<9} now")
    for a in attacks.ATTACKS.values():
        got = outcomes.get(a.id)
        now = "not run" if got is None else "held" if all(got) else "SUCCEEDED"
        print(f"{a.id:<32} {a.source:<6} {a.before:<9} {now}")
    issue = {k: v for k, v in outcomes.items() if attacks.ATTACKS[k].source == "issue"}
    print(f"issue 11's list: {attacks.summary_line(issue).removeprefix('attacks: ')}")
    print(f"with the added ones: {attacks.summary_line(outcomes).removeprefix('attacks: ')}")
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

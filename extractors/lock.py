"""Check or extend the committed lock file `extractors/lock.json` (`name@version -> fingerprint`).

    python -m extractors.lock            # --check: exit 1 on any difference
    python -m extractors.lock --update   # add versions not yet locked; never rewrites an entry

`audit lock` does the same for extractors and graders together.
"""

from __future__ import annotations

import argparse
import sys

import extractors
from extractors.registry import lock_problems, update_lock


def check() -> list[str]:
    """Differences between the registered extractors and the lock file."""
    extractors.all_extractors()
    return lock_problems(extractors.REGISTRY, extractors.LOCK_FILE)


def update() -> list[str]:
    """Lock every registered version not yet in the lock file; returns the keys added."""
    extractors.all_extractors()
    return update_lock(extractors.REGISTRY, extractors.LOCK_FILE)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m extractors.lock", description=__doc__.split("\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 when the lock file differs (default)")
    mode.add_argument("--update", action="store_true", help="add new versions; never rewrite an entry")
    args = ap.parse_args(argv)
    if args.update:
        for key in update():
            print(f"locked {key}")
    problems = check()
    for p in problems:
        print(p)
    if not problems:
        print(f"{extractors.LOCK_FILE.name}: {len(extractors.REGISTRY.keys())} extractor versions in sync")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

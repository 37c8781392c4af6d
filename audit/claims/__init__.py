"""Claims: a ledger of headline numbers that `audit verify` recomputes from pinned packages.

- `audit.claims.ledger`: `claims.yaml`, its models and its safe reading.
- `audit.claims.registry`: recipes by name (the interface for adding one is in its docstring).
- `audit.claims.recipes_grade`, `audit.claims.recipes_stats`: the recipes that exist today.
- `audit.claims.verify`: recompute every claim and say which survive.
- `audit.claims.page`: the measurements page (Markdown and HTML, with plots).
"""

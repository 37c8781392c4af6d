"""Claims: a ledger of headline numbers that `audit verify` recomputes from pinned packages.

- `audit.claims.ledger`: `claims.yaml`, its models and its safe reading.
- `audit.claims.registry`: recipes by name (the interface for adding one is in its docstring).
- `audit.claims.recipes_grade`, `audit.claims.recipes_stats`: verdict and statistics recipes.
- `audit.claims.recipes_bench`, `audit.claims.recipes_trace`, `audit.claims.recipes_floor`: measurement recipes
  (throughput and counters, profiler traces, bandwidth floors), each through its module's own loader.
- `audit.claims.verify`: recompute every claim and say which survive.
- `audit.claims.page`: the measurements page (Markdown and HTML, with plots).
"""

"""Math answer grading: one engine, one subclass per `math.equiv` version (overrides, never copies).

    audit.graders.math.latex    string scanning of LaTeX answers (pure functions, no sympy)
    audit.graders.math.engine   MathEngine: normalize → parse → compare, every step a method;
                                node types; the numeric helpers
    audit.graders.math.v1       math.equiv@1  MathEquiv1(MathEngine) + MathEquivConfig
    audit.graders.math.v2       math.equiv@2  MathEquiv2(MathEngine) + MathEquiv2Config
    audit.graders.math.v3       math.equiv@3  MathEquiv3(MathEquiv2) + MathEquiv3Config

Adding a version touches one module: `vN.py` with a subclass that overrides the steps whose rule
changes, its frozen config, and the two registered functions (`fast` and the full grader); then
its golden rows (tests/golden/graders/) and `audit lock --update`. Every public module of this
package is imported here, so a new one registers without being listed anywhere.

A registered version never changes behaviour. A change to the engine or to a shared helper moves
the fingerprint of every version that runs it: `audit lock --migrate math.equiv@N --baseline REF`
accepts the new code only when each version's outputs on the golden rows and the real data are
byte-identical to the locked code's; otherwise the change belongs in a new version.
"""

from __future__ import annotations

from audit.registry import import_public_modules

import_public_modules(__name__)

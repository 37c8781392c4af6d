"""The `verdicts` package kind: a grading's verdict files (results.json) as one registered Kind."""

from __future__ import annotations

from pydantic import BaseModel

from audit.packages.kinds import Kind, register_kind
from audit.verdicts.models import VerdictFileV1, VerdictFileV2, VerdictFileV3, VerdictFileV4


def _verdict_schemas() -> dict[str, type[BaseModel]]:
    return {"verdict_file.v1": VerdictFileV1, "verdict_file.v2": VerdictFileV2, "verdict_file.v3": VerdictFileV3,
            "verdict_file.v4": VerdictFileV4}


VERDICTS: Kind[None] = register_kind(Kind("verdicts", "verdicts of a grading (written as verdict files, results.json)",
                              schemas=_verdict_schemas), __name__)

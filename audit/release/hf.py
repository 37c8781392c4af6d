"""`audit release --format hf`: a release as a Hugging Face dataset folder that `datasets.load_dataset(DIR)` loads.

The release is built exactly as `audit release` builds it (`audit.release.build_release`: protected rows
reduced to verdict and status, the leak check and the inference test on every file, nothing written on a
finding), into `DIR/release/`, where `audit verify-release DIR/release --items ...` checks it. Beside it:

- `data/verdicts.parquet`: the release's rows (one column per field of its row schema), written by pyarrow
  with fixed options and `datasets`' features metadata (`parquet_bytes`), read back with `datasets` and
  compared row by row with `release/verdicts.jsonl` before anything is moved into place, so the Parquet holds
  the leak-checked rows and nothing else; verify-release regenerates it and compares every byte (same pyarrow
  version), or else checks that every byte is a page or the footer and every value a row's;
- `README.md`: the dataset card, YAML front matter (`configs` naming the Parquet file, `tags`, and only
  figures and names taken from `release.json`) over the release's own README, byte for byte.

So every published byte is the checked release's or fixed text: the leak check applies unchanged.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.release.build import build_release
from audit.release.models import (
    DATA_FILE,
    HF_RELEASE_DIR,
    INFO_FILE,
    PARQUET_COLUMNS,
    PARQUET_TYPES,
    README_FILE,
    ROWS_FILE,
    ROWS_SCHEMA,
    ROWS_SCHEMA_V1,
)
from audit.release.render import render_card

RELEASE_DIR = HF_RELEASE_DIR


def parquet_rows(lines: list[str], columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """The rows of a release's rows file as the Parquet file holds them: every column, null where a row has none."""
    out = []
    for line in lines:
        obj = json.loads(line)
        out.append({k: obj.get(k, False if k == "protected" else None) for k in columns})
    return out


def parquet_bytes(rows: list[dict[str, Any]], schema: str) -> bytes:
    """The Parquet file of a dataset folder: the rows (parquet_rows) under `schema`'s columns, with the one
    metadata entry `datasets` writes (its features), written by pyarrow with fixed options (snappy, dictionaries,
    statistics; no page index, bloom filter or content-defined chunks). The same rows give the same bytes under
    one pyarrow version, which verify-release compares (every byte of the file is then the rows')."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from audit.release.models import parquet_metadata

    types = {"string": pa.string(), "int64": pa.int64(), "bool": pa.bool_()}
    columns = PARQUET_COLUMNS[schema]
    arrow = pa.schema([(c, types[PARQUET_TYPES[c]]) for c in columns],
                      metadata={"huggingface": json.dumps(parquet_metadata(schema))})
    table = pa.Table.from_pylist(rows, schema=arrow)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="snappy", use_dictionary=True, write_statistics=True,
                   write_page_index=False)
    return buf.getvalue()


def build_hf_release(verdicts: str | Path, out: str | Path, *, overwrite: bool = False, **kwargs: Any) -> Any:
    """Write the release of `verdicts` as a dataset folder at `out` (kwargs: as `build_release`). Returns the
    `ReleaseResult` of the release inside."""
    try:
        import datasets
    except ImportError:
        raise AuditError("--format hf needs datasets: pip install 'audit[hf]'") from None
    from audit.outputs import check_output, publish, staging_dir

    dest = Path(out)
    check_output(dest, force=overwrite, kind="hf-release")
    stage = staging_dir(dest, "hf")
    try:
        result = build_release(verdicts, stage / RELEASE_DIR, **kwargs)
        release = stage / RELEASE_DIR
        schema = ROWS_SCHEMA if result.info.structure is not None else ROWS_SCHEMA_V1
        rows = parquet_rows((release / ROWS_FILE).read_text(encoding="utf-8").splitlines(), PARQUET_COLUMNS[schema])
        (stage / "data").mkdir()
        datasets.disable_progress_bars()
        # Written by pyarrow with fixed options (parquet_bytes), so that verify-release can compare every byte;
        # `datasets` reads it back (its features from the metadata) and must give exactly the checked rows.
        (stage / DATA_FILE).write_bytes(parquet_bytes(rows, schema))
        with tempfile.TemporaryDirectory(prefix="audit-hf-") as cache:
            back = datasets.Dataset.from_parquet(str(stage / DATA_FILE), cache_dir=cache, keep_in_memory=True)
            if back.to_list() != rows:  # the Parquet must hold exactly the checked rows
                raise AuditError("the Parquet file does not read back as the release's rows", path=str(dest))
        info = json.loads((release / INFO_FILE).read_text(encoding="utf-8"))
        card = render_card(info, (release / README_FILE).read_text(encoding="utf-8"))
        (stage / "README.md").write_text(card, encoding="utf-8")
        publish(stage, dest, force=overwrite, kind="hf-release")
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return result

"""Raw packages: a directory (or `.tar.gz`) holding `manifest.json` and data files.

A package is written into a hidden sibling directory and renamed into place
only after its manifest is complete, so a killed writer leaves nothing that
validates. Reading verifies the manifest, every file's size and sha256, every
row against its schema, duplicate keys, and path safety before any row is used.

    kinds     each package kind as one registered `Kind`: its rows, documents, typed extra, read and show
    layout    what a package is on disk: manifest name, content digest, row reading
    validate  every check (`validate_package`), tarballs unpacked safely (`unpacked`)
    read      `open_package` -> `Package`, whose rows were validated on open (`load_package`: or the problems)
    write     `PackageWriter` (atomic), `bundle` (a reproducible .tar.gz)
"""

from audit.fileio import write_atomic
from audit.packages.kinds import DOCUMENT_SCHEMAS, KINDS, ROW_KEYS, Kind, get_kind, register_kind
from audit.packages.layout import (
    DATA_SUFFIXES,
    MANIFEST,
    content_digest,
    digest_scope,
    document_model,
    package_digest,
    row_to_json,
)
from audit.packages.read import Package, load_package, open_package
from audit.packages.validate import (
    MAX_PROBLEMS_PER_FILE,
    load_manifest,
    pydantic_problems,
    unpacked,
    validate_package,
    validate_rows,
    validate_tree,
)
from audit.packages.write import PackageWriter, bundle, created_now

__all__ = [
    "DATA_SUFFIXES", "DOCUMENT_SCHEMAS", "KINDS", "Kind", "MANIFEST", "MAX_PROBLEMS_PER_FILE", "ROW_KEYS", "Package",
    "PackageWriter", "bundle", "content_digest", "created_now", "digest_scope", "document_model", "get_kind",
    "register_kind", "load_manifest", "load_package", "open_package", "package_digest", "pydantic_problems",
    "row_to_json", "unpacked", "validate_package", "validate_rows", "validate_tree", "write_atomic",
]

"""`audit import`: packages from files other tools wrote (MMLU-Pro, lm-eval, inspect_ai, lighteval, any table).

One module per importer's command in `audit/cli/imports/`, each named by its importer's entry in the
importer catalog (`audit.importers.formats.IMPORTERS`); loading this module loads every one of them without
importing the importers themselves (`audit --help` stays light). tests/test_importer_catalog.py checks that
the commands are exactly the catalog.
"""

from __future__ import annotations

from audit.cli.imports.common import import_group, mapping_options
from audit.registry import import_public_modules

__all__ = ["import_group", "mapping_options"]  # mapping_options: `audit extract` and `audit judge` share it

import_public_modules("audit.cli.imports")

"""`audit import` commands, one module per importer (the module its importer's catalog entry names).

`common` holds the group and what the commands share; `audit.cli.import_cmd` imports every public module
here, so a new importer's command is found without being listed.
"""

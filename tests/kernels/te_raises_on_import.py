"""A module whose import fails (the error tests check the traceback reaches C++)."""

raise RuntimeError("te_raises_on_import: this module refuses to import")

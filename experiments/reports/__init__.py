"""Reports from finished runs: selection, the cell table, figures, the markdown page, the paper's findings, the
committed per-run results, and the parameter-count report (`report`, `params`)."""

"""Training entry, sweep runner, reports and the `xlstm-suite` command line."""

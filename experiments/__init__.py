"""The `xlstm-suite` command line (cli) and its subpackages: config (compose and validate run configs, plan
artifacts), training (one run), sweeps (runner, claims, run store), reports (tables and figures); paths, atomic and
display are shared by all of them."""

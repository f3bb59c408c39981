"""Benchmark runs from the command line: `gauntlet eval …` and the run folders it writes and reads.

The evaluation engine (app.evaluation.engine) runs trials into any `RunStore`; this package is its
command-line side: `folder` (the run-folder store and its readers), `variant` (variant YAML to
a run configuration), `report` (what the commands print), `cli` (the commands), `plot` and
`upload`. The engine imports nothing from here.
"""

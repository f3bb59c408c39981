"""The evaluation engine (`engine`: pass@k and seq@k runs, verifiers, model calls) and its
commands (`commands`: `gauntlet eval`, run folders, plots, uploads), beside the service: neither
imports it, and the engine imports neither its commands nor the benchmarks."""

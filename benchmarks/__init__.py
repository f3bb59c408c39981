"""Benchmarks run by the evaluation engine, one package per benchmark (see docs/engine.md)."""

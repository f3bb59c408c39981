"""Scorer plugins: one module each, loaded by entrypoint inside the scorer sandbox."""

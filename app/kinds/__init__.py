"""The challenge kinds, one package each; `app.challenge.registry` lists them.

A kind's package holds its configuration sections and their checks (`config.py`), its runs on
a worker (`run.py`, imported by the run alone: it loads the evaluation engine), its web
fragments (`web.py` and `templates/`), and `KIND`, the object every layer asks about the
kind's challenges (`app.kinds.base.Kind`). docs/architecture.md says how to add one.
"""

# One image for every service role: migrate, api (uvicorn), worker (Celery) and beat.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    GAUNTLET_DATA_DIR=/var/lib/gauntlet \
    UV_PROJECT_ENVIRONMENT=/opt/gauntlet \
    UV_PYTHON_DOWNLOADS=never \
    UV_LINK_MODE=copy \
    UV_COMPILE_BYTECODE=1 \
    PATH=/opt/gauntlet/bin:$PATH

# bubblewrap isolates scorer plugins (docs/sandbox.md); production refuses plugin scoring
# without it.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /srv/gauntlet
# The same uv as the Makefile's; the runtime set exactly as uv.lock has it (hashes checked).
RUN pip install --no-cache-dir uv==0.13.9
COPY pyproject.toml uv.lock README.md ./
# Dependencies first, in their own layer: a code change does not reinstall them.
RUN uv sync --locked --no-install-project --no-cache
COPY app ./app
COPY workers ./workers
COPY scorers ./scorers
COPY benchmarks ./benchmarks
COPY migrations ./migrations
COPY alembic.ini ./
# Editable, as before: `gauntlet migrate` finds alembic.ini and migrations/ beside app/.
# PYTHONDONTWRITEBYTECODE keeps the running services from writing .pyc files, so they are
# compiled here, once (uv compiles the dependencies): without them every process start
# compiles each module it imports again (the API took ~1.9 s to answer /healthz instead of
# ~0.8 s; bench/api_start.py).
RUN uv sync --locked --no-cache \
    && /opt/gauntlet/bin/python -m compileall -q app workers scorers benchmarks \
    && useradd --system --home /srv/gauntlet gauntlet \
    && mkdir -p /var/lib/gauntlet && chown gauntlet /var/lib/gauntlet
USER gauntlet
ENV PORT=8000
EXPOSE 8000 9100
CMD ["gauntlet", "serve", "--host", "0.0.0.0"]

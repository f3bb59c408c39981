# One image for every service role: migrate, api (uvicorn), worker (Celery) and beat.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    GAUNTLET_DATA_DIR=/var/lib/gauntlet

WORKDIR /srv/gauntlet
COPY pyproject.toml README.md ./
COPY app ./app
COPY workers ./workers
COPY scorers ./scorers
COPY benchmarks ./benchmarks
COPY migrations ./migrations
COPY alembic.ini ./
RUN pip install --no-cache-dir -e . \
    && useradd --system --home /srv/gauntlet gauntlet \
    && mkdir -p /var/lib/gauntlet && chown gauntlet /var/lib/gauntlet
USER gauntlet
ENV PORT=8000
EXPOSE 8000
CMD ["gauntlet", "serve", "--host", "0.0.0.0"]

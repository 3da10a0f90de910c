# rota: `rota server` by default; `rota worker --app ...` or `rota db upgrade` by command.
# Build your own image FROM this one and COPY your application module in; the
# examples (rota.examples:app) are included for trying it out. See README, "Operate it".
# No image is built by rota's CI (its machines have no container daemon): `make test`
# checks this file with hadolint and the commands it names against the real CLI.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY src ./src
# The pinned versions rota is tested with, and the OpenTelemetry extra.
RUN pip install --no-cache-dir --prefix=/install -c constraints.txt ".[otel]"

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin rota
COPY --from=build /install /usr/local
USER 10001
WORKDIR /home/rota
ENV PYTHONUNBUFFERED=1 \
    ROTA_HEALTHCHECK_URL=http://127.0.0.1:5017/health/live
EXPOSE 5017 9464
# A worker started with --http 0.0.0.0:9464 sets ROTA_HEALTHCHECK_URL to that port.
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; urllib.request.urlopen(os.environ['ROTA_HEALTHCHECK_URL'], timeout=2); sys.exit(0)"]
ENTRYPOINT ["rota", "--log-json"]
CMD ["server", "--host", "0.0.0.0", "--app", "rota.examples:app"]

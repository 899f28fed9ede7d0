# The recommender service: `recsys serve` on port 8000, model versions in the /artifacts volume.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app

# CPU-only torch first: the default index would pull the CUDA build (gigabytes). The same release
# as pyproject.toml pins, or installing the project would fetch that one from the default index.
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0"

COPY . /app
RUN pip install /app \
 && useradd --create-home --uid 10001 recsys \
 && mkdir -p /artifacts /data \
 && chown recsys /artifacts

USER recsys
# Keep in step with api/config.py (Settings) and docker-compose.yml
ENV RECSYS_ARTIFACTS_DIR=/artifacts \
    RECSYS_DATA_DIR=/data \
    RECSYS_DEFAULT_DATA_DIR=/artifacts/default-data \
    RECSYS_DATABASE_URL=sqlite:////artifacts/recsys.db \
    RECSYS_HOST=0.0.0.0 \
    RECSYS_PORT=8000
EXPOSE 8000
VOLUME ["/artifacts"]

# With an empty volume the first start trains the default model (a few minutes on 2 cores)
HEALTHCHECK --interval=10s --timeout=3s --start-period=600s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/ready', timeout=2)"]
STOPSIGNAL SIGTERM
CMD ["recsys", "serve", "--host", "0.0.0.0"]

# repairbot GPU runner: a worker bound to one GPU type's verification queue.
#   docker run --gpus all -e GPU_TYPE=H100_PCIe IMAGE gpu-runner
FROM pytorch/pytorch:2.13.0-cuda12.8-cudnn9-runtime

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    REPAIRBOT_DATA_DIR=/var/lib/repairbot

RUN apt-get update \
    && apt-get install -y --no-install-recommends git bubblewrap ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/repairbot
COPY docker/constraints.txt docker/constraints.txt
COPY pyproject.toml README.md ./
COPY bot bot
COPY fixers fixers
COPY runtime runtime
# The base image's CUDA torch 2.13.0 satisfies the pin; every other version is constrained.
RUN grep -v '^torch==' docker/constraints.txt > /tmp/constraints.txt \
    && pip install --constraint /tmp/constraints.txt ".[service,runtime]"

COPY docker/entrypoint.sh /usr/local/bin/repairbot-entrypoint
RUN useradd --create-home --uid 10001 repairbot \
    && mkdir -p /var/lib/repairbot \
    && chown repairbot:repairbot /var/lib/repairbot
USER repairbot
VOLUME ["/var/lib/repairbot"]
ENTRYPOINT ["repairbot-entrypoint"]
CMD ["gpu-runner"]

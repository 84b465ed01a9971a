#!/bin/sh
# The container's role is its command: api, worker, beat or gpu-runner.
set -eu
role="${1:-api}"
[ $# -gt 0 ] && shift
case "$role" in
    api) exec repairbot serve --no-worker --host 0.0.0.0 --port "${PORT:-8000}" "$@" ;;
    worker) exec repairbot worker -Q "${WORKER_QUEUES:-repair,cpu}" -c "${WORKER_CONCURRENCY:-2}" "$@" ;;
    beat) exec repairbot reconcile --loop "$@" ;;
    gpu-runner)
        : "${GPU_TYPE:?set GPU_TYPE to the CI GPU type this host has, e.g. H100_PCIe}"
        exec repairbot worker -Q "gpu.${GPU_TYPE},gpu.any" -n "gpu-${GPU_TYPE}@%h" "$@" ;;
    *) exec "$role" "$@" ;;
esac

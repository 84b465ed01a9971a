#!/usr/bin/env bash
# Run the runtime's GPU tests and the speculative-decoding benchmark on CUDA, installing nothing.
#
#   scripts/gpu_check.sh                 # results under ./gpu-results
#   OUT=/some/dir PYTHON=python3 scripts/gpu_check.sh
#
# Uses $PYTHON, else the repository's .venv, else python3: a Python with torch and pytest for the
# GPU tests and the benchmark, and with repairbot installed (`pip install -e .` or its wheel) for
# the verification and sandbox stages: the demo's tests import the bundled runtime from it.
# Cgroup v2 limits need a cgroup delegated to this process (systemd: Delegate=yes; as root,
# a cgroup with memory, pids and cpu in its parent's cgroup.subtree_control); without one the
# sandbox falls back to per-process limits, says why, and the whole-tree tests fail.
# Writes to ${OUT:-./gpu-results}:
#   device.txt        nvidia-smi output and torch's view of the device (name, capability, versions)
#   gpu-tests.xml     JUnit XML of `pytest tests/runtime -m gpu`
#   gpu-tests.log     the pytest console output
#   bench-cuda.txt    bench/runtime.py on CUDA at batch 1 and 8 (+ .json)
#   verify-demo.json  the verification runner on the demo repository (verdict, device)
#   cgroups.txt       the kernel and its cgroup hierarchy; sandbox-tests.{xml,log}: the sandbox's
#                     tests (whole-tree limits against hostile suites) on this kernel
#   summary.txt       one line per stage with its exit status
# Exit status: 0 when the GPU tests, the demo verification and the sandbox tests pass and the
# benchmark's tokens are identical to greedy; 2 when no CUDA device is visible (nothing was
# checked, which is not a pass); 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-./gpu-results}"
mkdir -p "$OUT"
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
summary="$OUT/summary.txt"
: > "$summary"

{
    echo "# nvidia-smi"
    nvidia-smi 2>&1 || echo "nvidia-smi not available"
    echo
    echo "# torch"
    "$PYTHON" - <<'PY'
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda)
print("cuda available:", torch.cuda.is_available())
for i in range(torch.cuda.device_count()):
    print(f"device {i}:", torch.cuda.get_device_name(i), "capability", torch.cuda.get_device_capability(i))
PY
} > "$OUT/device.txt" 2>&1

if ! "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "no CUDA device visible to $PYTHON (see $OUT/device.txt): GPU checks not run" | tee -a "$summary" >&2
    exit 2
fi

# --confcutdir: only tests/runtime/conftest.py, not tests/conftest.py (whose service fixtures
# need the bot's dependencies), so torch and pytest are all the GPU tests need.
"$PYTHON" -m pytest tests/runtime -m gpu -p no:cacheprovider -q --confcutdir tests/runtime \
    --junitxml="$OUT/gpu-tests.xml" 2>&1 | tee "$OUT/gpu-tests.log"
tests_rc=${PIPESTATUS[0]}
echo "gpu tests: exit $tests_rc" >> "$summary"

bench_rc=0
for bs in 1 8; do
    "$PYTHON" bench/runtime.py --device cuda --threads 0 --batch-size "$bs" --prompts 8 \
        --json "$OUT/bench-cuda-bs$bs.json" 2>&1 | tee -a "$OUT/bench-cuda.txt"
    rc=${PIPESTATUS[0]}
    echo "bench cuda batch $bs: exit $rc" >> "$summary"
    [ "$rc" -eq 0 ] || bench_rc=$rc
done

# The verification runner on the demo repository, on this GPU (issue: verification runner).
if ! "$PYTHON" -c 'import runtime' 2>/dev/null; then
    echo "the runtime is not importable by $PYTHON: install repairbot into it (pip install -e .)" \
        | tee -a "$summary" >&2
fi
"$PYTHON" scripts/verify_demo.py --queue gpu.any --json "$OUT/verify-demo.json" \
    --log "$OUT/verify-demo.log" 2>&1 | tee "$OUT/verify-demo.txt"
verify_rc=${PIPESTATUS[0]}
echo "verify demo on cuda: exit $verify_rc" >> "$summary"

# The sandbox's whole-tree limits (cgroups, hostile suites) on this host's kernel: a GPU runner
# is where target tests run, and its kernel may offer cgroup v2 where the CI machine has v1.
{ stat -fc 'cgroup root: %T' /sys/fs/cgroup; cat /sys/fs/cgroup/cgroup.controllers 2>&1; \
  own=$(sed -n 's/^0:://p' /proc/self/cgroup); echo "own: $own"; \
  cat "/sys/fs/cgroup$own/cgroup.controllers" 2>&1; uname -r; } > "$OUT/cgroups.txt" 2>&1
"$PYTHON" -m pytest tests/fixers/sandbox -p no:cacheprovider -q -rs --confcutdir tests/fixers \
    --junitxml="$OUT/sandbox-tests.xml" 2>&1 | tee "$OUT/sandbox-tests.log"
sandbox_rc=${PIPESTATUS[0]}
echo "sandbox tree limits on this kernel: exit $sandbox_rc" >> "$summary"

cat "$summary"
if [ "$tests_rc" -ne 0 ] || [ "$bench_rc" -ne 0 ] || [ "$verify_rc" -ne 0 ] \
    || [ "$sandbox_rc" -ne 0 ]; then
    exit 1
fi
exit 0

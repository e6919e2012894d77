#!/usr/bin/env bash
# Rerun the tests that compare with numbers stored on one machine (pytest marker `stored_numbers`,
# tolerances in tests/stored.py) under other OpenBLAS kernels, to see whether their tolerances hold on
# other CPUs. A developer's check, run by hand (never by CI): run it before you store or change stored
# numbers. It sets OPENBLAS_CORETYPE only for its own pytest runs, and not at all where the machine
# already sets it (some machines do, on purpose: older OpenBLAS builds crash or miscompute on them).
#
#   benchmarks/cross_kernel.sh [extra pytest args]      (PYTHON=... to choose the interpreter)
#
# Kernels: the machine's own choice; Prescott (SSE3, runs on any x86-64; with ATEN_CPU_CAPABILITY=default
# so torch's own kernels drop to the baseline too); Haswell (AVX2); SkylakeX (AVX-512) only where the
# CPU has the flag avx512f (elsewhere it would crash). Prints one line per kernel; exits non-zero if any
# kernel fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
run() {   # label, then env assignments
  local label="$1"; shift
  local t0 t1 out rc
  t0=$(date +%s)
  set +e
  out=$(env "$@" "$PY" -m pytest -q -p no:cacheprovider -m stored_numbers "${EXTRA[@]}" 2>&1)
  rc=$?
  set -e
  t1=$(date +%s)
  printf '%-42s %s  (%ss)\n' "$label" "$(printf '%s\n' "$out" | tail -n 1)" "$((t1 - t0))"
  env "$@" "$PY" benchmarks/stored_deviations.py 2>/dev/null | sed 's/^/    /' || true
  if [ "$rc" -ne 0 ]; then
    printf '%s\n' "$out" | grep -E '^(FAILED|ERROR|E )' | head -n 20 | sed 's/^/    /'
    FAILED=1
  fi
}
EXTRA=("$@")
FAILED=0
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
  echo "OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE is set by this machine: running once as it is (not overriding it)"
  run "as set (OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE)"
  exit "$FAILED"
fi
run "machine default"
run "Prescott (SSE3) + ATEN_CPU_CAPABILITY=default" OPENBLAS_CORETYPE=Prescott ATEN_CPU_CAPABILITY=default
run "Haswell (AVX2)" OPENBLAS_CORETYPE=Haswell
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
  run "SkylakeX (AVX-512)" OPENBLAS_CORETYPE=SkylakeX
else
  echo "SkylakeX (AVX-512)                         skipped: this CPU has no avx512f (the kernel would crash)"
fi
exit "$FAILED"

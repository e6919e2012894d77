#!/usr/bin/env bash
# What a change that moves no number costs (issue 47), measured in a scratch clone of the committed HEAD:
#     bash benchmarks/change_cost.sh [SCRATCH_DIR]        # ~10 min on 2 cores
# Five changes, each alone (reverted before the next):
#   1. move      a module of theory/ to another name (theory/scan.py -> theory/grid_scan.py, imports rewritten)
#   2. rename    a private helper of figures/ (figures/draw.py: _round_levels -> _rounded_contour_levels)
#   3. docstring of copyhead.theory.output.write_theory reworded
#   4. unused    function added to theory/scaling.py
#   5. number    a published figure shows altered (fig6/fig7 draw 1.1 x the median test loss)
# After 1-4 `copyhead audit --docs docs` (as CI runs it) must pass; after 1 and 2 `copyhead audit --docs docs
# --accept` re-stamps what was made again with equal numbers (timed); after 3 and 4 `snakemake -n` on a tiny
# pipeline run before the change plans 0 jobs; after 5 the audit must fail and name fig6. Prints one table;
# exits 1 if any expectation fails. The clone's own code runs (PYTHONPATH=<clone>/src).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
S=${1:-$(mktemp -d /tmp/copyhead-change-cost.XXXXXX)}
mkdir -p "$S"
git clone -q "$REPO" "$S/repo"
cd "$S/repo" || exit 2
export PYTHONPATH="$PWD/src"
echo "scratch clone of $(git rev-parse --short HEAD) in $S/repo"

now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.0f}')"; }
revert() { git reset -q --hard && git clean -qfd -- src docs; }
planned() {   # jobs `snakemake -n` plans for the tiny pipeline made before the change
  local out
  out=$(snakemake -n --cores 1 --configfile tests/configs/tiny.yaml 2>&1)
  echo "$out" | awk '$1 == "total" && !found {print $2; found=1} END {if (!found) print 0}'
}
FAIL=0
ROWS=()
row() { ROWS+=("$(printf '| %-9s | %-6s | %6s | %-14s | %-7s | %s |' "$@")"); }
check() { if ! eval "$1"; then echo "EXPECTATION FAILED: $2"; FAIL=1; fi; }

BASE=$(python3 -m copyhead audit --docs docs 2>&1 | grep -c "made by other")
echo "before any change: $BASE published products made by other code (benchmark pages, versioned inputs: warnings)"
t0=$(now)
snakemake --cores 2 --configfile tests/configs/tiny.yaml > "$S/tiny_dag.log" 2>&1 || { echo "tiny DAG failed: $S/tiny_dag.log"; exit 2; }
echo "tiny pipeline made in $(secs "$t0" "$(now)") s; planned now: $(planned) jobs"

audit() {   # $1: name; prints exit status and seconds
  local t=$(now)
  python3 -m copyhead audit --docs docs > "$S/audit_$1.txt" 2>&1
  local rc=$?
  echo "$rc $(secs "$t" "$(now)")"
}
accept() {
  local t=$(now)
  python3 -m copyhead audit --docs docs --accept > "$S/accept_$1.txt" 2>&1
  local rc=$?
  local n; n=$(grep -c "^--accept: re-stamped" "$S/accept_$1.txt")
  echo "$rc:$n $(secs "$t" "$(now)")"
}

restamped() {   # $1: a change that moves no number: the audit passes and --accept re-stamps; then revert
  local rc s acc sa
  read -r rc s <<< "$(audit "$1")"; read -r acc sa <<< "$(accept "$1")"
  check "[ $rc = 0 ]" "audit after the $1 (exit $rc, $S/audit_$1.txt)"
  check "[ ${acc%%:*} = 0 ]" "--accept after the $1 ($S/accept_$1.txt)"
  row "$1" "$rc" "$s" "${acc#*:} in ${sa} s" "$(planned)" "$(grep -c 'made by other' "$S/audit_$1.txt") products made by other code"
  revert
}
rerun_nothing() {   # $1: a change that must also plan no job: the audit passes and snakemake -n plans 0; then revert
  local rc s n
  read -r rc s <<< "$(audit "$1")"; n=$(planned)
  check "[ $rc = 0 ]" "audit after the $1 edit (exit $rc, $S/audit_$1.txt)"
  check "[ $n = 0 ]" "snakemake -n after the $1 edit plans $n jobs"
  row "$1" "$rc" "$s" "-" "$n" "$(grep -c 'made by other' "$S/audit_$1.txt") products made by other code"
  revert
}

# 1. move a module of theory/
git mv src/copyhead/theory/scan.py src/copyhead/theory/grid_scan.py
git diff --cached --quiet && { echo "change 1 did not apply: update this script"; exit 2; }
grep -rl "scan import" src tests benchmarks | xargs sed -i -e 's/from \.scan import/from .grid_scan import/' \
  -e 's/from copyhead\.theory\.scan import/from copyhead.theory.grid_scan import/'
restamped move

# 2. rename a private helper of figures/
sed -i 's/_round_levels/_rounded_contour_levels/g' src/copyhead/figures/draw.py
git diff --quiet src/copyhead/figures/draw.py && { echo "change 2 did not apply: update this script"; exit 2; }
restamped rename

# 3. a docstring
python3 - <<'EOF'
from pathlib import Path
p = Path("src/copyhead/theory/output.py"); s = p.read_text()
p.write_text(s.replace('    """Compute the theory for one attention type', '    """Reworded: compute the theory for one attention type', 1))
EOF
rerun_nothing docstring

# 4. an unused function
printf '\n\ndef unused_helper(a, b):\n    return a * b + 1\n' >> src/copyhead/theory/scaling.py
rerun_nothing unused

# 5. a number a published figure shows
sed -i 's/ax.plot(steps\[ok\], med\[ok\],/ax.plot(steps[ok], 1.1 * med[ok],/' src/copyhead/figures/draw.py
git diff --quiet src/copyhead/figures/draw.py && { echo "change 5 did not apply: update this script"; exit 2; }
read -r rc s <<< "$(audit number)"; read -r acc sa <<< "$(accept number)"
check "[ $rc = 1 ]" "audit after the altered number must fail"
check "grep -q 'FAIL docs/results_figures/fig6_linear_loss_curves' '$S/audit_number.txt'" "the audit names fig6"
check "[ ${acc%%:*} = 1 ] && grep -q 'REFUSED docs/results_figures/fig6' '$S/accept_number.txt'" "--accept refuses fig6"
row number "$rc" "$s" "refused" "$(planned)" "fails: $(grep '^FAIL' "$S/audit_number.txt" | awk '{print $2}' | xargs -n1 basename | tr '\n' ' ')"
revert

echo
echo "| change    | audit exit | audit [s] | --accept (re-stamped, time) | snakemake -n jobs | what the audit says |"
echo "|-----------|--------|--------|----------------|---------|---------------------|"
printf '%s\n' "${ROWS[@]}"
echo "(audit logs: $S/audit_*.txt, $S/accept_*.txt)"
exit $FAIL

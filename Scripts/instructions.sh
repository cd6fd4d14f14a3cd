#!/usr/bin/env bash
# Instructions and last-level cache misses per operation, counted with callgrind: the figures
# the scheduler's performance work is judged by, where the bench's wall-clock rows move by 2-3x
# from run to run on a small machine.
#
#   Scripts/instructions.sh            this checkout
#   Scripts/instructions.sh c2de8fe    a commit's library, measured with this checkout's bench
#                                      (with its own before progress, whose API this bench uses;
#                                      that one must have --count)
#
# Each workload runs under callgrind at two sizes (`bench --count WORKLOAD N`); the difference
# divided by the difference of N is the cost per operation, without the process start, the
# calibration and the pool's first threads. Workloads:
#   independent-max4   the bench's `independent max 4, trivial` row: add, run and end one op
#   idle-start         an op added to an idle queue and awaited, caches flushed before each
#                      (less `idle-baseline`, the same flushes and waits without the queue)
#   deadline-max4      independent-max4 with a deadline an hour away on each op (skipped for a
#                      commit from before time traits)
#   retry-max4         independent-max4 with each op failing once, retried at once (skipped for
#                      a commit from before retries)
#   tagged-max4        independent-max4 with a tag on each op (skipped before tags)
#   cancel-tagged      cancelOperations(tagged:) for 100 tagged ops among 1,000 and among 100,000
#                      waiting (callgrind collects inside the call only; skipped before tags)
#   progress-report    one operation's body reporting progress N times: per report (skipped before
#                      progress)
# Run it on a quiet machine, a few times: workers that linger poll and the records' storage is
# judged by the clock, so the counts move by about 1% from run to run (the idle start's misses by
# about 3%), and more when other work runs beside them. Installs valgrind from Debian's packages
# if it is missing. Takes about a minute.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! command -v valgrind >/dev/null; then
  echo "installing valgrind (Debian's package)" >&2
  apt-get update -qq && apt-get install -y -qq valgrind >/dev/null
fi

package=$root
if [ $# -ge 1 ]; then
  # The commit's library and this checkout's bench (its --count mode may be newer than the commit).
  package=$work/package
  git -C "$root" worktree add --detach --force "$package" "$1" >/dev/null 2>&1
  trap 'git -C "$root" worktree remove --force "$package"; rm -rf "$work"' EXIT
  if [ -f "$package/Sources/ActorQueue/Progress/OperationProgress.swift" ]; then
    rm -rf "$package/Sources/bench"
    cp -R "$root/Sources/bench" "$package/Sources/bench"
  elif [ ! -f "$package/Sources/ActorQueue/Time/OperationTrait.swift" ]; then
    # A commit from before time traits: this bench does not build against it; its own bench
    # (whose --count workloads are the same code) measures it, without the timed workload.
    timed=no
  fi
  # A commit from before progress measures with its own bench, which has the workloads of its day.
fi
echo "building the bench of $(git -C "$package" rev-parse --short HEAD) (release)" >&2
swift build --package-path "$package" -c release --product bench >&2
bench=$(swift build --package-path "$package" -c release --show-bin-path)/bench

# Prints "instructions last-level-misses" for one run of `bench --count $1 $2`.
count() {
  local out=$work/callgrind.$1.$2
  # Fixed caches (a desktop's: 32 KiB L1s, an 8 MiB last level), not the host's, which a
  # virtual machine may report as anything (here, a direct-mapped 256 MiB). Fair scheduling:
  # valgrind runs one thread at a time, and its default hand-over lets a thread run long enough
  # to change how often workers wait and wake (independent-max4 moved by 10% between runs).
  valgrind --tool=callgrind --fair-sched=yes --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64 \
    --callgrind-out-file="$out" "$bench" --count "$1" "$2" \
    >/dev/null 2>"$out.log" || {
    cat "$out.log" >&2
    exit 1
  }
  # The events line names the columns of the summary line: Ir, ILmr, DLmr and DLmw among them.
  awk '/^events:/ { for (i = 2; i <= NF; i++) column[$i] = i - 1 }
       /^(summary|totals):/ { ir = $(column["Ir"] + 1)
         ll = $(column["ILmr"] + 1) + $(column["DLmr"] + 1) + $(column["DLmw"] + 1) }
       END { print ir, ll }' "$out"
}

# Prints the cost per operation of workload $1 between sizes $2 and $3 (less $4's, if given).
per_op() {
  local small large base_small base_large
  read -r -a small <<<"$(count "$1" "$2")"
  read -r -a large <<<"$(count "$1" "$3")"
  local ir=$((large[0] - small[0])) ll=$((large[1] - small[1]))
  if [ $# -ge 4 ]; then
    read -r -a base_small <<<"$(count "$4" "$2")"
    read -r -a base_large <<<"$(count "$4" "$3")"
    ir=$((ir - (base_large[0] - base_small[0])))
    ll=$((ll - (base_large[1] - base_small[1])))
  fi
  local n=$(($3 - $2))
  awk -v name="$1" -v ir="$ir" -v ll="$ll" -v n="$n" \
    'BEGIN { printf "%-18s %8.0f instructions  %7.1f last-level misses  per op (%d ops)\n", name, ir / n, ll / n, n }'
}

per_op independent-max4 20000 120000
per_op idle-start 50 250 idle-baseline
[ "${timed:-yes}" = no ] || per_op deadline-max4 20000 120000
if "$bench" --help 2>&1 | grep -q retry; then per_op retry-max4 20000 120000; fi
if "$bench" --help 2>&1 | grep -qw tags; then
  per_op tagged-max4 20000 120000
  # Only inside the call (its mangled name): eleven calls of 100 each, among two backlogs.
  call='$s10ActorQueueAAC16cancelOperations6taggedyAA12OperationTagV_tF'
  for among in 1000 100000; do
    valgrind --tool=callgrind --fair-sched=yes --toggle-collect="$call" \
      --callgrind-out-file="$work/tagged.$among" "$bench" --count cancel-tagged "$among" >/dev/null 2>&1
    awk -v among="$among" '/^(summary|totals):/ { printf "cancel-tagged      %8.0f instructions per call of 100 among %d waiting\n", $2 / 11, among; exit }' \
      "$work/tagged.$among"
  done
fi
if "$bench" --help 2>&1 | grep -qw progress; then per_op progress-report 100000 1100000; fi

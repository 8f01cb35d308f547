#!/usr/bin/env bash
# Where a seccomp filter's cost per system call goes on this machine (#34; a measurement, not
# a test): a tiny C loop of getpid system calls, profiled with perf's cpu-clock three ways:
# plain; with an allow-all seccomp filter (what `sysperf ab --switch seccomp syscall` plants);
# and with no filter but the raw_syscalls:sys_enter tracepoint on, which sends every call
# through the same slow entry path (syscall_trace_enter) for a reason other than seccomp.
# Prints ns per call and the CPU time per call of the entry functions, and the sampled
# instruction in x64_sys_call (the dispatch) that took the most samples.
#
# Why: `sysperf explain` of the seccomp switch finds 50-67% of the change in
# syscall_trace_enter and what it calls, and most of the rest in x64_sys_call's own time, which
# only grows when the slow path ran. If the tracepoint run shows the same growth in
# x64_sys_call, that part is a cost of taking the slow entry path, not of the filter's
# functions, and explain is right to put it outside them.
#
#   scripts/slow-entry-path.sh [CALLS]   (default 20,000,000; root, needs gcc and perf)
# Timed: runs under the machine's timing lock, pinned to CPU 1.
set -euo pipefail
calls=${1:-20000000}
command -v perf >/dev/null || { echo "slow-entry-path.sh needs perf (Debian: linux-perf)" >&2; exit 2; }
command -v gcc >/dev/null || { echo "slow-entry-path.sh needs gcc" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/sc.c" <<'EOF'
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
  long n = atol(argv[1]);
  if (argc > 2) { /* an allow-all filter, as sysperf's seccomp switch */
    struct sock_filter f[] = {{BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW}};
    struct sock_fprog p = {1, f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p)) {
      perror("seccomp");
      return 1;
    }
  }
  for (long i = 0; i < n; i++) syscall(SYS_getpid);
  return 0;
}
EOF
gcc -O2 -o "$dir/sc" "$dir/sc.c"
dispatch=$(awk '$3 == "x64_sys_call" {print $1; exit}' /proc/kallsyms)
printf '%-22s %9s  %s\n' "getpid loop" "ns/call" "CPU ns per call in: do_syscall_64, x64_sys_call, syscall_trace_enter and below (self); x64_sys_call's busiest instruction"
for how in plain seccomp tracepoint; do
  args=() events=(-e cpu-clock -F 4000)
  [ "$how" = seccomp ] && args=(filter)
  [ "$how" = tracepoint ] && events+=(-e raw_syscalls:sys_enter)
  # The wall time is taken inside the lock: waiting for it is not the loop's.
  exec 9>/tmp/sysperf-timing.lock
  flock 9
  # The loop alone (the tracepoint's run has it on, recorded by perf, as its only way to be on),
  # then profiled: the CPU figures split the profiled run's wall time by its samples.
  start=$(date +%s%N)
  if [ "$how" = tracepoint ]; then
    perf record -q -e raw_syscalls:sys_enter -o /dev/null taskset -c 1 "$dir/sc" "$calls" 2>/dev/null
  else
    taskset -c 1 "$dir/sc" "$calls" "${args[@]}"
  fi
  alone=$(($(date +%s%N) - start))
  start=$(date +%s%N)
  perf record -q "${events[@]}" -o "$dir/$how.data" taskset -c 1 "$dir/sc" "$calls" "${args[@]}" 2>/dev/null
  wall=$(($(date +%s%N) - start))
  flock -u 9
  read -r dsc x64 slow best held < <(perf script -i "$dir/$how.data" -F event,ip,sym 2>/dev/null |
    awk -v calls="$calls" -v wall="$wall" '
    $1 ~ /cpu-clock/ { n++; s[$3]++; if ($3 == "x64_sys_call") ip[$2]++ }
    END {
      slow = s["syscall_trace_enter"] + s["__secure_computing"] + s["__seccomp_filter"] + s["populate_seccomp_data"] \
        + s["perf_trace_sys_enter"] + s["perf_tp_event"] + s["perf_swevent_event"] + s["perf_trace_run_bpf_submit"] \
        + s["perf_tp_event_match"] + s["class_irqsave_constructor"] + s["task_init_private_helper_slot"]
      per = wall / calls / n  # ns of wall per call per sample: the samples split the loop wall time
      best = ""; for (k in ip) if (best == "" || ip[k] > ip[best]) best = k
      printf "%.1f %.1f %.1f %s %.1f\n", s["do_syscall_64"] * per, s["x64_sys_call"] * per, slow * per, best, ip[best] * per
    }')
  printf '%-22s %9.1f  %s, %s, %s; x64_sys_call+%d holds %s\n' "$how" \
    "$(echo "$alone / $calls" | bc -l)" "$dsc" "$x64" "$slow" $((16#$best - 16#$dispatch)) "$held"
done
echo "(ns/call: the loop's wall time per call, not profiled, with perf's start; CPU ns: the profiled run's wall time per call, split by its cpu-clock samples)"

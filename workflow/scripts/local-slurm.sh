#!/usr/bin/env bash
# Start (or stop) a single-node Slurm cluster on this machine, for testing `snakemake --profile slurm`
# against a real scheduler (tests/test_slurm.py, marker `slurm`; docs/slurm.md).
#
#   workflow/scripts/local-slurm.sh start    # install slurm-wlm + munge if missing, write the config,
#                                            # start munged, slurmctld, slurmd; wait until the node is idle
#   workflow/scripts/local-slurm.sh stop     # stop the daemons this script started (by their pid files)
#   workflow/scripts/local-slurm.sh status   # print what is running
#
# Requirements: root, Debian (or a derivative with apt and the `slurm-wlm`/`munge` packages), the
# distribution's package mirror for the first run. Exit status 3 means "cannot run here" (not root,
# not Debian, no apt, package install failed) — callers (tests, .ci/run) skip on it; any other
# non-zero status is a real failure.
#
# The cluster (Slurm 22.05 on Debian 12):
#   - one node, named after `hostname -s`, at 127.0.0.1, with this machine's CPUs and 90% of its memory;
#   - one partition `debug` (default), MaxTime=INFINITE;
#   - GPUs: the node advertises ONE fake GPU (`Gres=gpu:1`, gres.conf `Name=gpu File=/dev/null`: Slurm
#     needs a device file to count a gpu; /dev/null stands in), so that the workflow's real GPU requests (`--gpus=1` from the profile's `gpu: 1`) go
#     through sbatch unchanged. A job asking for more than one GPU is rejected by sbatch, which is
#     how the test proves that a packed group of training runs asks for 1 GPU and not 20. No CUDA
#     device exists, so the engine (numerics.device: auto) falls back to the CPU.
#   - no accounting daemon (AccountingStorageType=accounting_storage/none): the slurm executor plugin
#     must poll with `squeue` (profile entry `slurm-status-command: squeue`), which is reliable
#     because MinJobAge=300 keeps finished jobs visible to squeue for 5 minutes. Every finished job
#     is also appended to a job-completion log (JobCompType=jobcomp/filetxt, $STATE/jobcomp.log),
#     and slurmctld logs every submission ("_slurm_rpc_submit_batch_job"), which is what the test
#     counts. A Prolog ($STATE/prolog.sh) appends the GPUs Slurm allocated to each job
#     (SLURM_JOB_GPUS) to $STATE/jobgpus.log (without slurmdbd, GPU TRES are not recorded elsewhere).
#   - ProctrackType=proctrack/linuxproc and TaskPlugin=task/none: no cgroups needed (sandboxes, VMs).
#
# Files: /etc/slurm/slurm.conf and /etc/slurm/gres.conf (written only when absent or written earlier
# by this script — a line "# written by copyhead local-slurm.sh" marks them; an existing foreign
# config is never overwritten), state, logs and pid files under $LOCAL_SLURM_DIR
# (default /var/tmp/copyhead-slurm). Idempotent: `start` on a running cluster only re-checks it; `stop` also
# removes the config files it wrote.
set -euo pipefail

CMD=${1:-start}
STATE=${LOCAL_SLURM_DIR:-/var/tmp/copyhead-slurm}
ETC=/etc/slurm
MARK="# written by copyhead local-slurm.sh"
PARTITION=debug
WAIT_S=${LOCAL_SLURM_WAIT_S:-90}

say() { echo "[local-slurm] $*"; }
cannot() { echo "[local-slurm] CANNOT RUN HERE: $*" >&2; exit 3; }
die() { echo "[local-slurm] ERROR: $*" >&2; exit 1; }

pid_alive() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_one() {  # stop_one NAME PIDFILE
    local name=$1 pidfile=$2 pid
    if [[ -s $pidfile ]]; then
        pid=$(cat "$pidfile")
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid"
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
            if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
            say "stopped $name (pid $pid)"
        fi
        rm -f "$pidfile"
    fi
}

do_stop() {
    # Only the daemons whose pid files this script wrote; never by name.
    stop_one slurmd "$STATE/slurmd.pid"
    stop_one slurmctld "$STATE/slurmctld.pid"
    stop_one munged "$STATE/munged.pid"
    # and the config files this script wrote (marked): with a slurm.conf naming a controller that is gone,
    # every Slurm client (sinfo, scontrol, squeue; Snakemake's Slurm executor) waits ~9 s before it fails,
    # once per call: left behind, it slowed every later test run on this machine. A foreign config stays.
    local f
    for f in "$ETC/slurm.conf" "$ETC/gres.conf"; do
        if [[ -f $f ]] && grep -qF "$MARK" "$f"; then rm -f "$f"; say "removed $f (written by this script)"; fi
    done
}

do_status() {
    for d in munged slurmctld slurmd; do
        if pid_alive "$STATE/$d.pid"; then say "$d running (pid $(cat "$STATE/$d.pid"))"; else say "$d not running"; fi
    done
    if command -v sinfo >/dev/null && pid_alive "$STATE/slurmctld.pid"; then sinfo -N -o "%N %T %c %m %G" || true; fi
}

check_platform() {
    [[ $(id -u) -eq 0 ]] || cannot "needs root (installs packages, starts system daemons); running as $(id -un)"
    [[ -f /etc/debian_version ]] || cannot "needs Debian (or a derivative): /etc/debian_version not found"
    command -v apt-get >/dev/null || cannot "apt-get not found"
}

install_packages() {
    local missing=()
    for b in slurmctld slurmd sbatch munged; do command -v "$b" >/dev/null || missing+=("$b"); done
    if ((${#missing[@]})); then
        say "installing slurm-wlm and munge from the distribution (missing: ${missing[*]})"
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge; } \
            >"$STATE/apt.log" 2>&1 || cannot "apt-get install slurm-wlm munge failed (see $STATE/apt.log)"
    fi
    command -v slurmctld >/dev/null || cannot "slurmctld still missing after install"
}

write_if_ours() {  # write_if_ours PATH (content on stdin)
    local path=$1 tmp
    if [[ -e $path ]] && ! grep -qF "$MARK" "$path"; then
        die "$path exists and was not written by this script; refusing to overwrite a real cluster config"
    fi
    tmp=$(mktemp "$path.XXXX")
    cat >"$tmp"
    chmod 644 "$tmp"
    mv "$tmp" "$path"
}

write_config() {
    local host topo mem_mb
    host=$(hostname -s)
    # the node's real topology as slurmd sees it (CPUs, sockets, cores, threads), 90% of its memory
    topo=$(/usr/sbin/slurmd -C | head -1 | tr ' ' '\n' | grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' ')
    [[ -n $topo ]] || topo="CPUs=$(nproc)"
    mem_mb=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
    mkdir -p "$ETC" "$STATE/spool/ctld" "$STATE/spool/d"
    write_if_ours "$ETC/slurm.conf" <<EOF
$MARK — single-node test cluster, see workflow/scripts/local-slurm.sh
ClusterName=copyhead-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$STATE/spool/ctld
SlurmdSpoolDir=$STATE/spool/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmctldPort=6817
SlurmdPort=6818
# no cgroups: plain process tracking, no task binding
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# no slurmdbd: sacct is unavailable, jobs are polled with squeue; keep finished jobs visible 5 min
AccountingStorageType=accounting_storage/none
MinJobAge=300
# every finished job appended here (the test counts submissions from it and from the ctld log)
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE/jobcomp.log
# run as root on the node before each job: records the GPUs Slurm allocated to it ($STATE/jobgpus.log)
Prolog=$STATE/prolog.sh
MailProg=/bin/true
# consumable CPUs, memory and GPUs
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
ReturnToService=2
SchedulerType=sched/backfill
MpiDefault=none
NodeName=$host NodeAddr=127.0.0.1 ${topo}RealMemory=$mem_mb Gres=gpu:1 State=UNKNOWN
PartitionName=$PARTITION Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    cat >"$STATE/prolog.sh" <<'PROLOG'
#!/bin/sh
# Slurm Prolog (local-slurm.sh): one line per job with the GPUs allocated to it (SLURM_JOB_GPUS).
echo "JobId=$SLURM_JOB_ID JobGPUs=${SLURM_JOB_GPUS:-none}" >>"$(dirname "$0")/jobgpus.log"
exit 0
PROLOG
    chmod 755 "$STATE/prolog.sh"
    write_if_ours "$ETC/gres.conf" <<EOF
$MARK — one fake GPU (device file /dev/null): lets --gpus=1 requests schedule on a CPU-only node
NodeName=$host Name=gpu File=/dev/null
EOF
}

start_munge() {
    if pid_alive "$STATE/munged.pid"; then return; fi
    # a munged started by someone else (e.g. the package's init script) is used, and never stopped here
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then say "using the munged already running"; return; fi
    [[ -s /etc/munge/munge.key ]] || { mkdir -p /etc/munge; /usr/sbin/mungekey --create --force 2>/dev/null \
        || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null; }
    mkdir -p /run/munge /var/lib/munge /var/log/munge "$STATE/munge"
    chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge "$STATE/munge"
    chmod 700 /etc/munge; chmod 600 /etc/munge/munge.key; chmod 755 /run/munge
    runuser -u munge -- /usr/sbin/munged --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/munge/munged.log" \
        || die "munged failed to start (see $STATE/munge/munged.log)"
    # munged writes its pid file as the munge user; keep a root-owned copy for stop
    for _ in $(seq 1 50); do [[ -s $STATE/munge/munged.pid ]] && break; sleep 0.1; done
    cp "$STATE/munge/munged.pid" "$STATE/munged.pid"
    munge -n | unmunge >/dev/null || die "munge round trip failed"
    say "munged running (pid $(cat "$STATE/munged.pid"))"
}

start_daemons() {
    if ! pid_alive "$STATE/slurmctld.pid"; then
        /usr/sbin/slurmctld -c || die "slurmctld failed to start (see $STATE/slurmctld.log)"
    fi
    for _ in $(seq 1 50); do pid_alive "$STATE/slurmctld.pid" && break; sleep 0.2; done
    pid_alive "$STATE/slurmctld.pid" || die "slurmctld did not stay up (see $STATE/slurmctld.log)"
    say "slurmctld running (pid $(cat "$STATE/slurmctld.pid"))"
    if ! pid_alive "$STATE/slurmd.pid"; then
        /usr/sbin/slurmd || die "slurmd failed to start (see $STATE/slurmd.log)"
    fi
    for _ in $(seq 1 50); do pid_alive "$STATE/slurmd.pid" && break; sleep 0.2; done
    pid_alive "$STATE/slurmd.pid" || die "slurmd did not stay up (see $STATE/slurmd.log)"
    say "slurmd running (pid $(cat "$STATE/slurmd.pid"))"
}

wait_idle() {
    local host state
    host=$(hostname -s)
    for _ in $(seq 1 "$WAIT_S"); do
        for d in slurmctld slurmd; do
            pid_alive "$STATE/$d.pid" || die "$d exited (see $STATE/$d.log: $(tail -n 1 "$STATE/$d.log" 2>/dev/null))"
        done
        state=$(sinfo -h -n "$host" -o %T 2>/dev/null | head -1 || true)
        case $state in
            idle|mixed|allocated) say "node $host is $state; partition '$PARTITION' ready"; sinfo -N -o "%N %P %T %c %m %G"; return 0 ;;
            down*|drain*|fail*) scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true ;;
        esac
        sleep 1
    done
    tail -n 20 "$STATE/slurmctld.log" "$STATE/slurmd.log" >&2 || true
    die "node $host not idle after ${WAIT_S}s (last state: '${state:-none}')"
}

case $CMD in
    start)
        check_platform
        mkdir -p "$STATE"
        install_packages
        write_config
        start_munge
        start_daemons
        wait_idle
        say "stop with: $0 stop   (pid files in $STATE)"
        ;;
    stop) do_stop ;;
    status) do_status ;;
    check) check_platform; say "platform OK (root, Debian, apt-get)" ;;
    *) echo "usage: $0 start|stop|status|check" >&2; exit 2 ;;
esac

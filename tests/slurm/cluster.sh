# Sourced by the Slurm tests: a private one-node Slurm cluster on loopback.
#   cluster_start DIR   writes DIR/slurm.conf, starts munged, slurmctld, slurmd
#   cluster_stop        stops every daemon it started, by pid
#   cluster_sweep       kills what the cluster's jobs left behind (processes
#                       with this cluster's SLURM_CONF outside the caller's tree)
# Everything (munge key, sockets, state, spool, logs, pid files) lives in DIR;
# ports are picked free. Exports SLURM_CONF, so sbatch/squeue/... use it.

cluster_pids=()
cluster_dir=

cluster_log() { echo "[cluster] $*"; }

# A free TCP port on loopback (asks the kernel for one).
cluster_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

cluster_start() {
  local dir=$1 node cpus ctld_port slurmd_port
  cluster_dir=$dir
  node=$(hostname -s)
  cpus=$(nproc)
  mkdir -p "$dir"/{munge,state,spool,log,run}
  chmod 700 "$dir" "$dir/munge"
  ctld_port=$(cluster_free_port)
  slurmd_port=$(cluster_free_port)
  while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(cluster_free_port); done

  # MUNGE: a private key and socket.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  munged --foreground --force --key-file="$dir/munge/munge.key" \
    --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" \
    >>"$dir/log/munged.out" 2>&1 &
  cluster_pids+=($!)

  cat >"$dir/slurm.conf" <<CONF
# A one-node test cluster on loopback, written by tests/slurm/cluster.sh.
ClusterName=tandemtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
# Pending jobs are looked at every 2 s, so a requeued job (eligible again
# cred_expire seconds after its requeue) starts within seconds, not a minute.
SchedulerParameters=sched_interval=2
MailProg=/bin/true
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=10
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  export SLURM_CONF=$dir/slurm.conf

  local i
  for i in $(seq 50); do [ -S "$dir/munge/munge.socket" ] && break; sleep 0.1; done
  slurmctld -D -f "$dir/slurm.conf" >>"$dir/log/slurmctld.out" 2>&1 &
  cluster_pids+=($!)
  slurmd -D -f "$dir/slurm.conf" -N "$node" >>"$dir/log/slurmd.out" 2>&1 &
  cluster_pids+=($!)

  # Up when the node is idle.
  for i in $(seq 100); do
    if grep -qx idle <<<"$(sinfo -h -N -o '%T' 2>/dev/null)"; then
      cluster_log "up: node $node, $cpus CPUs, slurmctld :$ctld_port, slurmd :$slurmd_port"
      return 0
    fi
    sleep 0.3
  done
  cluster_log "did not come up in 30 s; logs:"
  tail -n 30 "$dir"/log/* >&2
  return 1
}

cluster_stop() {
  local pid i
  # Reverse order: slurmd, slurmctld, munged.
  for ((i = ${#cluster_pids[@]} - 1; i >= 0; i--)); do
    pid=${cluster_pids[i]}
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null; fi
    wait "$pid" 2>/dev/null
  done
  cluster_pids=()
}

# Job processes and slurmstepd are not the caller's children (slurmd detaches
# them), so cluster_stop cannot reach them by pid; after the jobs are
# cancelled none should be left, and this kills any that are, by pid: those
# whose environment names this cluster's slurm.conf and that are not the
# caller or its descendants.
cluster_sweep() {
  [ -n "$cluster_dir" ] || return 0
  python3 - "$cluster_dir/slurm.conf" $$ <<'PY'
import os, signal, sys
conf, caller = sys.argv[1], int(sys.argv[2])
me = os.getpid()
def parent(pid):
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0
def in_callers_tree(pid):
    while pid > 1:
        if pid in (caller, me):
            return True
        pid = parent(pid)
    return False
marker = f"SLURM_CONF={conf}".encode()
for d in os.listdir("/proc"):
    if not d.isdigit():
        continue
    pid = int(d)
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        continue
    if marker in env and not in_callers_tree(pid):
        print(f"[cluster] killing leftover pid {pid}: {cmd[:100]}")
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
PY
}

# Sourced by the Slurm tests: a private Slurm cluster on this machine.
#   cluster_start DIR [NODES]
#                       writes DIR/slurm.conf, starts munged, slurmctld and a
#                       slurmd per node. One node (the default) runs on
#                       loopback. Two nodes are two hosts: each slurmd in its
#                       own network and UTS namespace (hostnames node1, node2),
#                       joined to slurmctld's bridge by a veth pair on a private
#                       /24 picked unused, so MPI between them crosses a link
#                       (cluster_link_bytes counts it), not shared memory.
#   cluster_kill_node N, cluster_start_slurmd N
#                       two nodes: node N lost (everything on it killed), and
#                       its slurmd started again
#   cluster_stop        stops every daemon it started, by pid, and removes the
#                       namespaces, links and bridge it made
#   cluster_sweep       kills what the cluster's jobs left behind (processes
#                       with this cluster's SLURM_CONF outside the caller's tree)
# Everything (munge key, sockets, state, spool, logs, pid files) lives in DIR;
# ports are picked free. Exports SLURM_CONF, so sbatch/squeue/... use it.

cluster_pids=()
cluster_dir=
cluster_net=      # two nodes: the subnet's first three octets, e.g. 10.213.57
cluster_tag=      # two nodes: prefix of the links and namespaces made
cluster_nodes=()

cluster_log() { echo "[cluster] $*"; }

# A free TCP port on loopback (asks the kernel for one).
cluster_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Two hosts' network: a bridge with slurmctld's address .254, and per node a
# namespace holding one end of a veth pair (address .N) whose other end is on
# the bridge. The subnet is one no interface here uses.
cluster_make_network() {
  local n i
  for _ in $(seq 20); do
    n=$((RANDOM % 250 + 1))
    ip -4 addr | grep -q "inet 10\.213\.$n\." || break
  done
  cluster_net=10.213.$n cluster_tag=tdm$n
  ip link add "${cluster_tag}br" type bridge || return 1
  ip addr add "$cluster_net.254/24" dev "${cluster_tag}br" && ip link set "${cluster_tag}br" up || return 1
  for i in 1 2; do
    ip netns add "${cluster_tag}-node$i" || return 1
    ip link add "${cluster_tag}n${i}h" type veth peer name "${cluster_tag}n${i}" || return 1
    ip link set "${cluster_tag}n${i}h" master "${cluster_tag}br" up
    ip link set "${cluster_tag}n${i}" netns "${cluster_tag}-node$i"
    ip -n "${cluster_tag}-node$i" addr add "$cluster_net.$i/24" dev "${cluster_tag}n${i}"
    ip -n "${cluster_tag}-node$i" link set "${cluster_tag}n${i}" up
    ip -n "${cluster_tag}-node$i" link set lo up
  done
}

cluster_remove_network() {
  [ -n "$cluster_tag" ] || return 0
  local i
  for i in 1 2; do
    ip netns del "${cluster_tag}-node$i" 2>/dev/null
    ip link del "${cluster_tag}n${i}h" 2>/dev/null
  done
  ip link del "${cluster_tag}br" 2>/dev/null
  cluster_tag=
}

# Bytes node N sent and received over its link (both directions summed).
cluster_link_bytes() {
  local dev=/sys/class/net/${cluster_tag}n${1}h/statistics
  echo $(($(cat "$dev/rx_bytes") + $(cat "$dev/tx_bytes")))
}

# Two nodes: node N's slurmd in its host's namespaces (again after
# cluster_kill_node, as a rebooted node). nsenter rather than `ip netns exec`,
# which would mount a /sys without the cgroup tree slurmd reads.
cluster_start_slurmd() {
  local i=$1 dir=$cluster_dir
  ip link set "${cluster_tag}n${i}h" up
  nsenter --net="/run/netns/${cluster_tag}-node$i" unshare --uts --mount --propagation private \
    sh -c "hostname node$i && mount --bind '$dir/tmp-node$i' '$dir/nodetmp' &&
           exec slurmd -D -f '$dir/slurm.conf' -N node$i" >>"$dir/log/slurmd-node$i.out" 2>&1 &
  cluster_pids+=($!)
}

# Two nodes: node N lost at once, as in a power cut: its link goes down, then
# SIGKILL to everything in its network namespace (its slurmd, slurmstepd and
# the job's tasks there). The link goes first because a node without power
# sends nothing: killed with the link up, its kernel would close the job's
# sockets (FIN, RST) and its peers would see a closed connection, not silence.
cluster_kill_node() {
  local pids
  ip link set "${cluster_tag}n${1}h" down
  pids=$(ip netns pids "${cluster_tag}-node$1" | tr '\n' ' ')
  # shellcheck disable=SC2086
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  for _ in $(seq 50); do [ -z "$(ip netns pids "${cluster_tag}-node$1")" ] && break; sleep 0.1; done
}

cluster_start() {
  local dir=$1 nodes=${2:-1} node cpus ctld_port slurmd_port ctld_addr
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

  # Per node: its name and address, and where its slurmd keeps its pid and log.
  local node_lines partition_nodes per_node_files=
  if [ "$nodes" = 2 ]; then
    cluster_make_network || { cluster_log "could not make the two hosts' network"; return 1; }
    ctld_addr=$cluster_net.254
    cluster_nodes=(node1 node2)
    node_lines="NodeName=node1 NodeAddr=$cluster_net.1 CPUs=$cpus State=UNKNOWN
NodeName=node2 NodeAddr=$cluster_net.2 CPUs=$cpus State=UNKNOWN"
    partition_nodes=node[1-2]
    # Each host its own slurmd pid file, log, and TmpFS (mounted per host
    # below): PMIx makes same-named directories there on every node of a step.
    per_node_files="TmpFS=$dir/nodetmp
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmdLogFile=$dir/log/slurmd-%n.log"
    mkdir -p "$dir"/{nodetmp,tmp-node1,tmp-node2}
  else
    ctld_addr=127.0.0.1
    cluster_nodes=("$node")
    node_lines="NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN"
    partition_nodes=$node
    per_node_files="SlurmdPidFile=$dir/run/slurmd.pid
SlurmdLogFile=$dir/log/slurmd.log"
  fi

  cat >"$dir/slurm.conf" <<CONF
# A $nodes-node test cluster, written by tests/slurm/cluster.sh.
ClusterName=tandemtest
SlurmctldHost=$node($ctld_addr)
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
$per_node_files
SlurmctldLogFile=$dir/log/slurmctld.log
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
$node_lines
PartitionName=test Nodes=$partition_nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  export SLURM_CONF=$dir/slurm.conf

  local i
  for i in $(seq 50); do [ -S "$dir/munge/munge.socket" ] && break; sleep 0.1; done
  slurmctld -D -f "$dir/slurm.conf" >>"$dir/log/slurmctld.out" 2>&1 &
  cluster_pids+=($!)
  if [ "$nodes" = 2 ]; then
    cluster_start_slurmd 1
    cluster_start_slurmd 2
  else
    slurmd -D -f "$dir/slurm.conf" -N "$node" >>"$dir/log/slurmd.out" 2>&1 &
    cluster_pids+=($!)
  fi

  # Up when every node is idle.
  for i in $(seq 100); do
    if [ "$(sinfo -h -N -o '%T' 2>/dev/null | grep -cx idle)" = "$nodes" ]; then
      cluster_log "up: $nodes node(s) ${cluster_nodes[*]}, $cpus CPUs each, slurmctld $ctld_addr:$ctld_port," \
        "slurmd :$slurmd_port"
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
  cluster_remove_network
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

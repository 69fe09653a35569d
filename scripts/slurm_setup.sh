#!/usr/bin/env bash
# Sets up a single-node Slurm on this machine for air's srun launcher (issue #27 item 3,
# IMPL-SLURM-1): slurm-wlm and munge from Debian, a munge key, /etc/slurm/slurm.conf naming this
# host (`hostname -s`, CPUs from nproc) as the one node of partition `air`, munged, slurmctld and
# slurmd; then it waits until `sinfo` shows the node idle and proves `srun -N1 -n1 true`.
# Process tracking: proctrack/cgroup when the cgroup check below passes (cgroup v2 mounted at
# /sys/fs/cgroup, or the v1 freezer hierarchy), else proctrack/linuxproc, and it says why.
# Also writes .remote/slurm-hosts.yaml naming `local-slurm` (this checkout's venv as the python).
# Needs root (or passwordless sudo): it installs packages and starts daemons. Safe to run again:
# it only does what is missing and restarts the daemons when slurm.conf changed. Fails loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DIR=${AIR_REMOTE_DIR:-$ROOT/.remote}
PY=${PYTHON:-python3}
[ ! -x .venv/bin/python ] || PY=$ROOT/.venv/bin/python

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  sudo -n true 2>/dev/null || { echo "slurm_setup: needs root or passwordless sudo" >&2; exit 1; }
  SUDO="sudo -n"
fi
fail() { echo "slurm_setup: $*" >&2; exit 1; }

need_apt=()
command -v slurmctld >/dev/null 2>&1 || [ -x /usr/sbin/slurmctld ] || need_apt+=(slurm-wlm)
[ -x /usr/sbin/munged ] || need_apt+=(munge)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "slurm_setup: installing ${need_apt[*]} with apt-get" >&2
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    "${need_apt[@]}" >/dev/null
fi

# munge: a key of its own (the package may have made one), then the daemon as user munge
if ! $SUDO test -s /etc/munge/munge.key; then
  $SUDO install -d -m 700 -o munge -g munge /etc/munge
  $SUDO dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
$SUDO chown munge:munge /etc/munge/munge.key
$SUDO chmod 400 /etc/munge/munge.key
$SUDO install -d -m 755 -o munge -g munge /run/munge
$SUDO install -d -m 700 -o munge -g munge /var/lib/munge /var/log/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  $SUDO setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n | unmunge >/dev/null || fail "munged does not answer (see /var/log/munge/munged.log)"
fi

NODE=$(hostname -s)
CPUS=$(nproc)
# process tracking by cgroup, if this machine lets Slurm use one: v2 at /sys/fs/cgroup (pure
# unified mode, what cgroup/v2 needs) or the v1 freezer hierarchy (what proctrack/cgroup uses on v1)
TRACK=proctrack/cgroup
CGPLUGIN=""
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
  CGPLUGIN=cgroup/v2
elif [ -d /sys/fs/cgroup/freezer ] && $SUDO mkdir -p /sys/fs/cgroup/freezer/air-slurm-probe \
  && $SUDO rmdir /sys/fs/cgroup/freezer/air-slurm-probe; then
  CGPLUGIN=cgroup/v1
else
  TRACK=proctrack/linuxproc
  echo "slurm_setup: no usable cgroup (no cgroup2 at /sys/fs/cgroup, no writable v1 freezer):" \
    "tracking steps with proctrack/linuxproc (the parent-pid tree; a setsid escapee is found" \
    "by air's marker sweep instead)" >&2
fi

$SUDO install -d -m 755 /etc/slurm
$SUDO install -d -m 755 -o slurm -g slurm /var/spool/slurmctld /var/log/slurm /run/slurm
$SUDO install -d -m 755 /var/spool/slurmd
conf=$(mktemp)
cat >"$conf" <<EOF
# written by air's scripts/slurm_setup.sh: one node, this host
ClusterName=air
SlurmctldHost=$NODE
SlurmUser=slurm
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=$TRACK
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
# Slurm's kill window: SIGTERM to a step, KillWait seconds, then SIGKILL
KillWait=2
InactiveLimit=0
MinJobAge=30
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=air Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
cgconf=$(mktemp)
if [ -n "$CGPLUGIN" ]; then
  printf 'CgroupPlugin=%s\nCgroupAutomount=yes\nConstrainCores=no\nConstrainRAMSpace=no\n' \
    "$CGPLUGIN" >"$cgconf"
fi
changed=0
for pair in "$conf:/etc/slurm/slurm.conf" "$cgconf:/etc/slurm/cgroup.conf"; do
  src=${pair%%:*}
  dst=${pair#*:}
  if ! $SUDO cmp -s "$src" "$dst"; then
    $SUDO install -m 644 "$src" "$dst"
    changed=1
  fi
done
rm -f "$conf" "$cgconf"
[ -s /etc/slurm/cgroup.conf ] || $SUDO rm -f /etc/slurm/cgroup.conf

alive() { [ -f "$1" ] && $SUDO kill -0 "$(cat "$1")" 2>/dev/null; }
stop() {
  if alive "$1"; then
    $SUDO kill "$(cat "$1")"
    for _ in $(seq 100); do alive "$1" || break; sleep 0.1; done
  fi
}
if [ $changed -eq 1 ]; then
  stop /run/slurm/slurmd.pid
  stop /run/slurm/slurmctld.pid
fi
if ! alive /run/slurm/slurmctld.pid; then
  $SUDO /usr/sbin/slurmctld || fail "slurmctld did not start (see /var/log/slurm/slurmctld.log)"
fi
if ! alive /run/slurm/slurmd.pid; then
  $SUDO /usr/sbin/slurmd || fail "slurmd did not start (see /var/log/slurm/slurmd.log)"
fi

state=""
for _ in $(seq 150); do
  state=$(sinfo -h -n "$NODE" -o %t 2>/dev/null || true)
  case $state in
    idle | mix | alloc) break ;;
    down* | drain* | drng*) $SUDO scontrol update nodename="$NODE" state=resume 2>/dev/null || true ;;
  esac
  sleep 0.2
done
case $state in
  idle | mix | alloc) ;;
  *) fail "node $NODE is '$state', not idle (see /var/log/slurm/slurmd.log and slurmctld.log)" ;;
esac
timeout 60 srun -N1 -n1 --job-name air-setup-check true \
  || fail "srun -N1 -n1 true failed (see /var/log/slurm/slurmd.log)"

mkdir -p "$DIR"
mkdir -p "$DIR/slurm-work"
# a file the tests read while another pytest worker runs this script: replaced by a rename
# (never seen truncated), and only when its text changes
replace_file() {
  local tmp
  tmp=$(mktemp "$1.XXXXXX")
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else chmod 644 "$tmp" && mv -f "$tmp" "$1"; fi
}
replace_file "$DIR/slurm-hosts.yaml" <<EOF
# written by scripts/slurm_setup.sh: this machine's single-node Slurm as a host
hosts:
  local-slurm:
    launcher: slurm
    host: $NODE
    python: $PY
    workdir: $DIR/slurm-work
    partition: air
EOF
echo "slurm_setup: node $NODE ($CPUS CPUs, $TRACK) is $state; srun works" >&2

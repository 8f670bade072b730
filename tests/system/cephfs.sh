#!/usr/bin/env bash
# A small CephFS cluster started by the project, entirely in user space (no systemd, no kernel module).
#
#   cephfs.sh up DIR [N_OSDS]          mon, mgr, N OSDs (default 4) on BlueStore files, MDS, ceph-fuse at DIR/mnt;
#                                      prints the mount point as its last line
#   cephfs.sh down DIR [--purge]       unmounts and stops exactly the daemons of DIR (their pid files, command
#                                      lines checked); --purge also removes DIR (BlueStore files never shrink)
#   cephfs.sh slow DIR OSD MIBPS|off   throttles OSD's reads and writes to MIBPS MiB/s (cgroup v1 blkio), as a
#                                      failing disk would; off lifts it
#
# Data pools besides the default one (cephfs_data): cephfs_osdK holds its objects on OSD K only (a file or
# directory whose layout names it is pinned there, like `lfs setstripe -i K -c 1`), cephfs_not_osdK on every
# OSD but K (like an OST pool without a bad OST). Clients: `ceph -c DIR/ceph.conf ...` or CEPH_CONF=DIR/ceph.conf.
# Ports: the mon takes the first free one of the first 100 of CEPHFS_PORTS (default 17000-17999), the other
# daemons bind above them: never Slurm's 6817, nor Ceph's defaults (6789, 6800-7300) another cluster may hold.
# What we learned starting Ceph here: ../../../shared/notes/components.md (CephFS section).
set -euo pipefail

usage() { sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "cephfs.sh: $*" >&2; exit 1; }

DAEMON_TIMEOUT=${CEPHFS_TIMEOUT:-120}   # seconds for any one step of the bring-up (a loaded CI machine)
BLOCK_SIZE=${CEPHFS_OSD_BYTES:-6442450944}   # each OSD's sparse BlueStore file

conf_of() { echo "$1/ceph.conf"; }
ceph_() { timeout 60 ceph -c "$CONF" "$@"; }   # without a mgr some queries hang: never wait forever

free_port() {   # the first port of the range no local socket uses (/proc/net/tcp*: hex local ports)
  local lo=$1 hi=$2 p line local_addr
  declare -A used=()
  while read -r _ local_addr _; do
    [[ $local_addr == *:* ]] && used[$((16#${local_addr##*:}))]=1
  done < <(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  for ((p = lo; p <= hi; p++)); do
    [ -n "${used[$p]:-}" ] || { echo "$p"; return; }
  done
  die "no free port in $lo-$hi (set CEPHFS_PORTS=LO-HI)"
}

write_conf() {   # DIR PORT LO HI
  local dir=$1 port=$2 lo=$3 hi=$4 fsid
  fsid=$(cat /proc/sys/kernel/random/uuid)
  cat >"$dir/ceph.conf" <<EOF
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$port]
public_network = 127.0.0.0/8
ms_bind_msgr1 = false
ms_bind_msgr2 = true
ms_bind_port_min = $lo
ms_bind_port_max = $hi
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
run_dir = $dir/run
log_file = $dir/log/\$name.log
admin_socket = $dir/run/\$name.asok
crash_dir = $dir/crash
# one replica: a test cluster on one disk; no rebalancing when an OSD stops
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_osd_down_out_interval = 0
mon_warn_on_osd_down_out_interval_zero = false
mon_warn_on_pool_no_redundancy = false
mon_warn_on_insecure_global_id_reclaim_allowed = false
osd_pool_default_pg_autoscale_mode = off
# every mutating mon command would wait ~1 s for paxos otherwise
paxos_propose_interval = 0.05
# the host file system is shared: do not stop below 5 % free
mon_data_avail_warn = 2
mon_data_avail_crit = 1
osd_crush_update_on_start = false

[mon]
pid_file = $dir/run/\$name.pid
mon_data = $dir/\$name

[mgr]
pid_file = $dir/run/\$name.pid
mgr_data = $dir/\$name

[osd]
pid_file = $dir/run/\$name.pid
osd_data = $dir/\$name
osd_objectstore = bluestore
bluestore_block_create = true
bluestore_block_size = $BLOCK_SIZE
bluestore_fsck_on_mkfs = false
bluestore_fsck_on_mount = false
# modest memory: osd_memory_target below 896 MiB is ignored, so fix the cache instead of autotuning it
bluestore_cache_autotune = false
bluestore_cache_size = 134217728
osd_op_num_shards = 2
osd_op_num_threads_per_shard = 1

[mds]
pid_file = $dir/run/\$name.pid
mds_data = $dir/\$name
mds_cache_memory_limit = 134217728

[client]
# the CLI and ceph-fuse would share client.admin.asok otherwise
admin_socket = $dir/run/\$name.\$pid.asok
log_file = $dir/log/\$name.\$pid.log
# ceph-fuse caches file data in its own memory, which drop_caches does not reach: a small cache keeps
# reads after a drop going to the OSDs, as with the kernel client (with 64 MiB a whole file re-read at
# 1 GB/s from a throttled OSD); writes stay buffered (256 MiB + fsync: ~1 s either way)
client_oc_size = 16777216
client_oc_max_dirty = 12582912
client_oc_target_dirty = 4194304
EOF
}

wait_for() {   # WHAT CMD...: poll CMD until it succeeds, at most DAEMON_TIMEOUT seconds
  local what=$1 deadline=$((SECONDS + DAEMON_TIMEOUT))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "timed out after ${DAEMON_TIMEOUT}s waiting for $what (logs: $DIR/log)"
    sleep 0.2
  done
}

osds_up() { [ "$(ceph_ osd stat -f json | python3 -c 'import json,sys; print(json.load(sys.stdin)["num_up_osds"])')" = "$1" ]; }
pgs_active() {
  ceph_ pg stat -f json | python3 -c '
import json, sys
d = json.load(sys.stdin)
d = d.get("pg_summary", d)
states = {s["name"]: s["num"] for s in d.get("num_pg_by_state", [])}
total = d.get("num_pgs", 0)
sys.exit(0 if total and states.get("active+clean", 0) == total else 1)'
}
mds_active() { ceph_ mds stat | grep -q "up:active"; }

crush_and_pools() {   # N: one host bucket per OSD under root default; pinned and excluding pools
  local n=$1 i j
  {
    for ((i = 0; i < n; i++)); do
      echo "osd crush add-bucket host$i host"
      echo "osd crush move host$i root=default"
      echo "osd crush add osd.$i 1.0 root=default host=host$i"
    done
    for ((i = 0; i < n; i++)); do
      echo "osd crush add-bucket only-osd$i root"
      echo "osd crush link host$i root=only-osd$i"
      echo "osd crush rule create-replicated only-osd$i only-osd$i host"
      echo "osd crush add-bucket not-osd$i root"
      for ((j = 0; j < n; j++)); do
        ((j == i)) || echo "osd crush link host$j root=not-osd$i"
      done
      echo "osd crush rule create-replicated not-osd$i not-osd$i host"
    done
    echo "osd pool create cephfs_metadata 8 8"
    echo "osd pool create cephfs_data 16 16"
    echo "fs new cephfs cephfs_metadata cephfs_data"
    for ((i = 0; i < n; i++)); do
      echo "osd pool create cephfs_osd$i 8 8 replicated only-osd$i"
      echo "osd pool create cephfs_not_osd$i 16 16 replicated not-osd$i"
      echo "fs add_data_pool cephfs cephfs_osd$i"
      echo "fs add_data_pool cephfs cephfs_not_osd$i"
    done
  } | ceph_ >"$DIR/log/setup.out" 2>&1 || die "cluster set-up commands failed (see $DIR/log/setup.out)"
}

up() {
  local n=${1:-4} lo hi port i uuid
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "N_OSDS must be a positive integer, got '$n'"
  [ -e "$DIR/run/mon.a.pid" ] && die "$DIR already holds a cluster (cephfs.sh down $DIR first)"
  for c in ceph ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse monmaptool; do
    command -v "$c" >/dev/null || die "'$c' not found: bash tests/system/install-components.sh (as root)"
  done
  IFS=- read -r lo hi <<<"${CEPHFS_PORTS:-17000-17999}"
  mkdir -p "$DIR"/{run,log,crash,mnt,mon.a,mgr.x,mds.a}
  # the mon port is chosen and taken under a host-wide lock: two clusters starting at once differ
  exec 9>/tmp/ioadvisor-cephfs-ports.lock
  flock 9
  ((hi - lo >= 200)) || die "CEPHFS_PORTS needs at least 200 ports, got $lo-$hi"
  port=$(free_port "$lo" $((lo + 99)))   # mons in the first 100, the other daemons above: they never
  write_conf "$DIR" "$port" $((lo + 100)) "$hi"   # take a port another cluster's mon is about to bind
  CONF=$(conf_of "$DIR")
  monmaptool --create --fsid "$(awk '/^fsid/ {print $3}' "$CONF")" --addv a "[v2:127.0.0.1:$port]" \
    "$DIR/monmap" >/dev/null
  ceph-mon -c "$CONF" -i a --mkfs --monmap "$DIR/monmap" >"$DIR/log/mkfs.out" 2>&1 \
    || die "ceph-mon --mkfs failed (see $DIR/log/mkfs.out)"
  ceph-mon -c "$CONF" -i a || die "ceph-mon did not start (see $DIR/log/mon.a.log)"
  wait_for "the mon on port $port" ceph_ mon stat
  flock -u 9
  ceph-mgr -c "$CONF" -i x || die "ceph-mgr did not start (see $DIR/log/mgr.x.log)"
  for ((i = 0; i < n; i++)); do   # mkfs of all OSDs in parallel: each takes ~1 s of CPU
    uuid=$(cat /proc/sys/kernel/random/uuid)
    [ "$(ceph_ osd new "$uuid")" = "$i" ] || die "ceph osd new did not give id $i"
    mkdir -p "$DIR/osd.$i"
    (ceph-osd -c "$CONF" -i "$i" --mkfs --osd-uuid "$uuid" && ceph-osd -c "$CONF" -i "$i") \
      >"$DIR/log/osd.$i.start.out" 2>&1 &
  done
  wait || die "an OSD did not start (see $DIR/log/osd.*)"
  crush_and_pools "$n"
  wait_for "$n OSDs up" osds_up "$n"
  ceph-mds -c "$CONF" -i a >"$DIR/log/mds.a.start.out" 2>&1 || die "ceph-mds did not start (see $DIR/log/mds.a.log)"
  wait_for "placement groups active+clean" pgs_active
  wait_for "the MDS active" mds_active
  ceph-fuse -c "$CONF" --pid-file "$DIR/run/client.fuse.pid" --client_fs cephfs "$DIR/mnt" \
    >"$DIR/log/fuse.out" 2>&1 || die "ceph-fuse mount failed (see $DIR/log/fuse.out)"
  wait_for "the mount at $DIR/mnt" mountpoint -q "$DIR/mnt"
  echo "$DIR/mnt"
}

ours() {   # PID: a live process of this cluster (its command line names our ceph.conf or mount)
  local pid=$1 state
  [ -r "/proc/$pid/cmdline" ] || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ "$state" != Z ] && [ "$state" != X ] || return 1   # daemonised and stopped: a zombie until reaped
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$DIR/"
}

stop_pids() {   # PIDFILE...: TERM to all at once, KILL what is left after 10 s
  local f pid pids=()
  for f in "$@"; do
    [ -e "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null) || true
    if [[ $pid =~ ^[0-9]+$ ]] && ours "$pid"; then kill -TERM "$pid" 2>/dev/null && pids+=("$pid"); fi
    rm -f "$f"
  done
  for _ in $(seq 100); do
    local alive=0
    for pid in "${pids[@]}"; do ! ours "$pid" || alive=1; done
    ((alive)) || return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do ! ours "$pid" || kill -KILL "$pid" 2>/dev/null || true; done
}

down() {
  local purge=${1:-} f
  [ -z "$purge" ] || [ "$purge" = --purge ] || usage
  [ -d "$DIR" ] || die "$DIR does not exist"
  if mountpoint -q "$DIR/mnt" 2>/dev/null; then
    fusermount3 -u "$DIR/mnt" 2>/dev/null || umount "$DIR/mnt" 2>/dev/null || umount -l "$DIR/mnt" || true
  fi
  stop_pids "$DIR/run/client.fuse.pid"
  stop_pids "$DIR"/run/mds.*.pid "$DIR"/run/osd.*.pid "$DIR"/run/mgr.*.pid "$DIR"/run/mon.*.pid
  for f in "$DIR"/run/osd.*.blkio; do   # throttles of `slow`
    [ -e "$f" ] && rmdir "$(cat "$f")" 2>/dev/null; rm -f "$f"
  done
  if [ "$purge" = --purge ]; then rm -rf "$DIR"; fi
}

disk_of() {   # PATH -> MAJ:MIN of the whole disk holding it (a partition's parent)
  local dev sys
  dev=$(stat -c '%Hd:%Ld' "$1")
  sys=$(readlink -f "/sys/dev/block/$dev") || die "$1 is not on a block device ($dev): cannot throttle"
  [ -e "$sys/partition" ] && sys=$(dirname "$sys")
  cat "$sys/dev"
}

slow() {
  local osd=${1:-} rate=${2:-} pid cg blkio=/sys/fs/cgroup/blkio bps dev
  [[ $osd =~ ^[0-9]+$ ]] && [ -n "$rate" ] || usage
  pid=$(cat "$DIR/run/osd.$osd.pid" 2>/dev/null) && ours "$pid" || die "osd.$osd of $DIR is not running"
  [ -e "$blkio/blkio.throttle.write_bps_device" ] || die "no cgroup v1 blkio controller at $blkio: cannot throttle"
  cg="$blkio/ioadvisor-ceph-$(echo -n "$DIR" | md5sum | cut -c1-10)-osd$osd"
  if [ "$rate" = off ]; then
    [ -d "$cg" ] || return 0
    for t in $(cat "$cg/tasks"); do echo "$t" >"$blkio/tasks" 2>/dev/null || true; done
    rmdir "$cg"; rm -f "$DIR/run/osd.$osd.blkio"
    return 0
  fi
  [[ $rate =~ ^[0-9]+$ ]] && ((rate > 0)) || die "MIBPS must be a positive integer or 'off', got '$rate'"
  dev=$(disk_of "$DIR/osd.$osd/block")
  bps=$((rate * 1048576))
  mkdir -p "$cg"
  echo "$cg" >"$DIR/run/osd.$osd.blkio"
  echo "$dev $bps" >"$cg/blkio.throttle.write_bps_device"
  echo "$dev $bps" >"$cg/blkio.throttle.read_bps_device"
  # every thread of the OSD (BlueStore writes with direct I/O from its own threads, throttled per bio)
  for t in /proc/"$pid"/task/*; do echo "${t##*/}" >"$cg/tasks"; done
}

[ $# -ge 2 ] || usage
cmd=$1
DIR=$(realpath -m "$2")
shift 2
CONF=$(conf_of "$DIR")
case $cmd in
  up) [ $# -le 1 ] || usage; up "$@" ;;
  down) [ $# -le 1 ] || usage; down "$@" ;;
  slow) [ $# -eq 2 ] || usage; slow "$@" ;;
  *) usage ;;
esac

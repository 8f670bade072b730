#!/usr/bin/env bash
# Installs the real system components the tests start (Debian packages), when run as root.
# Idempotent: does nothing when everything is present. Not root: prints what is missing.
set -uo pipefail
pkgs=(slurmctld slurmd slurm-client munge glusterfs-server glusterfs-client fuse3 chromium fio procps python3-venv
      ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph-common attr)
# python3-venv: the Slurm hook venv from /usr/bin/python3; ceph-*: the CephFS cluster of tests/system/cephfs.sh
# (attr: getfattr/setfattr for its layouts)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "not root: tests needing ${missing[*]} will skip (run 'sudo make system-deps' to enable them)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v lock)" ]; then apt-get update -qq; fi
apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 "${missing[@]}" >/dev/null \
  || { apt-get update -qq && apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 "${missing[@]}" >/dev/null; }

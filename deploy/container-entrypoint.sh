#!/bin/sh
# The container image's `dock-notify` command: its entrypoint, and what `docker exec … dock-notify`
# runs. Dock Notify itself never runs as root:
# - started as root (the image's default), it first gives DATA_DIR to the `node` user wherever
#   something in it belongs to someone else (a host folder bind-mounted at /data is usually root's),
#   then runs Dock Notify as `node` (uid 1000) with no capabilities and no way to gain any;
# - started as another user (`--user 1000`, Kubernetes' runAsUser), it runs as that user, and stops
#   with the fix when DATA_DIR is a folder that user cannot write.
# See docs/deployment.md#bind-mounts-and-ownership.
set -eu

app=/app/bin/dock-notify.js
data_dir=${DATA_DIR:-/data}

if [ "$(id -u)" = 0 ]; then
  uid=$(id -u node)
  gid=$(id -g node)
  # A symbolic link is given itself, never what it points at (-h): whoever wrote in DATA_DIR
  # must not get root to hand them /etc/passwd. What cannot be changed (a read-only or
  # root-squashed mount, a container without CAP_CHOWN) is said once, with the command that fixes
  # it on the host.
  if ! { mkdir -p "$data_dir" &&
    find "$data_dir" \! \( -user "$uid" -group "$gid" \) -exec chown -h "$uid:$gid" {} + &&
    case $(stat -c %A "$data_dir") in ?rwx*) ;; *) chmod u+rwx "$data_dir" ;; esac; }; then
    echo "dock-notify: cannot give DATA_DIR ($data_dir) to the node user (uid $uid, gid $gid)." \
      "Give it on the host: sudo chown -R $uid:$gid <the folder mounted at $data_dir>" >&2
    exit 2
  fi
  exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --no-new-privs node "$app" "$@"
fi

case "${1:-}" in
--help | -h | help | --version | -V) ;;
*)
  if [ -d "$data_dir" ] && { ! [ -w "$data_dir" ] || ! [ -x "$data_dir" ]; }; then
    echo "dock-notify: DATA_DIR ($data_dir) belongs to uid $(stat -c %u "$data_dir") and this container" \
      "runs as uid $(id -u), which cannot write it. Start the container as root (the image's default:" \
      "it gives the folder to uid 1000 and then runs as that user), or on the host:" \
      "sudo chown -R $(id -u):$(id -g) <the folder mounted at $data_dir>" >&2
    exit 2
  fi
  ;;
esac
exec node "$app" "$@"

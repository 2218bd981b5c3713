#!/usr/bin/env bash
# A throwaway PostgreSQL + pgvector server for the tests, from the pgserver wheel's
# binaries (`scripts/setup.sh --test` installs it into .venv-pg): it listens only on
# 127.0.0.1 (a free port) and on a socket in DIR, trusts every loopback connection,
# and trades durability for speed (fsync off).
#
#   scripts/pg-test-server.sh start DIR          initdb in DIR/data unless there, start,
#                                                create database quire with the vector
#                                                extension; print its URL, once it accepts
#   scripts/pg-test-server.sh createdb DIR NAME  another database, with vector; print its URL
#   scripts/pg-test-server.sh url DIR [NAME]     the URL of a database of the running server
#   scripts/pg-test-server.sh stop DIR           stop it now (immediate; no error if not running)
#
# Postgres refuses to run as root: as root, the server runs as the system user
# $QUIRE_PG_USER (quirepg, created if missing), which gets DIR. That user must be able
# to reach the wheel's files and DIR (no 0700 directory of another user above them).
# QUIRE_PG_BIN overrides where the binaries are.
set -euo pipefail

die() { echo "pg-test-server: $*" >&2; exit 1; }
usage() { die "usage: $0 start DIR | createdb DIR NAME | url DIR [NAME] | stop DIR"; }

repo="$(cd "$(dirname "$0")/.." && pwd)"
if [ -n "${QUIRE_PG_BIN:-}" ]; then
  bin="$QUIRE_PG_BIN"
else
  bin="$(ls -d "$repo"/.venv-pg/lib/python3*/site-packages/pgserver/pginstall/bin 2>/dev/null | head -n1 || true)"
fi
[ -n "$bin" ] && [ -x "$bin/postgres" ] ||
  die "PostgreSQL binaries missing (.venv-pg): run \`scripts/setup.sh --test\`, which installs the pgserver wheel there"

superuser=postgres
pguser="${QUIRE_PG_USER:-quirepg}"

[ $# -ge 2 ] || usage
cmd="$1"
dir="$2"
[ "$cmd" != start ] || mkdir -p "$dir"
[ -d "$dir" ] || { [ "$cmd" = stop ] && exit 0; die "$dir: no such directory"; }
dir="$(cd "$dir" && pwd)"
data="$dir/data"
log="$dir/postgres.log"

# Run a server-side command (initdb, pg_ctl) as the unprivileged user when root.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    if command -v runuser >/dev/null; then
      runuser -u "$pguser" -- "$@"
    else
      setpriv --reuid="$pguser" --regid="$pguser" --init-groups -- "$@"
    fi
  else
    "$@"
  fi
}

# The first directory of $1 and above that $pguser cannot traverse, if any.
blocked_dir() {
  local p="$1"
  while [ "$p" != / ] && [ -n "$p" ]; do
    as_pg test -x "$p" 2>/dev/null || { echo "$p"; return; }
    p="$(dirname "$p")"
  done
  as_pg test -x / 2>/dev/null || echo /
}

ensure_user() {
  [ "$(id -u)" = 0 ] || return 0
  local i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    getent passwd "$pguser" >/dev/null && break
    # Another start may be creating it at the same time (useradd then fails to lock
    # /etc/passwd, or finds the user there): look again.
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$pguser" 2>/dev/null || sleep 0.2
  done
  getent passwd "$pguser" >/dev/null || die "could not create the system user $pguser (useradd)"
  chown "$pguser:" "$dir"
  local b
  for b in "$bin/postgres" "$dir"; do
    if ! as_pg test -x "$b"; then
      b="$(blocked_dir "$(dirname "$b")")"
      die "postgres will not run as root, so it runs as $pguser, who cannot enter $b ($(stat -c '%A %U' "$b")): make that directory world-searchable (chmod o+x) or put the checkout or DIR elsewhere"
    fi
  done
  as_pg test -r "$bin/../share/postgresql/extension/vector.control" ||
    die "the user $pguser cannot read $bin/../share (installed with a restrictive umask?): chmod -R o+rX .venv-pg"
}

# The running server's port (line 4 of postmaster.pid), or nothing.
port() {
  [ -f "$data/postmaster.pid" ] && sed -n 4p "$data/postmaster.pid" || true
}

running() {
  [ -f "$data/postmaster.pid" ] && as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1
}

url() { echo "postgres://$superuser@127.0.0.1:$(port)/$1"; }

psql_() {
  PGOPTIONS="-c client_min_messages=warning" "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$(port)" -U "$superuser" "$@"
}

create_db() {
  local name="$1"
  [[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "database name '$name': use letters, digits and _"
  local exists
  exists="$(psql_ -d postgres -tA -c "SELECT 1 FROM pg_database WHERE datname = '$name'")"
  [ "$exists" = 1 ] || psql_ -d postgres -c "CREATE DATABASE \"$name\"" >/dev/null
  psql_ -d "$name" -c "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
}

start() {
  ensure_user
  if running; then
    url quire
    return
  fi
  # The server appends to its log, so the log is its user's.
  [ -f "$log" ] || as_pg touch "$log"
  if [ ! -f "$data/PG_VERSION" ]; then
    local ctype=C
    locale -a 2>/dev/null | grep -qix 'c.utf-\?8' && ctype=C.UTF-8
    as_pg "$bin/initdb" -D "$data" -U "$superuser" -A trust -E UTF8 --locale=C \
      --lc-ctype="$ctype" --no-sync --no-instructions >>"$log" 2>&1 ||
      { cat "$log" >&2; die "initdb failed in $data"; }
    cat >>"$data/postgresql.conf" <<EOF

# scripts/pg-test-server.sh: a throwaway test server
listen_addresses = '127.0.0.1'
unix_socket_directories = '${dir//\'/\'\'}'
fsync = off
synchronous_commit = off
full_page_writes = off
wal_level = minimal
max_wal_senders = 0
max_connections = 200
shared_buffers = 128MB
maintenance_work_mem = 256MB
logging_collector = off
include_if_exists = 'port.conf'
EOF
  fi
  # A free port: ask the kernel for one, and try again should another process take it
  # before postgres binds it.
  local try p
  for try in 1 2 3 4 5; do
    p="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    echo "port = $p" >"$data/port.conf"
    chmod 644 "$data/port.conf"
    if as_pg "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 start >/dev/null 2>&1; then
      break
    fi
    p=""
    grep -q "could not bind\|Address already in use" "$log" 2>/dev/null || break
  done
  [ -n "$p" ] || { tail -n 30 "$log" >&2; die "postgres did not start (log: $log)"; }
  # pg_ctl -w waits for "ready"; check the TCP listener answers too.
  local i
  for i in $(seq 100); do
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$p" -U "$superuser" -d postgres && break
    [ "$i" = 100 ] && { tail -n 30 "$log" >&2; die "postgres does not accept connections on 127.0.0.1:$p"; }
    sleep 0.1
  done
  create_db quire
  url quire
}

case "$cmd" in
  start)
    [ $# = 2 ] || usage
    start
    ;;
  createdb)
    [ $# = 3 ] || usage
    running || die "no server running in $dir"
    create_db "$3"
    url "$3"
    ;;
  url)
    [ $# -le 3 ] || usage
    running || die "no server running in $dir"
    url "${3:-quire}"
    ;;
  stop)
    [ $# = 2 ] || usage
    [ -f "$data/postmaster.pid" ] || exit 0
    if ! as_pg "$bin/pg_ctl" -D "$data" -m immediate -w -t 60 stop >/dev/null 2>&1 && running; then
      die "could not stop the server in $dir (log: $log)"
    fi
    ;;
  *) usage ;;
esac

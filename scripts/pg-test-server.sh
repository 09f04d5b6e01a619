#!/usr/bin/env bash
# A throw-away PostgreSQL server for the tests and the benchmark.
#
#   bash scripts/pg-test-server.sh start DIR   # create a cluster in DIR and start it
#   source DIR/env                             # exports DSH_TEST_POSTGRES_URL (and the TLS CA)
#   bash scripts/pg-test-server.sh stop DIR    # stop it and remove DIR
#
# `start` installs Debian's `postgresql` package when no server binaries are
# found (apt-get; needs root), creates the cluster in DIR (which must be empty
# or missing), owned by an unprivileged user when run as root (the system user
# `dshtest`, created if missing; PostgreSQL refuses to run as root), with TLS
# on (a self-signed certificate, DIR/server.crt, so the TLS options can be
# tested), password authentication over TCP, listening only on 127.0.0.1 on a
# free port. The role `dsh` (password `dsh`) owns the database `dsh_test`.
#
# DIR/env holds:
#   DSH_TEST_POSTGRES_URL=postgresql://dsh:dsh@127.0.0.1:PORT/dsh_test
#   DSH_TEST_POSTGRES_CA=DIR/server.crt   (the server certificate, as CA)
#   DSH_TEST_POSTGRES_DIR=DIR
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|status DIR" >&2
  exit 2
}

[ $# -eq 2 ] || usage
cmd=$1
dir=$2
RUN_USER=dshtest

pg_bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
    echo "$d"
  fi
}

# Runs a command as the cluster's owner.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$RUN_USER" -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
  local bin
  bin=$(pg_bindir)
  if [ -z "$bin" ]; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "pg-test-server: no PostgreSQL server binaries found; install Debian's postgresql package (as root: apt-get install -y postgresql)" >&2
      exit 1
    fi
    echo "pg-test-server: installing Debian's postgresql package" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    bin=$(pg_bindir)
    [ -n "$bin" ] || { echo "pg-test-server: postgresql installed but no initdb found" >&2; exit 1; }
  fi
  if ! command -v openssl >/dev/null; then
    if [ "$(id -u)" -eq 0 ]; then
      echo "pg-test-server: installing Debian's openssl tool (for the test certificate)" >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >&2
    else
      echo "pg-test-server: openssl is needed for the test certificate" >&2; exit 1
    fi
  fi

  mkdir -p "$dir"
  if [ -n "$(ls -A "$dir")" ]; then
    echo "pg-test-server: $dir is not empty" >&2
    exit 1
  fi
  if [ "$(id -u)" -eq 0 ]; then
    if ! id "$RUN_USER" >/dev/null 2>&1; then
      useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_USER"
    fi
    chown "$RUN_USER": "$dir"
  fi
  chmod 0700 "$dir"

  local port
  port=$(free_port)
  printf 'dsh\n' >"$dir/pwfile"
  [ "$(id -u)" -ne 0 ] || chown "$RUN_USER": "$dir/pwfile"
  as_owner "$bin/initdb" -D "$dir/data" -U dsh --pwfile="$dir/pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }

  # A self-signed certificate for 127.0.0.1 / localhost, the CA of itself.
  openssl req -new -x509 -days 30 -nodes -newkey rsa:2048 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$dir/server.key" -out "$dir/server.crt" >/dev/null 2>&1
  chmod 0600 "$dir/server.key"
  [ "$(id -u)" -ne 0 ] || chown "$RUN_USER": "$dir/server.key" "$dir/server.crt"
  chmod 0644 "$dir/server.crt"

  cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
ssl = on
ssl_cert_file = '$dir/server.crt'
ssl_key_file = '$dir/server.key'
max_connections = 200
fsync = on
synchronous_commit = on
log_min_messages = warning
EOF
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
    { cat "$dir/server.log" >&2; exit 1; }
  as_owner "$bin/psql" -h "$dir" -p "$port" -U dsh -d postgres -qAt \
    -c "CREATE DATABASE dsh_test" >/dev/null
  # The tests' URLs; `..._CA` verifies the server certificate.
  cat >"$dir/env" <<EOF
export DSH_TEST_POSTGRES_URL='postgresql://dsh:dsh@127.0.0.1:$port/dsh_test'
export DSH_TEST_POSTGRES_CA='$dir/server.crt'
export DSH_TEST_POSTGRES_DIR='$dir'
EOF
  chmod 0644 "$dir/env"
  echo "pg-test-server: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (cluster $dir/data, user $(as_owner id -un)); source $dir/env" >&2
}

stop() {
  local bin
  bin=$(pg_bindir)
  if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
  fi
  # Only ever remove a directory this script set up.
  if [ -f "$dir/pwfile" ] || [ -d "$dir/data" ]; then
    rm -rf "$dir"
  fi
}

status() {
  local bin
  bin=$(pg_bindir)
  as_owner "$bin/pg_ctl" -D "$dir/data" status
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) usage ;;
esac

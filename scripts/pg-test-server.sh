#!/usr/bin/env bash
# A throwaway PostgreSQL server on loopback for the session store's tests (issue 21).
#   scripts/pg-test-server.sh start   prints the DSN of a running server (starting one: the
#                                     `postgresql` Debian package is installed when initdb
#                                     and pg_ctl are missing; initdb into a temp dir, a random
#                                     port on 127.0.0.1, trust auth on loopback only)
#   scripts/pg-test-server.sh ca      prints the CA certificate the server's TLS certificate
#                                     chains to (the server takes TLS and plain connections;
#                                     its certificate names 127.0.0.1 and localhost)
#   scripts/pg-test-server.sh stop    stops it and removes its data
# Idempotent: `start` with a server already running prints its DSN again; `stop` without
# one does nothing. The state lives in $HERMES_PG_TEST_DIR (default: a fixed dir under
# $TMPDIR). initdb refuses to run as root, so as root the server runs as user `postgres`.
set -euo pipefail
state="${HERMES_PG_TEST_DIR:-${TMPDIR:-/tmp}/hermes-pg-test}"

find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [[ -x "$d/initdb" && -x "$d/pg_ctl" ]]; then
      echo "$d"
      return 0
    fi
  done
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v pg_ctl)"
    return 0
  fi
  return 1
}

as_owner() {
  if [[ "$(id -u)" == 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

bin="$(find_bin || true)"
if [[ -z "$bin" ]]; then
  if [[ "${1:-start}" == stop ]]; then exit 0; fi
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  bin="$(find_bin)"
fi

case "${1:-start}" in
  start)
    if [[ -f "$state/dsn" ]] && as_owner "$bin/pg_ctl" -D "$state/data" status >/dev/null 2>&1; then
      cat "$state/dsn"
      exit 0
    fi
    if [[ -d "$state/data" ]]; then
      as_owner "$bin/pg_ctl" -D "$state/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$state"
    mkdir -p "$state"
    chmod 700 "$state"
    if [[ "$(id -u)" == 0 ]]; then
      id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
      chown postgres "$state"
    fi
    port=""
    for _ in $(seq 1 50); do
      candidate=$((20000 + RANDOM % 40000))
      if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then
        port="$candidate"
        break
      fi
    done
    [[ -n "$port" ]] || { echo "no free loopback port found" >&2; exit 1; }
    # A throwaway CA and a server certificate signed by it, for the TLS tests.
    tls="$state/tls"
    mkdir -p "$tls"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3 \
      -subj "/CN=hermes test CA" -keyout "$tls/ca.key" -out "$tls/ca.crt" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      >/dev/null 2>&1
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
      -keyout "$tls/server.key" -out "$tls/server.csr" >/dev/null 2>&1
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' \
      >"$tls/server.ext"
    openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" \
      -CAcreateserial -days 3 -extfile "$tls/server.ext" -out "$tls/server.crt" >/dev/null 2>&1
    chmod 600 "$tls/server.key"
    chmod 755 "$tls"
    chmod 644 "$tls/ca.crt"
    if [[ "$(id -u)" == 0 ]]; then
      chown -R postgres "$tls"
    fi
    as_owner "$bin/initdb" -D "$state/data" -U hermes --auth=trust -E UTF8 --no-locale \
      >"$state/initdb.log" 2>&1 || { cat "$state/initdb.log" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$state/data" -l "$state/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $state -c fsync=off \
          -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 \
          -c ssl=on -c ssl_cert_file=$tls/server.crt -c ssl_key_file=$tls/server.key" \
      start >&2 || { cat "$state/server.log" >&2; exit 1; }
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U hermes hermes_test >&2
    echo "postgresql://hermes@127.0.0.1:$port/hermes_test" >"$state/dsn"
    cat "$state/dsn"
    ;;
  ca)
    [[ -f "$state/tls/ca.crt" ]] || { echo "no test server with TLS: run start first" >&2; exit 1; }
    echo "$state/tls/ca.crt"
    ;;
  stop)
    if [[ -d "$state/data" ]]; then
      as_owner "$bin/pg_ctl" -D "$state/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$state"
    ;;
  *)
    echo "usage: $0 start|ca|stop" >&2
    exit 2
    ;;
esac

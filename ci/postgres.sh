#!/usr/bin/env bash
# Makes sure a PostgreSQL server is there for the tests, and says where it is.
#
# Why it exists: the PostgreSQL tests read TOPICD_TEST_PG, an admin URL to a server that
# lets `postgres` in over TCP without a password (they create and drop their own
# databases through it). The usual machine has one (Debian's cluster 15/main on 5432,
# trust auth), but CI must also pass where PostgreSQL is stopped or not installed, so
# .ci/run calls this instead of assuming a server.
#
#   ci/postgres.sh ensure [PORT]     (PORT defaults to 5432)
#
# Prints `postgres://postgres@127.0.0.1:PORT/postgres` as the last line on stdout;
# everything else goes to stderr. Tried in order, stopping at the first that works:
#   a. a server already answers on 127.0.0.1:PORT and lets postgres in: use it;
#   b. a Debian cluster is configured for PORT (pg_lsclusters): start it;
#   c. no server binaries under /usr/lib/postgresql: apt-get install postgresql (which
#      may create and start a cluster `main` on 5432 itself: if that is PORT it is used,
#      its pg_hba.conf given a trust line for 127.0.0.1 because this run created it);
#      if still nothing answers on PORT, initdb a throwaway cluster (trust auth) in a new
#      directory under /tmp, owned by the postgres user, and start it on PORT.
# A cluster it did not create is never reconfigured: if one answers but refuses, it
# fails and says so. Every wait is bounded (TOPICD_PG_TIMEOUT_S, default 60 seconds;
# apt-get gets 15 minutes); it exits non-zero naming the step that failed, never hangs.
# A throwaway cluster keeps running after the script; it prints how to stop it.
set -euo pipefail

TIMEOUT_S="${TOPICD_PG_TIMEOUT_S:-60}"
export PGCONNECT_TIMEOUT=5

log() { echo "ci/postgres.sh: $*" >&2; }
die() {
    echo "ci/postgres.sh: error: $*" >&2
    exit 1
}

usage() {
    echo "usage: ci/postgres.sh ensure [PORT]" >&2
    exit 2
}

# True when psql as postgres over TCP, without a password, gets `select 1` back.
usable() {
    command -v psql >/dev/null || return 1
    [[ "$(psql -X -w -q -A -t -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -c 'select 1' 2>"$ERR")" == 1 ]]
}

# True when anything speaking the PostgreSQL protocol answers on PORT (even to refuse).
answers() {
    command -v pg_isready >/dev/null || return 1
    local rc=0
    pg_isready -q -h 127.0.0.1 -p "$PORT" -t 3 || rc=$?
    [[ $rc == 0 || $rc == 1 ]]
}

# Waits, at most TIMEOUT_S seconds, for a server on PORT to accept connections.
wait_ready() {
    local what="$1" deadline=$((SECONDS + TIMEOUT_S))
    until pg_isready -q -h 127.0.0.1 -p "$PORT" -t 2; do
        ((SECONDS < deadline)) || die "$what: no server accepting connections on 127.0.0.1:$PORT after ${TIMEOUT_S}s"
        sleep 1
    done
}

# Ends `ensure` (run in a subshell by the last lines): a server is ready on PORT.
done_with() {
    log "$1"
    exit 0
}

# The Debian cluster configured for PORT, as `VERSION NAME STATUS`, if there is one.
cluster_for_port() {
    command -v pg_lsclusters >/dev/null || return 0
    (pg_lsclusters -h 2>/dev/null || true) | awk -v port="$PORT" '$3 == port { print $1, $2, $4; exit }'
}

# Starts the Debian cluster configured for PORT, if there is one, and reports on it.
try_cluster() {
    local cluster ver name status hba
    cluster="$(cluster_for_port)"
    [[ -n "$cluster" ]] || return 0
    read -r ver name status <<<"$cluster"
    if [[ "$status" != online* ]]; then
        log "starting Debian cluster $ver/$name (port $PORT, was $status)"
        timeout "$TIMEOUT_S" pg_ctlcluster "$ver" "$name" start ||
            die "pg_ctlcluster $ver $name start failed (see /var/log/postgresql/postgresql-$ver-$name.log)"
    fi
    wait_ready "cluster $ver/$name"
    usable && done_with "using Debian cluster $ver/$name on port $PORT"
    hba="$(pg_conftool -s "$ver" "$name" show hba_file 2>/dev/null || echo "/etc/postgresql/$ver/$name/pg_hba.conf")"
    if [[ " $CREATED " == *" $ver/$name "* ]]; then
        # Created by the apt-get install of this run: Debian's default asks for a
        # password over TCP, so let postgres in from 127.0.0.1 as the tests expect.
        log "cluster $ver/$name was created by this run's install: trusting 127.0.0.1 in $hba"
        sed -i '1i host all all 127.0.0.1/32 trust  # added by ci/postgres.sh' "$hba"
        timeout "$TIMEOUT_S" pg_ctlcluster "$ver" "$name" reload || die "pg_ctlcluster $ver $name reload failed"
        usable && done_with "using Debian cluster $ver/$name on port $PORT"
    fi
    die "cluster $ver/$name answers on port $PORT but refuses postgres without a password: $(cat "$ERR") (trust 127.0.0.1 in $hba, or set TOPICD_TEST_PG)"
}

server_bin() {
    local dir
    dir="$( (ls -d /usr/lib/postgresql/*/bin 2>/dev/null || true) | sort -V | tail -n 1)"
    [[ -n "$dir" && -x "$dir/initdb" && -x "$dir/pg_ctl" ]] && echo "$dir"
    return 0
}

apt_install() {
    command -v apt-get >/dev/null || die "no PostgreSQL server binaries and no apt-get to install them"
    export DEBIAN_FRONTEND=noninteractive
    log "apt-get install $*"
    timeout 900 apt-get update || log "warning: apt-get update failed; trying the install with the package lists there are"
    timeout 900 apt-get install -y --no-install-recommends "$@" || die "apt-get install $* failed (or took more than 15 minutes)"
}

# Runs a command, at most TIMEOUT_S seconds, as the owner of the throwaway cluster (root
# may not run initdb, so root runs it as postgres), from / (which postgres can read).
as_pg() {
    if ((EUID == 0)); then
        (cd / && timeout "$TIMEOUT_S" runuser -u postgres -- "$@")
    else
        (cd / && timeout "$TIMEOUT_S" "$@")
    fi
}

throwaway_cluster() {
    local bin dir
    bin="$(server_bin)"
    [[ -n "$bin" ]] || die "no initdb/pg_ctl under /usr/lib/postgresql/*/bin"
    if ((EUID == 0)); then
        getent passwd postgres >/dev/null || die "no postgres user to run initdb as"
    fi
    dir="$(mktemp -d /tmp/topicd-pg-"$PORT".XXXXXX)"
    if ((EUID == 0)); then
        chown postgres: "$dir"
    fi
    log "initdb of a throwaway cluster in $dir ($bin)"
    if ! as_pg "$bin/initdb" -D "$dir" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >"$ERR" 2>&1; then
        cat "$ERR" >&2
        rm -rf "$dir"
        die "initdb of a throwaway cluster failed, or took more than ${TIMEOUT_S}s (its output is above)"
    fi
    log "starting it on 127.0.0.1:$PORT"
    if ! as_pg "$bin/pg_ctl" -D "$dir" -o "-p $PORT -k $dir -c listen_addresses=127.0.0.1" \
        -l "$dir/log" -t "$TIMEOUT_S" -w start; then
        tail -n 20 "$dir/log" >&2 || true
        as_pg "$bin/pg_ctl" -D "$dir" -m immediate stop >/dev/null 2>&1 || true
        rm -rf "$dir"
        die "pg_ctl start of a throwaway cluster on port $PORT failed, or took more than ${TIMEOUT_S}s (its log is above)"
    fi
    wait_ready "throwaway cluster in $dir"
    usable || die "throwaway cluster in $dir refuses postgres: $(cat "$ERR")"
    local who=""
    if ((EUID == 0)); then
        who="runuser -u postgres -- "
    fi
    log "stop it with: $who$bin/pg_ctl -D $dir stop && rm -rf $dir"
    done_with "using throwaway cluster in $dir on port $PORT"
}

[[ "${1:-}" == ensure && $# -le 2 ]] || usage
PORT="${2:-5432}"
if ! [[ "$PORT" =~ ^[1-9][0-9]{0,4}$ ]] || ((PORT > 65535)); then
    die "not a port: $PORT"
fi
ERR="$(mktemp)"
trap 'rm -f "$ERR"' EXIT
CREATED=""

ensure() {
    # a. Already there.
    usable && done_with "a server already answers on 127.0.0.1:$PORT"
    if answers; then
        die "a server answers on 127.0.0.1:$PORT but refuses postgres without a password: $(cat "$ERR") (set TOPICD_TEST_PG, or free the port)"
    fi

    # b. A Debian cluster for PORT, stopped.
    try_cluster

    # c. Install PostgreSQL if there is no server; it may bring a cluster for PORT.
    if [[ -z "$(server_bin)" ]]; then
        before="$(pg_lsclusters -h 2>/dev/null | awk '{ print $1 "/" $2 }' || true)"
        apt_install postgresql
        for c in $(pg_lsclusters -h 2>/dev/null | awk '{ print $1 "/" $2 }'); do
            grep -qxF "$c" <<<"$before" || CREATED="$CREATED $c"
        done
        [[ -z "$CREATED" ]] || log "the install created cluster(s):$CREATED"
        usable && done_with "a server answers on 127.0.0.1:$PORT after the install"
        try_cluster
        if answers; then
            die "after the install, a server answers on 127.0.0.1:$PORT but refuses postgres: $(cat "$ERR")"
        fi
    fi

    # Nothing on PORT (unless something that is not PostgreSQL): a throwaway cluster.
    # shellcheck disable=SC2016 # $1 is for the inner bash
    if timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$PORT" 2>/dev/null; then
        die "something that is not a PostgreSQL server this can use listens on 127.0.0.1:$PORT"
    fi
    throwaway_cluster
}

# Only the URL goes to stdout, and only this script holds it: ensure's output, and that
# of any server it starts (which would otherwise keep a $(...) reading us open), goes to
# stderr.
(ensure) >&2
echo "postgres://postgres@127.0.0.1:$PORT/postgres"

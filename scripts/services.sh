#!/usr/bin/env bash
# Makes PostgreSQL and Redis reachable on 127.0.0.1 for the tests and the
# non-embedded modes: uses running servers; else starts installed ones; else
# installs them with apt-get and starts them. Creates the test database.
# Starts a second PostgreSQL cluster (datasource, port 5433) for the tests'
# and the bench's data sources: a customer's database is never on the
# platform's server, which the data sources refuse.
# Installs Chromium for the console's browser test and bubblewrap for the
# python_code_tool sandbox when they are missing.
# Safe to run any number of times.
set -euo pipefail

PG_PORT=${PG_PORT:-5432}
REDIS_PORT=${REDIS_PORT:-6379}
TEST_DB=${TEST_DB:-test}
DS_PORT=${DS_PORT:-5433}
DS_CLUSTER=${DS_CLUSTER:-datasource}
DS_DB=${DS_DB:-test_datasource}

log() { echo "services: $*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
  for _ in $(seq 1 60); do port_open "$1" && return 0; sleep 0.5; done
  return 1
}

apt_install() {
  log "installing $* with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq "$@" >/dev/null
}

# psql as the postgres superuser: over TCP when trust auth allows it, else
# through the local socket as the postgres OS user.
pg_psql() {
  if psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
    psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -Atq "$@"
  else
    as_root runuser -u postgres -- psql -p "$PG_PORT" -d postgres -Atq "$@"
  fi
}

start_postgres() {
  local fresh=0
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    apt_install postgresql postgresql-client
    fresh=1
  fi
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n1)
  if [ "$fresh" -eq 1 ] || ! grep -q '^host all all 127.0.0.1/32 trust' "/etc/postgresql/$version/main/pg_hba.conf"; then
    # Tests connect as postgres over loopback without a password, as CI's servers allow.
    log "allowing trust auth on 127.0.0.1 for PostgreSQL $version"
    as_root sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "/etc/postgresql/$version/main/pg_hba.conf"
  fi
  log "starting PostgreSQL $version"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_port "$PG_PORT" || { log "PostgreSQL did not start on port $PG_PORT"; exit 1; }
}

start_redis() {
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  log "starting Redis"
  as_root mkdir -p /var/lib/redis /var/log/redis
  as_root redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/appruntime.log
  wait_port "$REDIS_PORT" || { log "Redis did not start on port $REDIS_PORT"; exit 1; }
}

if port_open "$PG_PORT"; then log "PostgreSQL is up on $PG_PORT"; else start_postgres; fi
command -v psql >/dev/null 2>&1 || apt_install postgresql-client
if [ "$(pg_psql -c "select 1 from pg_database where datname = '$TEST_DB'")" != "1" ]; then
  log "creating database $TEST_DB"
  pg_psql -c "create database \"$TEST_DB\""
fi

# The data sources' server: a cluster of its own, as a customer's would be.
# Its roles are not superusers (a data source refuses one): the tests' role
# owns the tests' database, and the bench's role creates its own.
ds_psql() { psql -h 127.0.0.1 -p "$DS_PORT" -U postgres -d postgres -Atq "$@"; }
start_datasource_cluster() {
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n1)
  if [ ! -d "/etc/postgresql/$version/$DS_CLUSTER" ]; then
    log "creating PostgreSQL cluster $version/$DS_CLUSTER on port $DS_PORT"
    as_root pg_createcluster -p "$DS_PORT" "$version" "$DS_CLUSTER" >/dev/null
  fi
  local hba="/etc/postgresql/$version/$DS_CLUSTER/pg_hba.conf"
  if ! grep -q '^host all all 127.0.0.1/32 trust' "$hba"; then
    as_root sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  fi
  log "starting PostgreSQL $version/$DS_CLUSTER"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" "$DS_CLUSTER" start || true
  wait_port "$DS_PORT" || { log "PostgreSQL did not start on port $DS_PORT"; exit 1; }
}
if port_open "$DS_PORT"; then log "the data sources' PostgreSQL is up on $DS_PORT"; else start_datasource_cluster; fi
for role in "appruntime_datasource LOGIN NOSUPERUSER" "appruntime_bench_data LOGIN NOSUPERUSER CREATEDB"; do
  name=${role%% *}
  if [ "$(ds_psql -c "select 1 from pg_roles where rolname = '$name'")" != "1" ]; then
    log "creating role $name on $DS_PORT"
    ds_psql -c "create role $role"
  fi
done
if [ "$(ds_psql -c "select 1 from pg_database where datname = '$DS_DB'")" != "1" ]; then
  log "creating database $DS_DB on $DS_PORT"
  ds_psql -c "create database \"$DS_DB\" owner appruntime_datasource"
fi

if port_open "$REDIS_PORT"; then log "Redis is up on $REDIS_PORT"; else start_redis; fi

# The Sentinel and Cluster tests start their own redis-server processes (a master, a
# replica, three sentinels as `redis-server --sentinel`) on free loopback
# ports (internal/testkit/sentinel.go; three cluster-enabled masters joined
# with redis-cli --cluster create in internal/testkit/cluster.go); redis-cli
# comes with redis-tools.
command -v redis-server >/dev/null 2>&1 || apt_install redis-server
command -v redis-cli >/dev/null 2>&1 || apt_install redis-tools
command -v redis-sentinel >/dev/null 2>&1 || apt_install redis-sentinel

# The console's browser test drives Debian's Chromium (console/browser_test.go).
[ -x /usr/bin/chromium ] || apt_install chromium

# python_code_tool runs scripts under bubblewrap (internal/tool/python).
command -v bwrap >/dev/null 2>&1 || apt_install bubblewrap

# The reviewer's viewer renders PDF pages with poppler's pdftoppm and OCRs
# scanned pages with tesseract, both under bubblewrap (internal/document).
command -v pdftoppm >/dev/null 2>&1 || apt_install poppler-utils
command -v tesseract >/dev/null 2>&1 || apt_install tesseract-ocr tesseract-ocr-eng

# scripts/openapi-check lints the OpenAPI document and builds its clients
# with tools from npm (Redocly CLI, openapi-typescript, TypeScript).
command -v npm >/dev/null 2>&1 || apt_install nodejs npm

# The S3 blob-store tests run against a real versitygw (internal/testkit,
# NewS3Server), built from the Go module proxy at the version pinned there
# and cached, so a rerun costs nothing. The tests install it themselves when
# it is missing; installing it here keeps that build out of the test budget.
VERSITYGW_VERSION=$(sed -n 's/^const VersityGWVersion = "\(.*\)"$/\1/p' internal/testkit/s3server.go)
versitygw_bin=${APPRUNTIME_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/appruntime-tools}/versitygw-$VERSITYGW_VERSION
if [ ! -x "$versitygw_bin/versitygw" ]; then
  log "installing versitygw $VERSITYGW_VERSION"
  GOBIN=$versitygw_bin go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
fi

#!/usr/bin/env bash
# First start of the compose Postgres: the memstream database, an owner role for
# migrations and a least-privilege app role (NOSUPERUSER NOBYPASSRLS) for the worker
# and the gateway, and full-text match declared leakproof. Passwords come from the
# container's environment.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" \
  -v owner_pw="$MEMSTREAM_OWNER_PASSWORD" -v app_pw="$MEMSTREAM_APP_PASSWORD" <<'SQL'
CREATE ROLE memstream_owner LOGIN PASSWORD :'owner_pw';
CREATE ROLE memstream_app LOGIN PASSWORD :'app_pw' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
CREATE DATABASE memstream OWNER memstream_owner;
\connect memstream
CREATE EXTENSION IF NOT EXISTS vector;
-- Full text may use its index under row-level security (SECURITY.md, "Full text under row-level security").
ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
GRANT CONNECT ON DATABASE memstream TO memstream_app;
SQL

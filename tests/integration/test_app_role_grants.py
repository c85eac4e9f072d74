"""The app role holds exactly the table privileges ``APP_PRIVILEGES`` lists, and a migration
run takes back one an earlier version granted."""

from __future__ import annotations

import psycopg
from psycopg import sql

from ops.stack.postgres import APP_ROLE
from sinks.postgres.migrate import APP_PRIVILEGES, grant_app_role
from tests.fixtures.stack import RunningStack

KINDS = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")


def held(conn: psycopg.Connection[tuple[object, ...]], table: str) -> set[str]:
    return {
        kind for kind in KINDS
        if conn.execute("SELECT has_table_privilege(%s, %s, %s)", (APP_ROLE, table, kind)).fetchone() == (True,)
    }  # fmt: skip


def test_the_app_role_holds_exactly_the_listed_privileges(stack: RunningStack) -> None:
    with psycopg.connect(stack.settings.require_owner_database_url(), autocommit=True) as conn:
        for table, privileges in APP_PRIVILEGES.items():
            assert held(conn, table) == set(privileges), table


def test_a_privilege_no_longer_listed_is_taken_back(stack: RunningStack) -> None:
    with psycopg.connect(stack.settings.require_owner_database_url(), autocommit=True) as conn:
        conn.execute(sql.SQL("GRANT UPDATE, TRUNCATE ON skills TO {}").format(sql.Identifier(APP_ROLE)))
        assert {"UPDATE", "TRUNCATE"} <= held(conn, "skills")
        grant_app_role(conn, APP_ROLE)
        assert held(conn, "skills") == set(APP_PRIVILEGES["skills"])

"""A tiny stand-in for the warehouse API (runtime/world/api.py), for sandbox tests."""

from __future__ import annotations


class FakeApi:
    def __init__(self, con):
        self._con = con
        self.calls: list[str] = []

    def query(self, sql: str):
        self.calls.append("query")
        return self._con.sql(sql).df()

    def list_entities(self) -> list[str]:
        self.calls.append("list_entities")
        return [row[0] for row in self._con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]


def make_api(con) -> FakeApi:
    return FakeApi(con)

"""The generic repository: CRUD over one table of a session database (SDD §4.3).

Owns ``Repository`` (get, list, insert, insert-unless-present, the guarded updates and delete by
primary key, every write's closed-enum columns validated with ``check_row_enums``), ``Row`` (a
row as ``dict[str, Any]`` keyed by the columns of ``air.store.schema``), ``select_rows`` and the
cached SQL builders, one string per statement shape so SQLite prepares each shape once. The
per-table repositories (``air.store.repositories``) add their queries on top; none holds policy.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from air.contracts.error import AirException
from air.store.db import DatabaseManager
from air.store.schema import ENUMS_BY_TABLE, check_row_enums

__all__ = ["Repository", "Row", "insert_sql", "select_rows"]

Row = dict[str, Any]


@functools.lru_cache(maxsize=512)
def insert_sql(table: str, cols: tuple[str, ...]) -> str:
    return f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"


@functools.lru_cache(maxsize=256)
def _insert_new_sql(table: str, cols: tuple[str, ...], pk: tuple[str, ...]) -> str:
    return f"{insert_sql(table, cols)} ON CONFLICT({', '.join(pk)}) DO NOTHING"


@functools.lru_cache(maxsize=64)
def _pk_where(pk: tuple[str, ...]) -> str:
    return " AND ".join(f"{c} = ?" for c in pk)


@functools.lru_cache(maxsize=512)
def _update_sql(table: str, cols: tuple[str, ...], where: str, status_in: int = -1) -> str:
    """``UPDATE table SET c = ?, ... WHERE where`` (``AND status IN (?, ...)`` if given): one
    string per statement shape, so SQLite's statement cache prepares each shape once."""
    sql = f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in cols)} WHERE {where}"
    if status_in >= 0:
        sql += f" AND status IN ({', '.join('?' for _ in range(status_in))})"
    return sql


def select_rows(db: DatabaseManager, sql: str, params: Sequence[Any] = ()) -> list[Row]:
    """The rows of one query, each as a ``Row``."""
    return [dict(r) for r in db.query(sql, params)]


class Repository:
    """CRUD over one table keyed by ``pk`` (a column or a tuple of columns)."""

    table: str = ""
    pk: tuple[str, ...] = ("id",)
    order_by: str = "rowid"

    def __init__(self, db: DatabaseManager) -> None:
        self.db = db
        self._enums = bool(ENUMS_BY_TABLE.get(self.table))
        """Whether the table has closed-enum columns to check on each write."""

    def _check(self, row: Mapping[str, Any]) -> None:
        if self._enums:
            check_row_enums(self.table, row)

    def _where_pk(self, key: Any) -> tuple[str, list[Any]]:
        values = list(key) if isinstance(key, tuple) else [key]
        if len(values) == 1 and len(self.pk) == 1:
            return _pk_where(self.pk), values
        if len(values) != len(self.pk):
            raise AirException.of(
                kind="system_error",
                message=f"{self.table}: key {key!r} does not match primary key {self.pk}",
                user_action="This is a bug in air: report it with `air doctor --bundle`.",
            )
        return _pk_where(self.pk), values

    def get(self, key: Any) -> Row | None:
        """Return the row with this primary key, or None."""
        where, params = self._where_pk(key)
        found = select_rows(self.db, f"SELECT * FROM {self.table} WHERE {where}", params)
        return found[0] if found else None

    def list_all(self) -> list[Row]:
        """Every row of the table in insertion order."""
        return select_rows(self.db, f"SELECT * FROM {self.table} ORDER BY {self.order_by}")

    def insert(self, row: Mapping[str, Any]) -> None:
        """Insert one row (enum columns validated).

        Raises:
            AirException: ``system_error`` for a bad enum value or a duplicate key.
        """
        self._check(row)
        try:
            self.db.execute_write(insert_sql(self.table, tuple(row)), list(row.values()))
        except sqlite3.IntegrityError as exc:
            raise AirException.of(
                kind="system_error",
                message=f"{self.table}: cannot insert row: {exc}",
                user_action="This is a bug in air: report it with `air doctor --bundle`.",
                metadata={"table": self.table},
            ) from exc

    def insert_new(self, row: Mapping[str, Any]) -> bool:
        """Insert one row unless its primary key exists; True when it was inserted (one
        statement instead of a read then an insert; other constraints still raise).

        Raises:
            AirException: ``system_error`` for a bad enum value or another constraint.
        """
        self._check(row)
        try:
            cur = self.db.execute_write(
                _insert_new_sql(self.table, tuple(row), self.pk), list(row.values())
            )
        except sqlite3.IntegrityError as exc:
            raise AirException.of(
                kind="system_error",
                message=f"{self.table}: cannot insert row: {exc}",
                user_action="This is a bug in air: report it with `air doctor --bundle`.",
                metadata={"table": self.table},
            ) from exc
        return cur.rowcount == 1

    def update_unset(self, key: Any, patch: Mapping[str, Any], column: str) -> int:
        """``update`` restricted to a row whose ``column`` is NULL."""
        self._check(patch)
        where, params = self._where_pk(key)
        sql = _update_sql(self.table, tuple(patch), f"{where} AND {column} IS NULL")
        return self.db.execute_write(sql, [*patch.values(), *params]).rowcount

    def update(self, key: Any, patch: Mapping[str, Any]) -> int:
        """Update columns of the row with this key; return the number of rows changed."""
        if not patch:
            return 0
        self._check(patch)
        where, params = self._where_pk(key)
        sql = _update_sql(self.table, tuple(patch), where)
        return self.db.execute_write(sql, [*patch.values(), *params]).rowcount

    def update_where(self, patch: Mapping[str, Any], where: str, params: Sequence[Any]) -> int:
        """Update columns of the rows matching ``where`` (fixed SQL, ``?`` bound to
        ``params``); return the number of rows changed."""
        self._check(patch)
        sql = _update_sql(self.table, tuple(patch), where)
        return self.db.execute_write(sql, [*patch.values(), *params]).rowcount

    def update_if(
        self, key: Any, patch: Mapping[str, Any], *, status_in: tuple[str, ...] | None = None
    ) -> int:
        """``update`` restricted to rows whose ``status`` is in ``status_in`` (when given)."""
        if status_in is None:
            return self.update(key, patch)
        self._check(patch)
        where, params = self._where_pk(key)
        sql = _update_sql(self.table, tuple(patch), where, len(status_in))
        return self.db.execute_write(sql, [*patch.values(), *params, *status_in]).rowcount

    def delete(self, key: Any) -> int:
        """Delete the row with this key; return the number of rows removed."""
        where, params = self._where_pk(key)
        return self.db.execute_write(f"DELETE FROM {self.table} WHERE {where}", params).rowcount

"""Session and project SQLite storage: DatabaseManager, MigrationRunner, repositories, SessionStore,
referential_check and the project knowledge databases (SDD §4, §18.2-18.3).

Import from the submodules: ``air.store.db``, ``air.store.schema``, ``air.store.repository``,
``air.store.repositories``, ``air.store.integrity``, ``air.store.session_db``,
``air.store.read_model``. This package file imports nothing, so a reader of one submodule
(``air.store.read_model`` needs only ``sqlite3``) loads only that one (IMPL-READ-3).
"""

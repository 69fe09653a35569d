"""Session and project SQLite storage: DatabaseManager, MigrationRunner, repositories, SessionStore,
referential_check and the project knowledge databases (SDD §4, §18.2-18.3).
"""

"""Project and session lifecycle: ProjectStore (locate / initialize / open) and SessionManager
(open_session / close_session) (SDD §6). IMPL package, see docs/decisions.md.
"""

"""The urwid console: TuiApp and its views (SDD §13.2). Reads projections only."""

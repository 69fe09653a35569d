"""WorkspaceManager: main, git worktree and isolated copy workspaces, merge and GC (SDD §7.5)."""

"""ToolRegistry and the built-in tools (fs, shell, git, project, artifact) (SDD §9.1, §9.4).
"""

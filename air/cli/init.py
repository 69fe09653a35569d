"""``air init [PATH]``: make a directory an air project."""

from __future__ import annotations

import os
from typing import Any


def run_init(args: dict[str, Any]) -> int:
    """Create ``.air/shared`` and ``.air/local`` under PATH and print the project id."""
    from air.contracts import AirException, ProjectInitOptions
    from air.session.project import ProjectStore

    root = os.path.abspath(args["PATH"] or os.getcwd())
    if not os.path.isdir(root):
        raise AirException.of(
            kind="not_found",
            message=f"{root} is not a directory",
            user_action="Create the directory first, or pass an existing one to `air init`.",
        )
    store = ProjectStore()
    existing = store.locate(root)
    if existing is not None and os.path.realpath(existing.project_root) == os.path.realpath(root):
        print(f"air project already initialised: {existing.project_root}")
        print(f"project id: {existing.project_id}")
        return 0
    project = store.initialize(root, ProjectInitOptions(name=args["--name"]))
    print(f"initialised air project {project.name!r} in {project.project_root}")
    print(f"project id: {project.project_id}")
    print(f"shared (commit it): {project.shared_root}")
    print(f"local (gitignored): {project.local_root}")
    return 0

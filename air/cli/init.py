"""``air init [PATH] [--models]``: make a directory an air project; with ``--models``, also
write the commented models.yaml reference (air/llm/resources/models.example.yaml) to
``.air/shared/models.yaml`` unless that file exists."""

from __future__ import annotations

import os
import sys
from typing import Any

from air.contracts.error import CliExit


def run_init(args: dict[str, Any]) -> int:
    """Create ``.air/shared`` and ``.air/local`` under PATH and print the project id."""
    from air.contracts.error import AirException
    from air.contracts.project import ProjectInitOptions
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
        if args.get("--models"):
            _write_models_template(root)
        _say_if_foreign(root)
        return CliExit.OK
    project = store.initialize(root, ProjectInitOptions(name=args["--name"]))
    if args.get("--models"):
        _write_models_template(root)
    print(f"initialised air project {project.name!r} in {project.project_root}")
    print(f"project id: {project.project_id}")
    print(f"shared (commit it): {project.shared_root}")
    print(f"local (gitignored): {project.local_root}")
    _say_if_foreign(root)
    return CliExit.OK


def _say_if_foreign(root: str) -> None:
    """The project is air's, but its ``.air/local`` is another's (IMPL-TRUST-3): said now, not
    first at the run that refuses it."""
    from air.contracts.error import AirException
    from air.session.local_owner import refuse_foreign_state

    try:
        refuse_foreign_state(root)
    except AirException as exc:
        print(f"air: but {exc.error.message}", file=sys.stderr)
        print(f"  what to do: {exc.error.user_action}", file=sys.stderr)


def _write_models_template(root: str) -> None:
    """Copy the models.yaml reference to ``<root>/.air/shared/models.yaml`` (never over one)."""
    from importlib import resources

    target = os.path.join(root, ".air", "shared", "models.yaml")
    if os.path.exists(target):
        print(f"kept the existing {target}")
        return
    from air.session.trust import refresh_trust, trust_scan

    text = resources.files("air.llm").joinpath("resources", "models.example.yaml").read_text()
    os.makedirs(os.path.dirname(target), exist_ok=True)
    before = trust_scan(root)
    with open(target, "x", encoding="utf-8") as handle:
        handle.write(text)
    # the user asked for it: air's own write keeps a trusted project trusted (IMPL-TRUST-1)
    refresh_trust(root, before, ".air/shared/models.yaml")
    print(f"wrote {target} (edit it; reference: docs/models.md)")

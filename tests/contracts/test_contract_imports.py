"""``air.contracts`` re-exports nothing: each name is imported from the module that defines it,
and importing a contract module builds only the modules it imports itself (IMPL-STRUCT-1).
Fresh interpreters."""

from __future__ import annotations

import json
import subprocess
import sys


def _contract_modules_after(statement: str) -> list[str]:
    probe = (
        "import json, sys\n"
        f"{statement}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('air.contracts.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_the_package_imports_no_contract_module() -> None:
    assert _contract_modules_after("import air.contracts") == []


def test_naming_a_contract_imports_its_own_module_and_what_that_imports() -> None:
    assert _contract_modules_after(
        "from air.contracts.provider import ProviderCompletionInput"
    ) == [
        "air.contracts.error",
        "air.contracts.ids",
        "air.contracts.provider",
        "air.contracts.utf8",
    ]


def test_a_home_module_does_not_build_its_late_records() -> None:
    """``task``, ``ipc``, ``tool`` and ``permission`` leave their late modules (IMPL-BOOT-12) to
    the code that names them."""
    loaded = _contract_modules_after(
        "import air.contracts.task, air.contracts.ipc, air.contracts.tool, air.contracts.permission"
    )
    assert "air.contracts.task" in loaded
    late = {"task_results", "ipc_messages", "tool_runs", "permission_records"}
    assert {m.rsplit(".", 1)[1] for m in loaded} & late == set()


def test_a_name_is_not_re_exported_by_the_package() -> None:
    done = subprocess.run(
        [sys.executable, "-P", "-c", "from air.contracts import TaskSpec"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "cannot import name 'TaskSpec'" in done.stderr

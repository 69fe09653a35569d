"""Every public contract of air as frozen pydantic v2 models (SDD §3).

Owns nothing itself: it re-exports the 16 contract modules (ids, error, event, runtime, ipc,
task, worker_result, tool, permission, artifact, evidence, project, provider, ui, capability,
platform). Imports pydantic only; no Trio, no I/O.
"""

from air.contracts.artifact import *  # noqa: F403
from air.contracts.capability import *  # noqa: F403
from air.contracts.error import *  # noqa: F403
from air.contracts.event import *  # noqa: F403
from air.contracts.evidence import *  # noqa: F403
from air.contracts.ids import *  # noqa: F403
from air.contracts.ipc import *  # noqa: F403
from air.contracts.permission import *  # noqa: F403
from air.contracts.platform import *  # noqa: F403
from air.contracts.project import *  # noqa: F403
from air.contracts.provider import *  # noqa: F403
from air.contracts.runtime import *  # noqa: F403
from air.contracts.task import *  # noqa: F403
from air.contracts.tool import *  # noqa: F403
from air.contracts.ui import *  # noqa: F403
from air.contracts.worker_result import *  # noqa: F403

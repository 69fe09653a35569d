"""Every public contract of air as frozen pydantic v2 models (SDD §3).

Owns nothing and re-exports nothing: each name is imported from the contract module that
defines it (``from air.contracts.task import TaskSpec``), so a process builds only the models it
names (IMPL-STRUCT-1). The modules: ids, error, event, runtime, ipc, task, worker_result, tool,
permission, prompt, artifact, evidence, project, provider, ui, capability, platform. Imports
pydantic only; no Trio, no I/O.

Seven more modules hold the models a run builds only after its first model request
(IMPL-BOOT-12): ``ipc_messages``, ``task_results``, ``doctor_report``, ``tool_runs``,
``artifact_records``, ``evidence_records`` and ``permission_records``; the code that needs one
imports it where it is used. ``display`` holds no model: the one rule for showing untrusted
exact text (IMPL-UI-7).
"""

"""ContextAssembler, PromptLayerLoader and CompactionPolicy (SDD §10).

Owns the prompt layers L0-L9 (SDD §10.2, baselines §A.12): loading the resource-backed ones,
assembling the session/task ones, fitting them to a token budget, reporting omissions, and the
compaction policy (SDD §10.3, §19.3) and the session compactor that runs it
(``air.context.compactor``, not imported here). Imports contracts and store (reads store rows
through injected readers, records through an injected ledger); never roles, llm or artifacts.
"""

from __future__ import annotations

from air.context.assembler import ArtifactTextReader, ArtifactWriter, ContextAssembler
from air.context.budget import BudgetFitResult, fit_budget, render_layer
from air.context.compaction import (
    CompactionPolicy,
    CompactionRules,
    Summariser,
    load_compaction_rules,
)
from air.context.loader import DEFAULT_LAYER_PRIORITIES, PromptLayerLoader, RolePromptSource
from air.context.session_rows import SessionReaders, readers_from_store
from air.context.tokens import estimate_message_tokens, estimate_tokens

__all__ = [
    "DEFAULT_LAYER_PRIORITIES",
    "ArtifactTextReader",
    "ArtifactWriter",
    "BudgetFitResult",
    "CompactionPolicy",
    "CompactionRules",
    "ContextAssembler",
    "PromptLayerLoader",
    "RolePromptSource",
    "SessionReaders",
    "Summariser",
    "estimate_message_tokens",
    "estimate_tokens",
    "fit_budget",
    "load_compaction_rules",
    "readers_from_store",
    "render_layer",
]

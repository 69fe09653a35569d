"""ArtifactStore, EvidenceStore and the project knowledge stores (SDD §11).

Submodules: ``air.artifacts.store`` (ArtifactStore, EvidenceStore, recover_orphan_artifacts),
``air.artifacts.knowledge`` (DebugKnowledgeStore, LearnedMemoryStore, the knowledge ids),
``air.artifacts.rules`` (learned rule files under ``.air/shared/rules``),
``air.artifacts.names`` (the artifact file-name scheme, where a recorded file is now) and
``air.artifacts.evidence`` (a completed task's evidence, taken from the parent's own records).
"""

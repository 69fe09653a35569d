"""ArtifactStore, EvidenceStore and the project knowledge stores (SDD §11).

Submodules: ``air.artifacts.store`` (ArtifactStore, EvidenceStore, recover_orphan_artifacts)
and ``air.artifacts.knowledge`` (DebugKnowledgeStore, LearnedMemoryStore).
"""

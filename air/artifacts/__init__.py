"""ArtifactStore, EvidenceStore and the project knowledge stores (SDD §11).
"""

"""ContextAssembler, PromptLayerLoader and CompactionPolicy (SDD §10).
"""

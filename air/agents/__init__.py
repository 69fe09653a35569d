"""Runtime-resident agents: MainAgent and ArchitectureDesigner (SDD §14)."""

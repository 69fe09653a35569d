"""ProjectionStore and the ProjectionClient it hands to the console (SDD §13.1)."""

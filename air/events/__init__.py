"""The event subsystem: EventSchemaRegistry, EventStore (append + projection in one transaction),
EventIngestor and EventBus (SDD §5).

Submodules: ``payloads`` (one model per type+version, in groups imported on first use; PAYLOADS,
PERSISTENCE), ``registry``, ``projection`` (SDD §5.4 Table A), ``store`` (EventStore,
replay_events), ``bus`` (EventBus), ``ingestor`` (EventIngestor). Import them directly; this
file has no side effects.
"""

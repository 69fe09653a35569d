"""The event subsystem: EventSchemaRegistry, EventStore (append + projection in one transaction),
EventIngestor and EventBus (SDD §5).
"""

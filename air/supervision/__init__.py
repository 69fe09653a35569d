"""Worker supervision (SDD §8.1, runner invariants 8–9, 14–22; ARCHITECTURE §1): the
WorkerManager and one worker's run (start, watch, tool serving, finish), run records and the
session claim, reaping orphans, the AgentMonitor, and the ``TaskRunner`` seam the Scheduler
drives it through. It imports contracts, ipc, events, tools and security (the redactor), never
the nursery.
"""

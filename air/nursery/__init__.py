"""The nursery-per-wave Scheduler and a task's life (SDD §7, §16.3): TaskGraph, WavePlanner,
RetryPlanner, dispatch, the outcome pipeline, recovery, and ``open_runtime()`` (the composition
root). Each wave is one Trio nursery; workers are supervised by ``air.supervision``.
"""

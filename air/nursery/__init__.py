"""The Scheduler and its helpers: TaskGraph, WavePlanner, RetryPlanner, AgentMonitor, WorkerManager
and recovery (SDD §7, §16.3). Each wave is one Trio nursery.
"""

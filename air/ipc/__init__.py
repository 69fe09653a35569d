"""Parent/worker IPC: sans-IO NDJSON framing, WorkerProtocol, WorkerProcess (parent side) and the
child-side WorkerRuntime (SDD §8).
"""

"""Fakes shipped with air for tests, demos and ``air doctor``: scripted providers' cassettes,
misbehaving workers, event builders. Stand-ins only for what cannot run here (a paid model).
"""

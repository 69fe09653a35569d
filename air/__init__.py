"""air: a local AI coding-agent runtime.

Importing this package has no side effects: it only names the version. Everything else is
imported lazily by the command that needs it.
"""

__version__ = "0.1.0"

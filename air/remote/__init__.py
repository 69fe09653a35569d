"""Workers on other hosts (issue #27): hosts configuration, the OpenSSH launcher, the remote
probe of ``air doctor --host`` and the sweeper of a remote run's processes.

``PRIVATE_UMASK``: ``python -P -m air.remote.repo``, which makes the work directory and
everything air keeps there (the object cache, each run's repository and worktree, the lock),
runs with it, so on a cluster's shared scratch or a login node others share they are the
user's alone (what a run's tools write is inside its run's directory).
"""

PRIVATE_UMASK = 0o077

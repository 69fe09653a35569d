"""Workers on other hosts (issue #27): hosts configuration, the OpenSSH launcher, the remote
probe of ``air doctor --host`` and the sweeper of a remote run's processes."""

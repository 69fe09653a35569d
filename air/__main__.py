"""``python -m air``: the same as the ``air`` command."""

from air.cli import main

raise SystemExit(main())

"""What the ``air`` command does before it imports anything else: its search paths hold only
absolute entries (``air.search_path.own_search_paths``, IMPL-PATH-1), so not even the standard
library modules ``air.cli`` imports next (``re``, ``typing``) can come from a ``PYTHONPATH``
entry that names the directory air starts in. Imported first by ``air.cli``; importing it
twice does nothing more."""

from __future__ import annotations

from air.search_path import own_search_paths

own_search_paths()

"""``python -m tractable.cli``: the ``tractable`` command."""

from . import entry

entry()

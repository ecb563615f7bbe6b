"""``python -m tractable.cli``: the ``tractable`` command."""

import sys

from . import main

sys.exit(main())

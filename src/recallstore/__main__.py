"""``python -m recallstore``: the same as the ``recallstore`` command."""

import sys

from recallstore.cli import main

sys.exit(main())

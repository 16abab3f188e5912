"""``python -m mcpframe``: the ``mcpframe`` command."""

from __future__ import annotations

import sys

from mcpframe.cli import main

if __name__ == "__main__":
    sys.exit(main())

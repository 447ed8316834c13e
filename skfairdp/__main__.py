"""``python -m skfairdp``: the same command as the ``skfairdp`` console script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())

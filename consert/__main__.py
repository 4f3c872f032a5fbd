"""``python -m consert``."""

import sys

from consert.cli import main

sys.exit(main())

"""``python -m consert``."""

import sys

from .cli import main

sys.exit(main())

"""`python -m tools.msl_fuzz` (from the repository root): see cli.py."""

import sys

from .cli import main

sys.exit(main())

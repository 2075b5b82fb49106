"""``python -m slrpipe``: the CLI through a given interpreter (what the workflow's rules run)."""

import sys

from slrpipe.cli import main

sys.exit(main())

"""``python -m seakr_integrations.cli``: the ``seakr`` command."""

import sys

from seakr_integrations.cli import main

sys.exit(main())

"""``python -m exactnorm.checker CERT``: the standard-library checker's command line."""

import sys

from .files import main

sys.exit(main())

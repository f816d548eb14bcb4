"""``python -m exactnorm``: the same command line as the ``exactnorm`` script."""

from exactnorm.cli import main

raise SystemExit(main())

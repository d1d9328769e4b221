"""`python -m bot` runs the perfbot command line."""

import sys

from bot.cli.main import main

sys.exit(main())

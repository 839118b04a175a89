"""``python3 -m wshard_ros.ros1``: see :mod:`wshard_ros.ros1.cli`."""

import sys

from .cli import main

sys.exit(main())

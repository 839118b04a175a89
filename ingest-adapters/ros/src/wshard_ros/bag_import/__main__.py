"""``python3 -m wshard_ros.bag_import``."""

import sys

from .cli import main

sys.exit(main())

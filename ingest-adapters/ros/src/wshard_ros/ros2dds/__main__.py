"""``python3 -m wshard_ros.ros2dds``: see :mod:`wshard_ros.ros2dds.cli`."""

import sys

from .cli import main

sys.exit(main())

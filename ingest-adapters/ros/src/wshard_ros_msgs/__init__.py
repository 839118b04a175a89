"""The ROS 1 service types of the wshardd ROS bridge, as a ROS package ``wshard_ros_msgs``.

The ``.srv`` files in ``srv/`` are their only source; :mod:`wshard_ros_msgs.srv` makes the
Python classes from them with genpy when imported (:mod:`wshard_ros_msgs.generate`).
"""

from .generate import ServiceCodeError

__all__ = ["ServiceCodeError"]

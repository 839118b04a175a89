"""The service types of the wshardd ROS bridge (``wshard_ros_msgs/Start``, ``Stop``,
``Abort``, ``Annotate``, ``Status``, ``StopEpisode``, ``AbortEpisode``, ``Keep``,
``SplitEpisode``, ``FlightTrigger``): for every
``NAME.srv`` in this directory, the classes ``NAME``, ``NAMERequest`` and ``NAMEResponse``,
made by genpy from the ``.srv`` file when this package is imported (in memory, see
:mod:`wshard_ros_msgs.generate`), as a catkin build of a ROS package would have generated
them. The ROS tools (``rosservice``) find them by importing this package:
``wshard_ros_msgs`` must be on their ``PYTHONPATH``.

Importing raises :class:`~wshard_ros_msgs.generate.ServiceCodeError` (an ``ImportError``)
when genpy is not installed (``apt-get install python3-genpy``) or refuses a ``.srv`` file.
"""

from pathlib import Path
from typing import Any, List

from ..generate import import_services

_services = import_services(__name__, Path(__file__).resolve().parent)
globals().update(_services)
__all__: List[str] = sorted(_services)


def __getattr__(name: str) -> Any:
    """An unknown name: the error lists the service types there are."""
    raise AttributeError(f"module {__name__!r} has no attribute {name!r} (its service types: {', '.join(__all__)})")

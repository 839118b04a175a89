"""The live ROS 1 front end of the bridge (rospy, Debian's ``/usr/bin/python3``): subscribes
to the mapping's topics and records them through :class:`~wshard_ros.bridge.Bridge`;
episode control by services and the ``~trigger`` topic. Run it with
``python3 -m wshard_ros.ros1`` or ``wshard-ros-bridge`` (:mod:`~wshard_ros.ros1.cli`).

Importing this package imports no rospy; its modules ``node``, ``services`` and
``msgclasses`` do.
"""

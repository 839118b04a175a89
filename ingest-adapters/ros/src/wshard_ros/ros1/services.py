"""The node's services ``~start``, ``~stop``, ``~abort``, ``~annotate`` and ``~status``
(types of the package ``wshard_ros_msgs``, made from the .srv files in wshard_ros_msgs/srv), each a thin
translation of the request into the bridge socket's request (:func:`~wshard_ros.bridge.handle_request`)."""

import json
from typing import Any, Callable, Dict, List

import rospy

from wshard_ros_msgs.srv import (
    Abort,
    AbortResponse,
    Annotate,
    AnnotateResponse,
    Start,
    StartResponse,
    Status,
    StatusResponse,
    Stop,
    StopResponse,
)

#: The services, under the node's private namespace.
SERVICE_NAMES = ("~start", "~stop", "~abort", "~annotate", "~status")

Reply = Dict[str, Any]
Run = Callable[[Dict[str, Any]], Reply]


def _outcome(reply: Reply) -> Dict[str, Any]:
    """``ok``, ``code``, ``message`` fields of a service response from a reply."""
    if reply.get("ok"):
        return {"ok": True, "code": "", "message": ""}
    err = reply.get("error", {})
    return {"ok": False, "code": str(err.get("code", "")), "message": str(err.get("message", ""))}


def register_services(run: Run, status: Callable[[], Dict[str, Any]]) -> List[Any]:
    """Advertise the five services; ``run`` executes a bridge-socket request
    (:func:`~wshard_ros.bridge.handle_request`), ``status``
    gives the JSON object of ``~status``. Returns the ``rospy.Service`` objects."""

    def start(req: Any) -> Any:
        request: Dict[str, Any] = {"cmd": "start", "episode_id": req.episode_id, "env_id": req.env_id}
        if req.metadata_json.strip():
            request["metadata"] = req.metadata_json
        return StartResponse(**_outcome(run(request)))

    def stop(req: Any) -> Any:
        reply = run({"cmd": "stop"})
        summary = json.dumps(reply.get("result", {}), sort_keys=True, default=str) if reply.get("ok") else ""
        return StopResponse(summary_json=summary, **_outcome(reply))

    def abort(req: Any) -> Any:
        return AbortResponse(**_outcome(run({"cmd": "abort"})))

    def annotate(req: Any) -> Any:
        request: Dict[str, Any] = {"cmd": "annotate", "label": req.label}
        if not req.at.is_zero():
            request["at_ns"] = int(req.at.to_nsec())
        if req.text:
            request["text"] = req.text
        if req.json.strip():
            try:
                request["json"] = json.loads(req.json)
            except ValueError as e:
                return AnnotateResponse(ok=False, code="BAD_REQUEST", message=f"annotate: field 'json': {e}")
        return AnnotateResponse(**_outcome(run(request)))

    def get_status(req: Any) -> Any:
        return StatusResponse(status_json=json.dumps(status(), sort_keys=True, default=str))

    return [
        rospy.Service("~start", Start, start),
        rospy.Service("~stop", Stop, stop),
        rospy.Service("~abort", Abort, abort),
        rospy.Service("~annotate", Annotate, annotate),
        rospy.Service("~status", Status, get_status),
    ]

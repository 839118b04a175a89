"""The node's services ``~start``, ``~stop``, ``~abort``, ``~annotate``, ``~status`` and the
daemon's episode control ``~stop_episode``, ``~abort_episode``, ``~keep``, ``~split_episode``
and its flight recorder's ``~flight_trigger`` (types of the package
``wshard_ros_msgs``, made from the .srv files in wshard_ros_msgs/srv), each a thin translation
of the request into the bridge socket's request (:func:`~wshard_ros.bridge.handle_request`)."""

import json
from typing import Any, Callable, Dict, List

import rospy

from wshard_ros_msgs.srv import (
    Abort,
    AbortEpisode,
    AbortEpisodeResponse,
    AbortResponse,
    Annotate,
    AnnotateResponse,
    FlightTrigger,
    FlightTriggerResponse,
    Keep,
    KeepResponse,
    SplitEpisode,
    SplitEpisodeResponse,
    Start,
    StartResponse,
    Status,
    StatusResponse,
    Stop,
    StopEpisode,
    StopEpisodeResponse,
    StopResponse,
)

#: The services, under the node's private namespace.
SERVICE_NAMES = (
    "~start",
    "~stop",
    "~abort",
    "~annotate",
    "~status",
    "~stop_episode",
    "~abort_episode",
    "~keep",
    "~split_episode",
    "~flight_trigger",
)

Reply = Dict[str, Any]
Run = Callable[[Dict[str, Any]], Reply]


def _outcome(reply: Reply) -> Dict[str, Any]:
    """``ok``, ``code``, ``message`` fields of a service response from a reply."""
    if reply.get("ok"):
        return {"ok": True, "code": "", "message": ""}
    err = reply.get("error", {})
    return {"ok": False, "code": str(err.get("code", "")), "message": str(err.get("message", ""))}


def register_services(run: Run, status: Callable[[], Dict[str, Any]]) -> List[Any]:
    """Advertise the services; ``run`` executes a bridge-socket request
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

    def end_request(cmd: str, req: Any) -> Dict[str, Any]:
        request: Dict[str, Any] = {"cmd": cmd}
        if req.episode_id:
            request["episode"] = req.episode_id
        if req.timeout_ms:
            request["timeout_ms"] = int(req.timeout_ms)
        return request

    def result_json(reply: Reply) -> str:
        return json.dumps(reply.get("result", {}), sort_keys=True, default=str) if reply.get("ok") else ""

    def stop_episode(req: Any) -> Any:
        reply = run(end_request("stop_episode", req))
        return StopEpisodeResponse(result_json=result_json(reply), **_outcome(reply))

    def abort_episode(req: Any) -> Any:
        reply = run(end_request("abort_episode", req))
        return AbortEpisodeResponse(result_json=result_json(reply), **_outcome(reply))

    def keep(req: Any) -> Any:
        request: Dict[str, Any] = {"cmd": "keep", "release": bool(req.release)}
        if req.episode_id:
            request["episode"] = req.episode_id
        reply = run(request)
        kept = bool(reply.get("result", {}).get("kept", False)) if reply.get("ok") else False
        return KeepResponse(kept=kept, **_outcome(reply))

    def split_episode(req: Any) -> Any:
        request: Dict[str, Any] = {"cmd": "split_episode"}
        if req.episode_id:
            request["episode"] = req.episode_id
        reply = run(request)
        result = reply.get("result", {}) if reply.get("ok") else {}
        return SplitEpisodeResponse(
            finished=str(result.get("finished", "")), recording=str(result.get("recording", "")), **_outcome(reply)
        )

    def flight_trigger(req: Any) -> Any:
        request: Dict[str, Any] = {
            "cmd": "flight_trigger",
            "pre_s": float(req.pre_s),
            "post_s": float(req.post_s),
            "reason": req.reason,
            "streams": list(req.streams),
        }
        reply = run(request)
        result = reply.get("result", {}) if reply.get("ok") else {}
        return FlightTriggerResponse(
            episode=str(result.get("episode", "")), merged=bool(result.get("merged", False)), **_outcome(reply)
        )

    def get_status(req: Any) -> Any:
        return StatusResponse(status_json=json.dumps(status(), sort_keys=True, default=str))

    return [
        rospy.Service("~start", Start, start),
        rospy.Service("~stop", Stop, stop),
        rospy.Service("~abort", Abort, abort),
        rospy.Service("~annotate", Annotate, annotate),
        rospy.Service("~status", Status, get_status),
        rospy.Service("~stop_episode", StopEpisode, stop_episode),
        rospy.Service("~abort_episode", AbortEpisode, abort_episode),
        rospy.Service("~keep", Keep, keep),
        rospy.Service("~split_episode", SplitEpisode, split_episode),
        rospy.Service("~flight_trigger", FlightTrigger, flight_trigger),
    ]

"""Episode control of the ROS 1 front end: the services and the ``~trigger`` topic turn into
the requests of the bridge socket (``{"cmd": ...}``) and run here against the
:class:`~wshard_ros.bridge.Bridge`; every operation answers the bridge socket's reply
(``{"ok": true, "result": ...}`` or ``{"ok": false, "error": {"code", "message"}}``)."""

import json
import logging
from typing import Any, Callable, Dict, Optional

from ..bridge import Bridge, BridgeError

log = logging.getLogger("wshard_ros.ros1")

Reply = Dict[str, Any]


def _error(code: str, message: str) -> Reply:
    return {"ok": False, "error": {"code": code, "message": message}}


def _metadata(value: Any) -> Optional[Dict[str, Any]]:
    """The ``metadata`` of a start request: an object, a JSON object's text, or empty."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise ValueError("metadata must be a JSON object")
    return value


def execute(bridge: Bridge, request: Dict[str, Any], now_ns: Callable[[], int]) -> Reply:
    """Run one request on ``bridge``; never raises (a refusal is the reply's ``error``).

    ``now_ns`` gives the annotation time when a request has no ``at_ns`` (the front end's
    clock: ROS time for ROS 1).
    """
    cmd = request.get("cmd")
    try:
        if cmd == "start":
            episode_id = request.get("episode_id")
            if not isinstance(episode_id, str) or not episode_id:
                return _error("BAD_REQUEST", "start: field 'episode_id' is required (a non-empty string)")
            env_id = request.get("env_id") or ""
            if not isinstance(env_id, str):
                return _error("BAD_REQUEST", "start: field 'env_id' must be a string")
            try:
                metadata = _metadata(request.get("metadata"))
            except ValueError as e:
                return _error("BAD_REQUEST", f"start: field 'metadata': {e}")
            bridge.start(episode_id, env_id=env_id, metadata=metadata)
            return {"ok": True, "result": {"episode": episode_id}}
        if cmd == "stop":
            return {"ok": True, "result": bridge.stop()}
        if cmd == "abort":
            bridge.abort()
            return {"ok": True, "result": {}}
        if cmd == "annotate":
            return _annotate(bridge, request, now_ns)
        if cmd == "status":
            return {"ok": True, "result": bridge.status()}
    except BridgeError as e:
        log.warning("%s refused: %s", cmd, e)
        return _error(e.code, e.message)
    return _error("BAD_REQUEST", f"unknown cmd {cmd!r}: start, stop, abort, annotate or status")


def _annotate(bridge: Bridge, request: Dict[str, Any], now_ns: Callable[[], int]) -> Reply:
    label = request.get("label")
    if not isinstance(label, str) or not label:
        return _error("BAD_REQUEST", "annotate: field 'label' is required (a non-empty string)")
    text = request.get("text") or None
    if text is not None and not isinstance(text, str):
        return _error("BAD_REQUEST", "annotate: field 'text' must be a string")
    payload = request.get("json")
    if text is not None and payload is not None:
        return _error("BAD_REQUEST", "annotate: at most one of 'text' and 'json'")
    at_ns = request.get("at_ns")
    if at_ns is None or at_ns == 0:
        at_ns = now_ns()
    if not isinstance(at_ns, int) or isinstance(at_ns, bool) or at_ns < 0:
        return _error("BAD_REQUEST", "annotate: field 'at_ns' must be an integer >= 0")
    result = bridge.annotate(label, text=text, json=payload, at_ns=at_ns)
    return {"ok": True, "result": result if isinstance(result, dict) else {}}

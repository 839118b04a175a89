"""The ``~trigger`` topic's commands (``std_msgs/String``), parsed into the requests of the
bridge socket (``{"cmd": ...}``, ingest-adapters/ros/README.md "Live bridge, ROS 1").

Two spellings:

- words: ``start EPISODE_ID [ENV_ID]``, ``stop``, ``abort``, ``annotate LABEL [TEXT...]``,
  ``status`` (split on whitespace; an annotation's text is the rest of the line);
- a JSON object as the bridge socket takes it: ``{"cmd": "start", "episode_id": "ep1",
  "env_id": "", "metadata": {...}}``, ``{"cmd": "annotate", "label": "grasp", "json": {...}}``.
"""

import json
from typing import Any, Dict

from .errors import BadTrigger

COMMANDS = ("start", "stop", "abort", "annotate", "status")


def parse_trigger(text: str) -> Dict[str, Any]:
    """The request of a trigger message.

    Raises:
        BadTrigger: empty, not JSON when it starts with ``{``, an unknown command, or
            missing or extra arguments (the message names which).
    """
    line = text.strip()
    if not line:
        raise BadTrigger("empty trigger: one of " + ", ".join(COMMANDS))
    if line.startswith("{"):
        return _json_request(line)
    words = line.split()
    cmd = words[0].lower()
    args = words[1:]
    if cmd == "start":
        if not 1 <= len(args) <= 2:
            raise BadTrigger(f"start takes EPISODE_ID [ENV_ID], got {len(args)} arguments")
        return {"cmd": "start", "episode_id": args[0], "env_id": args[1] if len(args) > 1 else ""}
    if cmd in ("stop", "abort", "status"):
        if args:
            raise BadTrigger(f"{cmd} takes no arguments, got {' '.join(args)!r}")
        return {"cmd": cmd}
    if cmd == "annotate":
        if not args:
            raise BadTrigger("annotate takes LABEL [TEXT...]")
        req: Dict[str, Any] = {"cmd": "annotate", "label": args[0]}
        rest = line.split(None, 2)
        if len(rest) > 2:
            req["text"] = rest[2]
        return req
    raise BadTrigger(f"unknown command {words[0]!r}: one of {', '.join(COMMANDS)}")


def _json_request(line: str) -> Dict[str, Any]:
    try:
        req = json.loads(line)
    except ValueError as e:
        raise BadTrigger(f"not JSON: {e}") from None
    if not isinstance(req, dict):
        raise BadTrigger("a JSON trigger is an object")
    cmd = req.get("cmd")
    if cmd not in COMMANDS:
        raise BadTrigger(f"field 'cmd': {cmd!r}: one of {', '.join(COMMANDS)}")
    return req

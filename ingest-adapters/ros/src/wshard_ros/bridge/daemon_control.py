"""The daemon's control socket, for ``annotate``, ``stop``, ``abort``, ``keep``, ``split`` and ``trigger``
(docs/CONTROL.md): one JSON request line per connection, one JSON reply."""

import json
import socket
from typing import Any, Dict, List, Optional

from .errors import BAD_REQUEST, DAEMON, BridgeError

#: The daemon reads at most this many bytes of a request line (docs/CONTROL.md).
MAX_CONTROL_REQUEST_BYTES = 4096
#: Bytes of a reply read at most.
MAX_REPLY_BYTES = 1 << 20


def control_request(path: str, request: Dict[str, Any], timeout: float) -> Dict[str, Any]:
    """Send ``request`` to the daemon's control socket at ``path``; return the ``result``
    of an ``{"ok": true}`` reply.

    Raises:
        BridgeError: ``BAD_REQUEST`` when the request line is over 4096 bytes; ``DAEMON``
            when the socket cannot be reached, the reply is not JSON, or the daemon
            answers an error (its code and message are in the text).
    """
    line = json.dumps(request, separators=(",", ":")).encode("utf-8") + b"\n"
    if len(line) > MAX_CONTROL_REQUEST_BYTES:
        raise BridgeError(
            BAD_REQUEST,
            f"{request.get('verb')}: the request is {len(line)} bytes, the daemon's control socket "
            f"takes at most {MAX_CONTROL_REQUEST_BYTES} (shorten the text or json)",
        )
    chunks = []
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.sendall(line)
            s.shutdown(socket.SHUT_WR)
            total = 0
            while total <= MAX_REPLY_BYTES:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
    except OSError as e:
        raise BridgeError(DAEMON, f"daemon control socket {path}: {e.strerror or e}") from e
    raw = b"".join(chunks)
    try:
        reply = json.loads(raw)
    except ValueError as e:
        raise BridgeError(DAEMON, f"daemon control socket {path}: reply is not JSON: {raw[:200]!r}") from e
    if not isinstance(reply, dict):
        raise BridgeError(DAEMON, f"daemon control socket {path}: reply is not an object: {raw[:200]!r}")
    if reply.get("ok") is not True:
        err = reply.get("error") or {}
        code = err.get("code", "?") if isinstance(err, dict) else "?"
        message = err.get("message", "") if isinstance(err, dict) else str(err)
        raise BridgeError(DAEMON, f"daemon refused {request.get('verb')}: {code}: {message}")
    result = reply.get("result")
    return result if isinstance(result, dict) else {}


def annotate(
    path: str,
    episode: str,
    at_ns: int,
    label: str,
    text: Optional[str],
    json_value: Any,
    timeout: float,
) -> Dict[str, Any]:
    """``annotate`` of ``episode`` at ``at_ns`` with ``label`` and a ``text`` or ``json``
    payload (or neither); returns the daemon's result (``seq``, ``t_ns``, ``file``, ...).

    Raises:
        BridgeError: as :func:`control_request`.
    """
    request: Dict[str, Any] = {"verb": "annotate", "episode": episode, "at": int(at_ns), "label": label}
    if text is not None:
        request["text"] = text
    if json_value is not None:
        request["json"] = json_value
    return control_request(path, request, timeout)


#: The daemon's longest wait for an episode to be finalized (docs/CONTROL.md ``timeout_ms``).
MAX_END_TIMEOUT_MS = 60_000


def end_episode(path: str, verb: str, episode: str, timeout_ms: int, timeout: float) -> Dict[str, Any]:
    """``stop`` (finalized ``complete``) or ``abort`` (``aborted``) of the open episode
    ``episode``, the daemon waiting at most ``timeout_ms`` for it to be finalized; returns
    the daemon's result (``status``, ``reason``, ``timesteps``, ``streams``, ...).

    Raises:
        BridgeError: as :func:`control_request` (``UNKNOWN_EPISODE`` when it is not open).
    """
    assert verb in ("stop", "abort"), verb
    request = {"verb": verb, "episode": episode, "timeout_ms": int(timeout_ms)}
    return control_request(path, request, timeout + timeout_ms / 1000.0)


def keep(path: str, episode: str, release: bool, timeout: float) -> Dict[str, Any]:
    """``keep`` of ``episode`` (``release``: remove the mark); returns the daemon's result
    (``episode``, ``kept``, ``changed``).

    Raises:
        BridgeError: as :func:`control_request` (``UNKNOWN_EPISODE``, ``BAD_REQUEST``).
    """
    return control_request(path, {"verb": "keep", "episode": episode, "release": bool(release)}, timeout)


def split(path: str, episode: str, timeout: float) -> Dict[str, Any]:
    """``split`` of the open single-stream episode ``episode``: what it recorded so far
    becomes a finished ``complete`` part; returns the daemon's result (``finished``,
    ``recording``, ``part``).

    Raises:
        BridgeError: as :func:`control_request` (``UNKNOWN_EPISODE``, ``NOT_SPLITTABLE`` for
            one stream ``EP/STREAM``, ``EMPTY_PART``).
    """
    return control_request(path, {"verb": "split", "episode": episode}, timeout)


def trigger(
    path: str, pre_ms: int, post_ms: int, reason: str, streams: Optional[List[str]], timeout: float
) -> Dict[str, Any]:
    """``trigger`` of the flight recorder: the window ``[t - pre, t + post]`` of the flight
    streams (``streams``: ``EPISODE`` or ``EPISODE/STREAM`` names, ``None`` = every one)
    persisted as an episode; returns the daemon's result (``episode``, ``merged``,
    ``window_start_ns``, ``window_end_ns``), at once.

    Raises:
        BridgeError: as :func:`control_request` (``NO_FLIGHT_STREAM``, ``UNKNOWN_STREAM``,
            ``NOTHING_RECORDED``, ``BAD_REQUEST`` for a negative or too long a window).
    """
    request: Dict[str, Any] = {"verb": "trigger", "pre_ms": int(pre_ms), "post_ms": int(post_ms), "reason": reason}
    if streams:
        request["streams"] = list(streams)
    return control_request(path, request, timeout)

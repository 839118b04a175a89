"""The bridge control socket: a Unix socket, one JSON request line per connection, one
JSON reply line (``{"ok": true, "result": ...}`` or ``{"ok": false, "error": {"code",
"message"}}``). Commands: ``start``, ``stop``, ``abort``, ``annotate``, ``status``, and the
daemon's ``stop_episode``, ``abort_episode``, ``keep``, ``split_episode``, ``flight_trigger``
(ingest-adapters/ros/README.md, "The
bridge control socket")."""

import json
import logging
import os
import socket
import stat
import threading
from typing import Any, Callable, Dict, Optional, Tuple, Union

from .core import DEFAULT_TRIGGER_POST_S, DEFAULT_TRIGGER_PRE_S, Bridge
from .errors import BAD_REQUEST, BridgeError, ControlSocketError
from .options import MAX_REQUEST_BYTES

log = logging.getLogger("wshard_ros.bridge")

#: Seconds a client has to send its request line, and to take the reply.
REQUEST_TIMEOUT_S = 5.0
#: Default permission bits of the socket file.
DEFAULT_MODE = 0o660
#: ``handle(request) -> reply``: a front end's own request handler (it adds to the core's
#: replies, e.g. its counters to ``status``); never raises.
Handler = Callable[[Any], Dict[str, Any]]
COMMANDS = (
    "start",
    "stop",
    "abort",
    "annotate",
    "status",
    "stop_episode",
    "abort_episode",
    "keep",
    "split_episode",
    "flight_trigger",
)


def _error(code: str, message: str) -> Dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message}}


def _field(
    request: Dict[str, Any], key: str, kind: Union[type, Tuple[type, ...]], required: bool, default: Any = None
) -> Any:
    if key not in request:
        if required:
            raise BridgeError(BAD_REQUEST, f"{request.get('cmd')}: field {key!r} missing")
        return default
    value = request[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (int in kinds and isinstance(value, bool)):
        names = " or ".join(k.__name__ for k in kinds)
        raise BridgeError(BAD_REQUEST, f"{request.get('cmd')}: field {key!r}: {value!r} is not a {names}")
    return value


def handle_request(bridge: Bridge, request: Any) -> Dict[str, Any]:
    """The reply to one decoded request (never raises: a :class:`BridgeError` becomes an
    ``ok: false`` reply with its code)."""
    if not isinstance(request, dict):
        return _error(BAD_REQUEST, f"a request is a JSON object, got {type(request).__name__}")
    cmd = request.get("cmd")
    try:
        if cmd == "start":
            metadata = request.get("metadata")
            if metadata is not None and not isinstance(metadata, (dict, str)):
                raise BridgeError(BAD_REQUEST, "start: field 'metadata': an object or a JSON string")
            bridge.start(
                _field(request, "episode_id", str, True),
                _field(request, "env_id", str, False, ""),
                metadata,
            )
            result: Dict[str, Any] = bridge.status()
        elif cmd == "stop":
            result = bridge.stop()
        elif cmd == "abort":
            result = bridge.abort()
        elif cmd == "annotate":
            result = bridge.annotate(
                _field(request, "label", str, True),
                text=_field(request, "text", str, False),
                json=request.get("json"),
                at_ns=_field(request, "at_ns", int, False),
            )
        elif cmd == "status":
            result = bridge.status()
        elif cmd in ("stop_episode", "abort_episode"):
            end = bridge.stop_episode if cmd == "stop_episode" else bridge.abort_episode
            result = end(_field(request, "episode", str, False), _field(request, "timeout_ms", int, False, 10_000))
        elif cmd == "keep":
            result = bridge.keep(_field(request, "episode", str, False), _field(request, "release", bool, False, False))
        elif cmd == "split_episode":
            result = bridge.split_episode(_field(request, "episode", str, False))
        elif cmd == "flight_trigger":
            result = bridge.flight_trigger(
                _field(request, "pre_s", (int, float), False, DEFAULT_TRIGGER_PRE_S),
                _field(request, "post_s", (int, float), False, DEFAULT_TRIGGER_POST_S),
                _field(request, "reason", str, False, ""),
                _field(request, "streams", list, False),
            )
        else:
            return _error(BAD_REQUEST, f"unknown cmd {cmd!r} (one of {', '.join(COMMANDS)})")
    except BridgeError as e:
        return _error(e.code, e.message)
    return {"ok": True, "result": result}


def _read_line(conn: socket.socket) -> bytes:
    buf = bytearray()
    while b"\n" not in buf and len(buf) <= MAX_REQUEST_BYTES:
        chunk = conn.recv(65536)
        if not chunk:
            break
        buf += chunk
    return bytes(buf).split(b"\n", 1)[0]


class ControlServer:
    """Serves :func:`handle_request` (or ``handler``, a front end's own) on the Unix socket
    ``path`` (mode ``mode``), one thread per connection; a client has ``request_timeout`` seconds to send its line
    (else ``BAD_REQUEST``) and to take the reply. :meth:`close` stops it and removes the socket file.

    Raises (constructor):
        ControlSocketError: ``path`` is served by a live process, or cannot be bound.
    """

    def __init__(
        self,
        bridge: Bridge,
        path: str,
        mode: int = DEFAULT_MODE,
        request_timeout: float = REQUEST_TIMEOUT_S,
        handler: Optional[Handler] = None,
    ) -> None:
        self.bridge = bridge
        self._handler: Handler = handler or (lambda request: handle_request(bridge, request))
        self.path = path
        self.request_timeout = request_timeout
        _remove_stale(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
            os.chmod(path, mode)
            sock.listen(16)
        except OSError as e:
            sock.close()
            raise ControlSocketError(f"bridge control socket {path}: {e.strerror or e}") from e
        self._sock = sock
        self._closed = False
        self._thread = threading.Thread(target=self._accept_loop, name="wshard-ros-control", daemon=True)
        self._thread.start()

    def _accept_loop(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                if self._closed:
                    return
                continue
            threading.Thread(target=self._serve, args=(conn,), name="wshard-ros-control-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(self.request_timeout)
                try:
                    line: Optional[bytes] = _read_line(conn)
                except socket.timeout:
                    line = None
                if line is None:
                    reply = _error(BAD_REQUEST, f"no request line within {self.request_timeout} s")
                elif len(line) > MAX_REQUEST_BYTES:
                    reply = _error(BAD_REQUEST, f"request line over {MAX_REQUEST_BYTES} bytes")
                else:
                    try:
                        request = json.loads(line)
                    except ValueError as e:
                        reply = _error(BAD_REQUEST, f"not JSON: {e}")
                    else:
                        conn.settimeout(None)  # stop drains: no bound but the daemon's timeouts
                        reply = self._handler(request)
                conn.settimeout(self.request_timeout)
                conn.sendall(json.dumps(reply, separators=(",", ":")).encode("utf-8") + b"\n")
            except OSError as e:
                log.warning("bridge control socket %s: a client: %s", self.path, e)

    def close(self) -> None:
        """Stop accepting, remove the socket file. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._thread.join(timeout=5.0)
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def __enter__(self) -> "ControlServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _remove_stale(path: str) -> None:
    """Remove a socket file nobody listens on; refuse one a live process serves."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise ControlSocketError(f"bridge control socket {path}: {e.strerror or e}") from e
    if not stat.S_ISSOCK(st.st_mode):
        raise ControlSocketError(f"bridge control socket {path}: exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)
        return
    finally:
        probe.close()
    raise ControlSocketError(f"bridge control socket {path}: in use by a running process")


def serve_control(
    bridge: Bridge, path: Optional[str] = None, mode: int = DEFAULT_MODE, handler: Optional[Handler] = None
) -> ControlServer:
    """Start the bridge control socket at ``path`` (default ``bridge.options.bridge_socket``),
    answering with ``handler`` when given (else :func:`handle_request`).

    Raises:
        ControlSocketError: as :class:`ControlServer`; ``ValueError`` when no path is given
            or configured.
    """
    where = path or bridge.options.bridge_socket
    if not where:
        raise ValueError("no bridge socket path: give one or set BridgeOptions.bridge_socket")
    return ControlServer(bridge, where, mode, handler=handler)

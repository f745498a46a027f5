"""Blocks outbound network in the subprocesses of the test suite (put on PYTHONPATH by
tests/conftest.py). Active only when ``BEHAVSIM_NETBLOCK`` lists the allowed hosts: a
``connect`` to any other host, or a name lookup of any other name, raises ``OSError``."""

import os

_allowed = [h for h in os.environ.get("BEHAVSIM_NETBLOCK", "").split(",") if h]
if _allowed:
    import socket

    _allowed_names = set(_allowed) | {"localhost"}
    _connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    class NetworkBlocked(OSError):
        pass

    def _check(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in _allowed_names:
            raise NetworkBlocked(
                f"network access blocked in tests: connect to {address[0]!r} "
                f"(allowed: {', '.join(sorted(_allowed_names))})"
            )

    def connect(self, address):
        _check(self, address)
        return _connect(self, address)

    def connect_ex(self, address):
        _check(self, address)
        return _connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host is not None and str(host if not isinstance(host, bytes) else host.decode()) not in _allowed_names:
            raise NetworkBlocked(f"network access blocked in tests: name lookup of {host!r}")
        return _getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect
    socket.socket.connect_ex = connect_ex
    socket.getaddrinfo = getaddrinfo

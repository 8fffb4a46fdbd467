#!/usr/bin/env python3
"""A loopback HTTP CONNECT proxy for the transport tests (an HTTPS proxy as `https_proxy` names
one): answers `CONNECT host:port` with `HTTP/1.1 200 Connection established`, then relays bytes
both ways. Only loopback targets are allowed. Prints `PORT <n>` once listening; appends one
line `<host:port>` per tunnel to the file given with `--log`. Exits when stdin is closed: a
process started from a Dispatch worker inherits its blocked signal mask, so SIGTERM alone may
never arrive (it is unblocked here too).

    python3 connect_proxy.py --log /tmp/tunnels.txt
"""
import os
import signal
import socket
import sys
import threading


def relay(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, target):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def handle(client):
    try:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            head += chunk
            if len(head) > 65536:
                client.close()
                return
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
        host, _, port = parts[1].rpartition(":")
        if host not in ("127.0.0.1", "localhost"):
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
        upstream = socket.create_connection(("127.0.0.1", int(port)))
        if LOG:
            with open(LOG, "a") as log:
                log.write(parts[1] + "\n")
        client.sendall(b"HTTP/1.1 200 Connection established\r\nProxy-Agent: halyard-test\r\n\r\n")
        rest = head.split(b"\r\n\r\n", 1)[1]
        if rest:
            upstream.sendall(rest)
        threading.Thread(target=relay, args=(upstream, client), daemon=True).start()
        relay(client, upstream)
    except OSError:
        client.close()


LOG = None


def main():
    global LOG
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

    def watch_stdin():
        try:
            while sys.stdin.buffer.read(1024):
                pass
        finally:
            os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    if "--log" in sys.argv:
        LOG = sys.argv[sys.argv.index("--log") + 1]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print("PORT %d" % listener.getsockname()[1], flush=True)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=handle, args=(client,), daemon=True).start()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)

#!/usr/bin/env python3
"""A TCP proxy for the tests: forwards connections to its loopback port to 127.0.0.1:TARGET,
and on command stops moving bytes without closing anything -- a connection that dies silently
(a failover without a reset, a partition), which no error reports.

Usage: tcp_proxy.py TARGET_PORT. Prints its own port on the first line, then reads commands
from standard input, one a line, answering each with "ok":
  stall    stop moving bytes, both ways, on every connection (new ones too)
  resume   move them again (what was held is delivered)
  delay MS hold every chunk MS milliseconds before passing it on (0: none): a slow database
Exits when its input closes.
"""
import socket
import sys
import threading
import time

flowing = threading.Event()
flowing.set()
delay = [0.0]  # seconds each chunk is held


def pump(source, destination):
    try:
        while True:
            flowing.wait()
            data = source.recv(65536)
            if not data:
                break
            if delay[0] > 0:
                time.sleep(delay[0])
            flowing.wait()  # bytes read just before a stall are held until it ends
            destination.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, destination):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(listener, target):
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", target))
        except OSError:
            client.close()
            continue
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


def main():
    target = int(sys.argv[1])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    print(listener.getsockname()[1], flush=True)
    threading.Thread(target=serve, args=(listener, target), daemon=True).start()
    for line in sys.stdin:
        command = line.strip()
        if command == "stall":
            flowing.clear()
        elif command == "resume":
            flowing.set()
        elif command.startswith("delay "):
            delay[0] = int(command.split()[1]) / 1000.0
        else:
            print("error unknown command: " + command, flush=True)
            continue
        print("ok", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Records docs/samples/dashboard.har: a real HAR 1.2 capture of a scripted client.

The client is a small dashboard app with no cache of its own (like most command-line and
server-side clients): it polls a few API endpoints, loads static files and sends a POST, over
HTTP/1.1 keep-alive, against Recall's loopback test origin (Tests/RecallTests/Support/
origin_server.py), in real time (about 15 seconds). Every request and response is written as a
HAR entry with the headers as sent and received, so `recall replay` sees the origin's real
Cache-Control, ETag, Last-Modified and Vary.

    python3 scripts/record-sample-har.py [OUT]      # default docs/samples/dashboard.har
"""
import datetime
import http.client
import json
import os
import random
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "samples", "dashboard.har")

server = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests/RecallTests/Support/origin_server.py")],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
port = int(server.stdout.readline().split()[1])
connection = http.client.HTTPConnection("127.0.0.1", port)
entries = []


def fetch(method, path, headers=None):
    headers = dict(headers or {})
    headers.setdefault("User-Agent", "dashboard-sample/1.0")
    headers.setdefault("Accept", "application/json")
    started = datetime.datetime.now(datetime.timezone.utc)
    begin = time.monotonic()
    connection.request(method, path, body=b"{}" if method == "POST" else None, headers=headers)
    response = connection.getresponse()
    body = response.read()
    elapsed = (time.monotonic() - begin) * 1000
    url = "http://127.0.0.1:%d%s" % (port, path)
    sent = [{"name": "Host", "value": "127.0.0.1:%d" % port}] + [{"name": k, "value": v} for k, v in headers.items()]
    entries.append({
        "startedDateTime": started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "time": round(elapsed, 3),
        "request": {
            "method": method, "url": url, "httpVersion": "HTTP/1.1", "cookies": [], "headers": sent,
            "queryString": [], "headersSize": -1, "bodySize": 2 if method == "POST" else 0,
        },
        "response": {
            "status": response.status, "statusText": response.reason, "httpVersion": "HTTP/1.1", "cookies": [],
            "headers": [{"name": k, "value": v} for k, v in response.getheaders()],
            "content": {"size": len(body), "mimeType": response.getheader("Content-Type", "application/octet-stream")},
            "redirectURL": "", "headersSize": -1, "bodySize": len(body),
        },
        "cache": {},
        "timings": {"send": 0, "wait": round(elapsed, 3), "receive": 0},
    })


random.seed(7)
static = [("/static/app.js?cc=public,max-age=31536000,immutable&size=48000&header=Content-Type:text/javascript", "*/*"),
          ("/static/logo.png?cc=public,max-age=86400&etag=logo1&size=9000&header=Content-Type:image/png", "image/png"),
          ("/static/app.css?cc=public,max-age=3600&size=12000&header=Content-Type:text/css", "text/css")]
for tick in range(30):  # one page view every 0.5 s
    if tick % 6 == 0:
        for path, accept in static:
            fetch("GET", path, {"Accept": accept})
    fetch("GET", "/api/config?cc=max-age=60&etag=cfg7")                       # fresh for a minute
    fetch("GET", "/api/feed?cc=max-age=2&etag=feed3")                         # stale after 2 s: revalidated, 304
    fetch("GET", "/api/news?cc=no-cache&etag=news1")                          # revalidated every time
    fetch("GET", "/api/me?cc=private,max-age=30", {"Authorization": "Bearer sample-token"})
    fetch("GET", "/api/prices?cc=max-age=5&vary=Accept-Language",
          {"Accept-Language": random.choice(["en", "de"])})                   # two variants
    fetch("GET", "/api/search?q=%d&cc=no-store" % random.randint(1, 5))       # never stored
    item = min(int(random.paretovariate(1.2)), 20)                            # a few popular items
    fetch("GET", "/api/items/%d?cc=max-age=10&etag=i%d" % (item, item))
    if tick % 10 == 9:
        fetch("POST", "/api/items/1?cc=max-age=10&etag=i1", {"Content-Type": "application/json"})  # invalidates item 1
    time.sleep(0.5)

server.stdin.close()
server.wait()
har = {"log": {"version": "1.2", "creator": {"name": "Recall scripts/record-sample-har.py", "version": "1"},
               "pages": [], "entries": entries}}
with open(OUT, "w") as handle:
    json.dump(har, handle, indent=1)
    handle.write("\n")
print("wrote %s: %d entries" % (OUT, len(entries)))

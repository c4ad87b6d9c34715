#!/usr/bin/env python3
"""What a change costs on a real HTTP/1.1 connection, headers included (issue 35, part 4).

Runs `jlog serve` on loopback behind a byte-counting proxy, shares a list between alice and bob
(each a `jlog` device store), then makes CHANGES changes two ways:

- polling: alice adds and syncs (`jlog sync`), then bob syncs;
- hinted: bob runs `jlog sync --watch` (the hint channel, syncing the list a hint names) and
  alice adds and pushes (`jlog sync --push-only`), as an app that listens does after a local
  change; the change counts once bob holds it.

The proxy parses each direction of each connection as HTTP/1.1 (Content-Length or chunked bodies,
the hint channel's server-sent events included) and prints one JSON object: per route (method and
path with ids folded), the requests, and the mean bytes of request headers and bodies and of
response headers and bodies (chunk framing counted with the headers); then, per change, the totals
of each way. Bodies are what `jlog-bench --only sync` meters; headers are what it leaves out.

    python3 scripts/wire-overhead.py [JLOG] [CHANGES]     (defaults: .build/debug/jlog, 20)
"""
import json, os, re, socket, subprocess, sys, tempfile, threading, time

JLOG = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/jlog")
CHANGES = int(sys.argv[2]) if len(sys.argv) > 2 else 20


SHOWN = set()


class Direction:
    """One direction of one connection, parsed as HTTP/1.1 messages as bytes arrive."""

    def __init__(self, meter, is_request, conn):
        self.meter, self.is_request, self.conn = meter, is_request, conn
        self.buf = b""
        self.state = "head"       # head | length | chunk-size | chunk-data | chunk-end
        self.left = 0
        self.route = None

    def feed(self, data):
        self.buf += data
        while True:
            if self.state == "head":
                end = self.buf.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = self.buf[:end + 4]
                self.buf = self.buf[end + 4:]
                self.start(head)
            elif self.state == "length":
                n = min(self.left, len(self.buf))
                self.count("body", n)
                self.buf, self.left = self.buf[n:], self.left - n
                if self.left:
                    return
                self.done()
            elif self.state == "chunk-size":
                end = self.buf.find(b"\r\n")
                if end < 0:
                    return
                size = int(self.buf[:end].split(b";")[0], 16)
                self.count("head", end + 2)
                self.buf = self.buf[end + 2:]
                self.left, self.state = size, ("chunk-data" if size else "chunk-end")
            elif self.state == "chunk-data":
                n = min(self.left, len(self.buf))
                self.count("body", n)
                self.buf, self.left = self.buf[n:], self.left - n
                if self.left:
                    return
                self.state = "chunk-crlf"
            elif self.state == "chunk-crlf":
                if len(self.buf) < 2:
                    return
                self.count("head", 2)
                self.buf, self.state = self.buf[2:], "chunk-size"
            elif self.state == "chunk-end":
                if len(self.buf) < 2:
                    return
                self.count("head", 2)
                self.buf = self.buf[2:]
                self.done()

    def start(self, head):
        text = head.decode("latin-1")
        first = text.split("\r\n", 1)[0]
        if self.is_request:
            method, path = first.split(" ")[:2]
            path = path.split("?")[0]
            path = re.sub(r"/v1/zones/[^/]+/[^/]+", "/v1/zones/OWNER/NAME", path)
            self.route = method + " " + path
            self.conn.routes.append(self.route)
            self.meter.add(self.route, "requests", 1)
        else:
            self.route = self.conn.routes.pop(0) if self.conn.routes else "?"
        if os.environ.get("SHOW_HEADS") and (self.is_request, self.route) not in SHOWN:
            SHOWN.add((self.is_request, self.route))
            sys.stderr.write(text + "\n")
        self.count("head", len(head))
        headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in text.split("\r\n")[1:] if l)}
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self.state = "chunk-size"
        else:
            self.left = int(headers.get("content-length", "0"))
            self.state = "length"

    def count(self, part, n):
        side = "request" if self.is_request else "response"
        self.meter.add(self.route, side + "_" + part, n)

    def done(self):
        self.state = "head"


class Meter:
    def __init__(self):
        self.lock = threading.Lock()
        self.routes = {}

    def add(self, route, field, n):
        with self.lock:
            r = self.routes.setdefault(route, {})
            r[field] = r.get(field, 0) + n

    def take(self):
        with self.lock:
            out, self.routes = self.routes, {}
            return out


class Connection:
    def __init__(self):
        self.routes = []


def proxy(listener, target, meter):
    def pump(src, dst, direction):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                direction.feed(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    while True:
        client, _ = listener.accept()
        server = socket.create_connection(target)
        conn = Connection()
        threading.Thread(target=pump, args=(client, server, Direction(meter, True, conn)), daemon=True).start()
        threading.Thread(target=pump, args=(server, client, Direction(meter, False, conn)), daemon=True).start()


def run(*args, **kw):
    return subprocess.run([JLOG, *args], check=True, capture_output=True, text=True, **kw).stdout.strip()


def summary(routes, changes):
    fields = ["request_head", "request_body", "response_head", "response_body"]
    per_route = {}
    totals = dict.fromkeys(fields, 0)
    requests = 0
    for route, r in sorted(routes.items()):
        n = r.get("requests", 0)
        requests += n
        per_route[route] = {"requests": n, **{f + "_mean": round(r.get(f, 0) / max(n, 1), 1) for f in fields}}
        for f in fields:
            totals[f] += r.get(f, 0)
    per_change = {f: round(totals[f] / changes, 1) for f in fields}
    per_change["requests"] = round(requests / changes, 2)
    per_change["headers"] = round((totals["request_head"] + totals["response_head"]) / changes, 1)
    per_change["bodies"] = round((totals["request_body"] + totals["response_body"]) / changes, 1)
    per_change["all"] = round(sum(totals.values()) / changes, 1)
    return {"per_change": per_change, "routes": per_route}


def main():
    work = tempfile.mkdtemp(prefix="jlog-wire-")
    os.chdir(work)
    run("accounts", "add", "server.wal", "alice", "--output", "alice.cred")
    run("accounts", "add", "server.wal", "bob", "--output", "bob.cred")
    server = subprocess.Popen([JLOG, "serve", "server.wal", "--listen", "127.0.0.1:0", "--port-file", "port"],
                              stdout=subprocess.DEVNULL, stderr=open("server.log", "w"))
    watcher = None
    try:
        for _ in range(200):
            if os.path.exists("port") and open("port").read().strip():
                break
            time.sleep(0.05)
        port = int(open("port").read())
        meter = Meter()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        threading.Thread(target=proxy, args=(listener, ("127.0.0.1", port), meter), daemon=True).start()
        url = "http://127.0.0.1:%d" % listener.getsockname()[1]
        alice = ["--server", url, "--credential", "alice.cred"]
        bob = ["--server", url, "--credential", "bob.cred"]
        run("sync", "alice.wal", *alice, "--device", "phone")
        run("create-list", "alice.wal", "weekly")
        run("add", "alice.wal", "--zone", "weekly", "Milk")
        run("sync", "alice.wal", *alice)
        run("sync", "bob.wal", *bob, "--device", "laptop")
        invitation = run("share", "alice.wal", "--zone", "weekly", "--with", "bob", *alice)
        run("accept", "bob.wal", invitation, *bob)
        run("sync", "bob.wal", *bob)
        run("sync", "alice.wal", *alice)
        meter.take()

        for i in range(CHANGES):
            run("add", "alice.wal", "--zone", "weekly", "polled %d" % i)
            run("sync", "alice.wal", *alice)
            run("sync", "bob.wal", *bob)
        polling = summary(meter.take(), CHANGES)

        watcher = subprocess.Popen([JLOG, "sync", "bob.wal", *bob, "--watch", "--interval", "3600", "--json"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        watcher.stdout.readline()          # the sync the channel's opening makes
        time.sleep(0.2)
        meter.take()
        for i in range(CHANGES):
            run("add", "alice.wal", "--zone", "weekly", "hinted %d" % i)
            run("sync", "alice.wal", *alice, "--push-only")
            line = json.loads(watcher.stdout.readline())
            assert line.get("complete", True), line
        time.sleep(0.2)
        hinted = summary(meter.take(), CHANGES)
        shown = run("show", "bob.wal", "--zone", "alice/weekly")
        assert "hinted %d" % (CHANGES - 1) in shown, "bob lacks the last change"
        print(json.dumps({"changes": CHANGES, "polling": polling, "hinted": hinted}, indent=1))
    finally:
        if watcher:
            watcher.terminate()
            watcher.wait()
        server.terminate()
        server.wait()
        subprocess.run(["rm", "-rf", work])


main()

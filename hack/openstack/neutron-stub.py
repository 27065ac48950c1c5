#!/usr/bin/python3
"""A stand-in for Neutron, for the local test OpenStack.

Nova asks Neutron about ports, networks and security groups when it shows or
lists servers. Tests boot servers with no network, so every collection here is
empty. Nothing is stored and no token is checked: this is not Neutron.

Started by hack/openstack/openstack.sh as:
    /usr/bin/python3 neutron-stub.py --host 127.0.0.1 --port 19696
"""

import argparse
import json
import re
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

COLLECTION = re.compile(r"^/v2\.0/([a-z][a-z0-9_-]*?)(?:\.json)?$")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "anvil-neutron-stub"

    def _reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Openstack-Request-Id", "req-" + str(uuid.uuid4()))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _not_found(self):
        self._reply(404, {"NeutronError": {
            "type": "HTTPNotFound",
            "message": "The Neutron stub has no %s" % urlsplit(self.path).path,
            "detail": ""}})

    def _drain(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)

    def do_GET(self):
        path = urlsplit(self.path).path.rstrip("/")
        host = self.headers.get("Host") or "%s:%d" % self.server.server_address[:2]
        if path == "":
            self._reply(200, {"versions": [{
                "id": "v2.0", "status": "CURRENT",
                "links": [{"rel": "self", "href": "http://%s/v2.0/" % host}]}]})
            return
        if path == "/v2.0":
            self._reply(200, {"resources": []})
            return
        match = COLLECTION.match(path)
        if match:
            # /v2.0/ports -> {"ports": []}, /v2.0/security-groups -> {"security_groups": []}
            self._reply(200, {match.group(1).replace("-", "_"): []})
            return
        self._not_found()

    do_HEAD = do_GET

    def do_POST(self):
        self._drain()
        self._not_found()

    do_PUT = do_POST
    do_DELETE = do_POST

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.log_date_time_string(), fmt % args))
        sys.stderr.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=19696)
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    sys.stderr.write("neutron stub listening on %s:%d\n" % (args.host, args.port))
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""A stand-in for Glance, for the local test OpenStack.

It knows exactly one image, "anvil-fake-image" (a public, active, 1 MiB raw
image with a fixed id), and serves no image data. That is enough for Nova to
accept a boot request and for nova-compute's fake driver to "spawn" it, and
for `openstack server list` to resolve image names. Uploads and changes are
refused. No token is checked: this is not Glance.

Started by hack/openstack/openstack.sh as:
    /usr/bin/python3 image-stub.py --host 127.0.0.1 --port 19292
"""

import argparse
import json
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

IMAGE_ID = "a0a0a0a0-0000-4000-8000-000000000001"
IMAGE_NAME = "anvil-fake-image"

IMAGE = {
    "id": IMAGE_ID,
    "name": IMAGE_NAME,
    "status": "active",
    "visibility": "public",
    "protected": True,
    "os_hidden": False,
    "owner": None,
    "disk_format": "raw",
    "container_format": "bare",
    "size": 1048576,
    "virtual_size": 1048576,
    "min_disk": 0,
    "min_ram": 0,
    "checksum": "b6d81b360a5672d80c27430f39153e2c",
    "os_hash_algo": "sha512",
    "os_hash_value": ("5c9a0e8a7e4a6d7b55b2c6c5d5bd4a3bbf4a1c1f1d6d7f0f6c0e5b9d4e1c2a3b"
                      "4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b"),
    "tags": [],
    "created_at": "2024-01-01T00:00:00Z",
    "updated_at": "2024-01-01T00:00:00Z",
    "self": "/v2/images/" + IMAGE_ID,
    "file": "/v2/images/%s/file" % IMAGE_ID,
    "schema": "/v2/schemas/image",
}

# A cut-down form of Glance's image schema. glanceclient builds its image
# model from it, and Nova uses it to tell base attributes from properties.
_NULL_STR = {"type": ["null", "string"]}
_NULL_INT = {"type": ["null", "integer"]}
IMAGE_SCHEMA = {
    "name": "image",
    "additionalProperties": {"type": "string"},
    "links": [{"href": "{self}", "rel": "self"}, {"href": "{file}", "rel": "enclosure"},
              {"href": "{schema}", "rel": "describedby"}],
    "properties": {
        "id": {"type": "string"},
        "name": _NULL_STR,
        "status": {"type": "string", "readOnly": True},
        "visibility": {"type": "string"},
        "protected": {"type": "boolean"},
        "os_hidden": {"type": "boolean"},
        "owner": _NULL_STR,
        "disk_format": _NULL_STR,
        "container_format": _NULL_STR,
        "size": _NULL_INT,
        "virtual_size": _NULL_INT,
        "min_disk": {"type": "integer"},
        "min_ram": {"type": "integer"},
        "checksum": _NULL_STR,
        "os_hash_algo": _NULL_STR,
        "os_hash_value": _NULL_STR,
        "tags": {"type": "array", "items": {"type": "string"}},
        "created_at": {"type": "string"},
        "updated_at": {"type": "string"},
        "self": {"type": "string"},
        "file": {"type": "string"},
        "schema": {"type": "string"},
        "direct_url": {"type": "string"},
        "locations": {"type": "array"},
    },
}


def images_schema():
    return {"name": "images",
            "properties": {"images": {"type": "array", "items": IMAGE_SCHEMA},
                           "schema": {"type": "string"}, "first": {"type": "string"},
                           "next": {"type": "string"}},
            "links": [{"href": "{first}", "rel": "first"}, {"href": "{next}", "rel": "next"},
                      {"href": "{schema}", "rel": "describedby"}]}


def matches(query):
    """Whether the one image passes the list filters Nova and the CLI use."""
    for key in ("id", "name", "status", "visibility", "disk_format", "container_format"):
        for want in query.get(key, []):
            if want.startswith("in:"):
                if str(IMAGE.get(key)) not in want[3:].split(","):
                    return False
            elif str(IMAGE.get(key)) != want:
                return False
    return "marker" not in query


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "anvil-image-stub"

    def _reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Openstack-Request-Id", "req-" + str(uuid.uuid4()))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, code, title):
        self._reply(code, {"code": code, "title": title,
                           "message": "The image stub has no %s %s" % (self.command, urlsplit(self.path).path)})

    def _drain(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)

    def do_GET(self):
        url = urlsplit(self.path)
        path = url.path.rstrip("/")
        host = self.headers.get("Host") or "%s:%d" % self.server.server_address[:2]
        if path in ("", "/versions"):
            self._reply(300 if path == "" else 200, {"versions": [{
                "id": "v2.9", "status": "CURRENT",
                "links": [{"rel": "self", "href": "http://%s/v2/" % host}]}]})
        elif path == "/v2/schemas/image":
            self._reply(200, IMAGE_SCHEMA)
        elif path == "/v2/schemas/images":
            self._reply(200, images_schema())
        elif path == "/v2/images":
            query = parse_qs(url.query)
            found = [IMAGE] if matches(query) else []
            self._reply(200, {"images": found, "first": "/v2/images",
                              "schema": "/v2/schemas/images"})
        elif path == "/v2/images/" + IMAGE_ID:
            self._reply(200, IMAGE)
        else:
            self._error(404, "Not Found")

    do_HEAD = do_GET

    def do_POST(self):
        self._drain()
        self._error(403, "Forbidden")

    do_PUT = do_POST
    do_PATCH = do_POST
    do_DELETE = do_POST

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.log_date_time_string(), fmt % args))
        sys.stderr.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=19292)
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    sys.stderr.write("image stub listening on %s:%d, image %s (%s)\n"
                     % (args.host, args.port, IMAGE_NAME, IMAGE_ID))
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()

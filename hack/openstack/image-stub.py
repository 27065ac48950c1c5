#!/usr/bin/python3
"""A stand-in for Glance, for the local test OpenStack.

It always knows one image, "anvil-fake-image" (a public, active, 1 MiB raw
image with a fixed id), which cannot be changed or deleted. Beyond it, it
keeps the images clients create: POST /v2/images makes a queued image, PUT
/v2/images/<id>/file reads the upload, keeps only its size and hashes, and
makes the image active, and DELETE /v2/images/<id> removes it. With --state
DIR the created images are written to DIR/images.json, so a restart keeps
them. No image data is ever served, which is enough for Nova to accept a
boot request and for nova-compute's fake driver to "spawn" it, and for
`openstack server list` to resolve image names. PATCH is refused. No token
is checked, so every image is visible to everyone: this is not Glance.

Started by hack/openstack/openstack.sh as:
    /usr/bin/python3 image-stub.py --host 127.0.0.1 --port 19292 --state DIR
"""

import argparse
import copy
import hashlib
import json
import os
import re
import sys
import threading
import time
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

# What a client may set on create, with the check each value must pass.
# Glance's own enums, so that Nova's ImageMeta accepts what we store.
DISK_FORMATS = ("ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop")
CONTAINER_FORMATS = ("ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed")
VISIBILITIES = ("public", "private", "shared", "community")
SETTABLE = {
    "name": lambda v: v is None or isinstance(v, str),
    "disk_format": lambda v: v is None or v in DISK_FORMATS,
    "container_format": lambda v: v is None or v in CONTAINER_FORMATS,
    "visibility": lambda v: v in VISIBILITIES,
    "protected": lambda v: isinstance(v, bool),
    "os_hidden": lambda v: isinstance(v, bool),
    "min_disk": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
    "min_ram": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
    "tags": lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v),
}
# Keys only the stub sets. Anything else must be a string: Glance's
# additionalProperties, kept as given.
READ_ONLY = set(IMAGE) - set(SETTABLE) - {"id"}
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$")


def images_schema():
    return {"name": "images",
            "properties": {"images": {"type": "array", "items": IMAGE_SCHEMA},
                           "schema": {"type": "string"}, "first": {"type": "string"},
                           "next": {"type": "string"}},
            "links": [{"href": "{first}", "rel": "first"}, {"href": "{next}", "rel": "next"},
                      {"href": "{schema}", "rel": "describedby"}]}


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def matches(image, query):
    """Whether an image passes the list filters Nova and the CLI use."""
    for key in ("id", "name", "status", "visibility", "disk_format", "container_format"):
        for want in query.get(key, []):
            if want.startswith("in:"):
                if str(image.get(key)) not in want[3:].split(","):
                    return False
            elif str(image.get(key)) != want:
                return False
    return True


def new_image(body):
    """Builds a queued image from a create request, or raises ValueError.

    It has every key the fixed image has, in the same types, because Nova
    reads a created image exactly as it reads the fixed one.
    """
    for key, value in body.items():
        if key == "id":
            if not isinstance(value, str) or not UUID_RE.match(value):
                raise ValueError("id must be a UUID")
        elif key in SETTABLE:
            if not SETTABLE[key](value):
                raise ValueError("invalid value for %s" % key)
        elif key in READ_ONLY:
            raise ValueError("%s is read-only" % key)
        elif not isinstance(value, str):
            raise ValueError("property %s must be a string" % key)
    image_id = str(uuid.UUID(body["id"])) if "id" in body else str(uuid.uuid4())
    stamp = now()
    image = {
        "id": image_id, "name": None, "status": "queued", "visibility": "shared",
        "protected": False, "os_hidden": False, "owner": None,
        "disk_format": None, "container_format": None, "size": None, "virtual_size": None,
        "min_disk": 0, "min_ram": 0, "checksum": None, "os_hash_algo": None,
        "os_hash_value": None, "tags": [], "created_at": stamp, "updated_at": stamp,
        "self": "/v2/images/" + image_id, "file": "/v2/images/%s/file" % image_id,
        "schema": "/v2/schemas/image",
    }
    image.update({k: v for k, v in body.items() if k != "id"})
    return image


class Store:
    """The created images, in memory and, with a path, on disk."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.images = {}
        if path and os.path.exists(path):
            with open(path) as f:
                for image in json.load(f):
                    self.images[image["id"]] = image

    def save(self):
        """Writes every created image; the caller holds the lock."""
        if not self.path:
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(sorted(self.images.values(), key=lambda i: i["created_at"]), f, indent=1)
        os.replace(tmp, self.path)

    def all(self):
        with self.lock:
            return [IMAGE] + [copy.deepcopy(i) for i in self.images.values()]

    def get(self, image_id):
        if image_id == IMAGE_ID:
            return IMAGE
        with self.lock:
            image = self.images.get(image_id)
            return copy.deepcopy(image) if image else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "anvil-image-stub"

    def _reply(self, code, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(code)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Openstack-Request-Id", "req-" + str(uuid.uuid4()))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, code, title, message=None):
        if message is None:
            message = "The image stub has no %s %s" % (self.command, urlsplit(self.path).path)
        self._reply(code, {"code": code, "title": title, "message": message})

    def _chunks(self):
        """Yields the request body, whether sized or chunked."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    # The trailer ends with an empty line.
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return
                yield self.rfile.read(size)
                self.rfile.readline()
        else:
            left = int(self.headers.get("Content-Length") or 0)
            while left > 0:
                chunk = self.rfile.read(min(left, 1 << 16))
                if not chunk:
                    return
                left -= len(chunk)
                yield chunk

    def _drain(self):
        for _ in self._chunks():
            pass

    def _image_path(self):
        """Splits /v2/images/<id>[/file] into (id, is_file), or (None, False)."""
        parts = urlsplit(self.path).path.rstrip("/").split("/")
        if len(parts) in (4, 5) and parts[1:3] == ["v2", "images"] and parts[3]:
            if len(parts) == 4:
                return parts[3], False
            if parts[4] == "file":
                return parts[3], True
        return None, False

    def do_GET(self):
        url = urlsplit(self.path)
        path = url.path.rstrip("/")
        host = self.headers.get("Host") or "%s:%d" % self.server.server_address[:2]
        image_id, is_file = self._image_path()
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
            # One page holds everything, so a marker asks for the empty next one.
            found = [] if "marker" in query else [i for i in self.server.store.all() if matches(i, query)]
            self._reply(200, {"images": found, "first": "/v2/images",
                              "schema": "/v2/schemas/images"})
        elif image_id and not is_file and self.server.store.get(image_id):
            self._reply(200, self.server.store.get(image_id))
        else:
            self._error(404, "Not Found")

    do_HEAD = do_GET

    def do_POST(self):
        if urlsplit(self.path).path.rstrip("/") != "/v2/images":
            self._drain()
            self._error(403, "Forbidden")
            return
        try:
            body = json.loads(b"".join(self._chunks()) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            image = new_image(body)
        except ValueError as e:
            self._error(400, "Bad Request", str(e))
            return
        store = self.server.store
        with store.lock:
            if image["id"] == IMAGE_ID or image["id"] in store.images:
                self._error(409, "Conflict", "An image with id %s already exists" % image["id"])
                return
            store.images[image["id"]] = image
            store.save()
        self.send_response(201)
        data = json.dumps(image).encode()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Location", "/v2/images/" + image["id"])
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self):
        image_id, is_file = self._image_path()
        store = self.server.store
        if not is_file or image_id == IMAGE_ID:
            self._drain()
            self._error(403, "Forbidden")
            return
        with store.lock:
            image = store.images.get(image_id)
            status = image and image["status"]
        if image is None:
            self._drain()
            self._error(404, "Not Found")
            return
        if status != "queued":
            self._drain()
            self._error(409, "Conflict", "Image status transition from %s to saving is not allowed" % status)
            return
        size, md5, sha512 = 0, hashlib.md5(), hashlib.sha512()
        for chunk in self._chunks():
            size += len(chunk)
            md5.update(chunk)
            sha512.update(chunk)
        with store.lock:
            image = store.images.get(image_id)
            if image is None:
                self._error(404, "Not Found")
                return
            image.update({"status": "active", "size": size, "virtual_size": size,
                          "checksum": md5.hexdigest(), "os_hash_algo": "sha512",
                          "os_hash_value": sha512.hexdigest(), "updated_at": now()})
            store.save()
        self._reply(204)

    def do_DELETE(self):
        image_id, is_file = self._image_path()
        store = self.server.store
        self._drain()
        if not image_id or is_file or image_id == IMAGE_ID:
            self._error(403, "Forbidden")
            return
        with store.lock:
            image = store.images.get(image_id)
            if image is None:
                self._error(404, "Not Found")
                return
            if image.get("protected"):
                self._error(403, "Forbidden", "Image %s is protected and cannot be deleted" % image_id)
                return
            del store.images[image_id]
            store.save()
        self._reply(204)

    def do_PATCH(self):
        self._drain()
        self._error(403, "Forbidden")

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.log_date_time_string(), fmt % args))
        sys.stderr.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=19292)
    parser.add_argument("--state", default="",
                        help="directory for images.json, the created images; without it they live in memory only")
    args = parser.parse_args()
    path = ""
    if args.state:
        os.makedirs(args.state, exist_ok=True)
        path = os.path.join(args.state, "images.json")
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    server.store = Store(path)
    sys.stderr.write("image stub listening on %s:%d, image %s (%s), %d created image(s)%s\n"
                     % (args.host, args.port, IMAGE_NAME, IMAGE_ID, len(server.store.images),
                        " in " + path if path else ""))
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()

# Preflight check of a NovaCompute pool, run as a Job on the pool's cluster
# from the pool's image before its DaemonSet starts. It reads the contract
# directory given as its one argument and checks, in order, the message bus
# (TCP, TLS, AMQP login), Keystone (a token for the service user) and
# Placement (found in the token's catalog unless pinned). It exits with the
# code of the first failure; the operator turns that code into the reason
# and message of PreflightReady. It prints only hosts, ports and error
# classes: never a URL with a user, a password or a token.
import configparser
import json
import os
import socket
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request

OK, BUS_TCP, BUS_TLS, BUS_AUTH = 0, 10, 11, 12
KEYSTONE_TCP, KEYSTONE_TLS, KEYSTONE_AUTH = 20, 21, 22
PLACEMENT_TCP, PLACEMENT_TLS = 30, 31
UNEXPECTED = 40
TIMEOUT = 10


def undouble(value):
    # The contract doubles every dollar sign for oslo.config; the raw value
    # is what a client sends. The sign is spelled chr(36) because the script
    # travels in the container's command, where the kubelet turns a doubled
    # sign into one and expands dollar-parenthesis references.
    dollar = chr(36)
    return value.replace(dollar * 2, dollar)


def read(directory, key):
    with open(os.path.join(directory, key)) as f:
        return f.read().strip()


def fail(code, what):
    print("preflight: " + what, file=sys.stderr)
    sys.exit(code)


def tls_context(cafile):
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def check_bus(directory, conf):
    import amqp
    url = urllib.parse.urlsplit(undouble(read(directory, "transport_url")))
    use_tls = conf.getboolean("oslo_messaging_rabbit", "ssl", fallback=False)
    cafile = os.path.join(directory, "ca.crt") if use_tls else None
    vhost = urllib.parse.unquote(url.path[1:]) or "/"
    last = (BUS_TCP, "no bus host in the contract")
    # A transport_url may list several hosts; one that answers is enough.
    for hostinfo in url.netloc.split(","):
        creds, _, hostport = hostinfo.rpartition("@")
        user, _, password = creds.partition(":")
        host, _, port = hostport.rpartition(":")
        host, port = host.strip("[]"), int(port or (5671 if use_tls else 5672))
        where = "%s:%d" % (host, port)
        try:
            socket.create_connection((host, port), TIMEOUT).close()
        except OSError as e:
            last = (BUS_TCP, "bus %s: TCP: %s" % (where, type(e).__name__))
            continue
        ctx = tls_context(cafile) if use_tls else None
        if ctx is not None:
            try:
                with socket.create_connection((host, port), TIMEOUT) as raw:
                    ctx.wrap_socket(raw, server_hostname=host).close()
            except (ssl.SSLError, OSError) as e:
                last = (BUS_TLS, "bus %s: TLS: %s" % (where, type(e).__name__))
                continue
        # py-amqp takes the options of its own TLS wrapper, as
        # oslo.messaging hands them, not a context.
        sslopts = {"ca_certs": cafile, "cert_reqs": ssl.CERT_REQUIRED, "server_hostname": host} if use_tls else False
        conn = amqp.Connection(host=where, userid=urllib.parse.unquote(user), password=urllib.parse.unquote(password),
                               virtual_host=vhost, ssl=sslopts, connect_timeout=TIMEOUT)
        try:
            conn.connect()
            conn.close()
            print("preflight: bus %s: logged in" % where)
            return
        except amqp.exceptions.AccessRefused:
            last = (BUS_AUTH, "bus %s: login refused" % where)
        except amqp.exceptions.NotAllowed:
            last = (BUS_AUTH, "bus %s: virtual host refused" % where)
        except Exception as e:
            last = (BUS_AUTH, "bus %s: AMQP: %s" % (where, type(e).__name__))
    fail(*last)


def http_context():
    # nova-compute's clients (requests) trust REQUESTS_CA_BUNDLE when it is
    # set, else the system store; the check trusts the same.
    return tls_context(os.environ.get("REQUESTS_CA_BUNDLE") or None)


def request(url, codes, data=None, headers=None):
    # Returns the response, or exits under the TCP or TLS code of the
    # service; an HTTP error status is returned, not raised.
    tcp, tls = codes
    req = urllib.request.Request(url, data=data, headers=headers or {})
    where = urllib.parse.urlsplit(url).netloc
    try:
        return urllib.request.urlopen(req, timeout=TIMEOUT, context=http_context())
    except urllib.error.HTTPError as e:
        return e
    except urllib.error.URLError as e:
        if isinstance(e.reason, ssl.SSLError):
            fail(tls, "%s: TLS: %s" % (where, type(e.reason).__name__))
        fail(tcp, "%s: TCP: %s" % (where, type(e.reason).__name__))
    except ssl.SSLError as e:
        fail(tls, "%s: TLS: %s" % (where, type(e).__name__))
    except OSError as e:
        fail(tcp, "%s: TCP: %s" % (where, type(e).__name__))


def check_keystone(directory, conf):
    section = "placement"
    auth_url = conf.get(section, "auth_url").rstrip("/")
    if not auth_url.endswith("/v3"):
        auth_url += "/v3"
    body = {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": conf.get(section, "username"),
            "domain": {"name": conf.get(section, "user_domain_name")},
            "password": undouble(read(directory, "password"))}}},
        "scope": {"project": {"name": conf.get(section, "project_name"),
                              "domain": {"name": conf.get(section, "project_domain_name")}}}}}
    resp = request(auth_url + "/auth/tokens", (KEYSTONE_TCP, KEYSTONE_TLS), json.dumps(body).encode(),
                   {"Content-Type": "application/json"})
    if resp.status in (401, 403):
        fail(KEYSTONE_AUTH, "keystone: the service user was refused (HTTP %d)" % resp.status)
    if resp.status != 201:
        fail(UNEXPECTED, "keystone: unexpected HTTP %d" % resp.status)
    print("preflight: keystone: token issued")
    return resp.headers.get("X-Subject-Token"), json.load(resp)["token"].get("catalog", [])


def placement_url(conf, catalog):
    override = conf.get("placement", "endpoint_override", fallback="")
    if override:
        return override
    region = conf.get("placement", "region_name", fallback="")
    interface = conf.get("placement", "valid_interfaces", fallback="internal").split(",")[0].strip()
    for svc in catalog:
        if svc.get("type") != "placement":
            continue
        for ep in svc.get("endpoints", []):
            if ep.get("interface") == interface and (not region or ep.get("region_id") == region):
                return ep["url"]
    fail(PLACEMENT_TCP, "placement: no %s endpoint in the catalog" % interface)


def main():
    directory = sys.argv[1]
    conf = configparser.ConfigParser(interpolation=None, strict=False)
    conf.read(os.path.join(directory, "nova-compute.conf"))
    check_bus(directory, conf)
    token, catalog = check_keystone(directory, conf)
    url = placement_url(conf, catalog)
    resp = request(url, (PLACEMENT_TCP, PLACEMENT_TLS), headers={"X-Auth-Token": token})
    if resp.status >= 500:
        fail(PLACEMENT_TCP, "placement: HTTP %d" % resp.status)
    print("preflight: placement: answered HTTP %d" % resp.status)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Keystone catalog helper for hack/openstack/openstack.sh.

    catalog.py register < spec.json
        Creates, or corrects, the project "service", the service users with
        the spec's roles on it (admin unless it names others), and each
        service with its endpoints. Running it
        twice changes nothing. Passwords are read from the files the spec
        names, never from the command line.

    catalog.py unregister < spec.json
        Deletes the services of the spec that register created (same name,
        type and description), with their endpoints.

    catalog.py wait-compute --auth-url URL --admin-password-file FILE
                            [--since EPOCH --fresh BINARY...]
        Waits until nova-conductor and nova-scheduler report "up". A binary
        named by --fresh was just (re)started: its old record does not count
        until it has reported again after EPOCH.

    catalog.py wait-network --auth-url URL --admin-password-file FILE
        Waits until the network service of the catalog lists its agents
        (GET /v2.0/agents, what "openstack network agent list" asks). ML2/OVN
        answers from the OVN Southbound database, so this also proves that
        neutron-server reaches OVN.

Run it with /usr/bin/python3: it needs Debian's keystoneauth1 and
keystoneclient.
"""

import argparse
import datetime
import json
import sys
import time

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3
from keystoneclient.v3 import client as ks_client

DOMAIN = "default"


def read_secret(path):
    with open(path) as f:
        return f.read().strip()


def admin_session(auth_url, password):
    auth = v3.Password(auth_url=auth_url, username="admin", password=password,
                       project_name="admin", user_domain_id=DOMAIN,
                       project_domain_id=DOMAIN)
    return ks_session.Session(auth=auth)


def password_works(auth_url, user, password):
    auth = v3.Password(auth_url=auth_url, username=user, password=password,
                       project_name="service", user_domain_id=DOMAIN,
                       project_domain_id=DOMAIN)
    try:
        ks_session.Session(auth=auth).get_token()
        return True
    except ks_exc.Unauthorized:
        return False


def one(items, what):
    if len(items) > 1:
        sys.exit("catalog: more than one %s" % what)
    return items[0] if items else None


def register(spec):
    auth_url = spec["auth_url"]
    region = spec["region"]
    sess = admin_session(auth_url, read_secret(spec["admin_password_file"]))
    ks = ks_client.Client(session=sess, endpoint_override=auth_url,
                          region_name=region)

    if region not in [r.id for r in ks.regions.list()]:
        ks.regions.create(id=region)
        print("created region", region)

    project = one(ks.projects.list(name="service", domain=DOMAIN), "project service")
    if project is None:
        project = ks.projects.create("service", DOMAIN,
                                     description="Service users of the local OpenStack")
        print("created project service")
    roles = []
    for name in spec.get("roles", ["admin"]):
        role = one(ks.roles.list(name=name), "role " + name)
        if role is None and name == "admin":
            sys.exit("catalog: role admin is missing; did keystone-manage bootstrap run?")
        if role is None:
            role = ks.roles.create(name)
            print("created role", name)
        roles.append(role)

    for name, password_file in sorted(spec["users"].items()):
        password = read_secret(password_file)
        user = one(ks.users.list(name=name, domain=DOMAIN), "user " + name)
        if user is None:
            user = ks.users.create(name, domain=DOMAIN, password=password,
                                   default_project=project, enabled=True)
            print("created user", name)
        for role in roles:
            ks.roles.grant(role, user=user, project=project)
        if not password_works(auth_url, name, password):
            ks.users.update(user, password=password, enabled=True)
            print("reset the password of user", name)

    for svc in spec["services"]:
        found = [s for s in ks.services.list(type=svc["type"])]
        described = [svc.get("description")] + svc.get("previous_descriptions", [])

        def ours(s):
            # This script's own row: its name, and its description or none
            # (keystone-manage bootstrap writes none). A same-named service
            # someone else registered, an Anvil ControlPlane's say, is not.
            desc = getattr(s, "description", None)
            return s.name == svc["name"] and (not desc or desc in described)

        service = next((s for s in found if ours(s)), None)
        if service is None:
            service = ks.services.create(svc["name"], svc["type"],
                                         description=svc.get("description"),
                                         enabled=True)
            print("created service", svc["name"], svc["type"])
        elif svc.get("description") and getattr(service, "description", None) != svc["description"]:
            # A row of an earlier description (the Neutron stub's, say)
            # now names what runs.
            service = ks.services.update(service, description=svc["description"])
            print("updated the description of service", svc["name"], svc["type"])
        for other in found:
            # Only a duplicate of this script's own making goes; a service
            # of the same type that someone else registered (an Anvil
            # ControlPlane's, say) is left alone.
            if other.id != service.id and ours(other):
                ks.services.delete(other)
                print("deleted duplicate service", other.name, other.type)
        existing = ks.endpoints.list(service=service, region_id=region)
        for interface, url in sorted(svc["endpoints"].items()):
            mine = [e for e in existing if e.interface == interface]
            keep = next((e for e in mine if e.url == url), None)
            for e in mine:
                if keep is None or e.id != keep.id:
                    ks.endpoints.delete(e)
                    print("deleted endpoint", svc["type"], interface, e.url)
            if keep is None:
                ks.endpoints.create(service, url, interface=interface,
                                    region=region, enabled=True)
                print("created endpoint", svc["type"], interface, url)
    print("catalog registered")


def unregister(spec):
    """Deletes the services of the spec that this script registered: same
    name, type and description. Their endpoints go with them."""
    auth_url = spec["auth_url"]
    sess = admin_session(auth_url, read_secret(spec["admin_password_file"]))
    ks = ks_client.Client(session=sess, endpoint_override=auth_url,
                          region_name=spec["region"])
    for svc in spec["services"]:
        for s in ks.services.list(type=svc["type"]):
            described = [svc.get("description")] + svc.get("previous_descriptions", [])
            if s.name == svc["name"] and getattr(s, "description", None) in described:
                ks.services.delete(s)
                print("deleted service", s.name, s.type)
    print("catalog unregistered")


def fresh_enough(service, args):
    """A service started by this run counts once it has reported since."""
    if service["binary"] not in args.fresh or not service.get("updated_at"):
        return service["binary"] not in args.fresh
    updated = datetime.datetime.fromisoformat(service["updated_at"].split(".")[0])
    updated = updated.replace(tzinfo=datetime.timezone.utc).timestamp()
    return updated >= args.since - 1


def wait_compute(args):
    sess = admin_session(args.auth_url, read_secret(args.admin_password_file))
    want = {"nova-conductor", "nova-scheduler"}
    deadline = time.monotonic() + args.timeout
    last = "no answer yet"
    while True:
        try:
            resp = sess.get("/os-services", raise_exc=False, endpoint_filter={
                "service_type": "compute", "interface": "internal",
                "region_name": args.region})
            if resp.status_code == 200:
                services = resp.json()["services"]
                up = {s["binary"] for s in services
                      if s["state"] == "up" and fresh_enough(s, args)}
                last = ", ".join("%s@%s %s/%s" % (s["binary"], s["host"], s["status"], s["state"])
                                 for s in services) or "no services"
                if want <= up:
                    print("compute services up:", last)
                    return 0
            else:
                last = "GET /os-services: HTTP %d" % resp.status_code
        except ks_exc.ClientException as e:
            last = "%s: %s" % (type(e).__name__, e)
        if time.monotonic() > deadline:
            print("compute services not up after %ds: %s" % (args.timeout, last))
            return 1
        time.sleep(1)


def wait_network(args):
    auth = v3.Password(auth_url=args.auth_url, username="admin",
                       password=read_secret(args.admin_password_file),
                       project_name="admin", user_domain_id=DOMAIN,
                       project_domain_id=DOMAIN)
    # A request to a worker whose OVN connection is not up yet may hang;
    # the timeout turns that into another try.
    sess = ks_session.Session(auth=auth, timeout=15)
    deadline = time.monotonic() + args.timeout
    last = "no answer yet"
    while True:
        try:
            resp = sess.get("/v2.0/agents", raise_exc=False, endpoint_filter={
                "service_type": "network", "interface": "internal",
                "region_name": args.region})
            if resp.status_code == 200:
                agents = resp.json()["agents"]
                print("network agents listed:", ", ".join(
                    "%s@%s alive=%s" % (a["agent_type"], a["host"], a["alive"])
                    for a in agents) or "none")
                return 0
            last = "GET /v2.0/agents: HTTP %d" % resp.status_code
        except (ks_exc.ClientException, ks_exc.ConnectionError) as e:
            last = type(e).__name__
        if time.monotonic() > deadline:
            print("network agents not listed after %ds: %s" % (args.timeout, last))
            return 1
        time.sleep(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("register", help="register users, services and endpoints (spec on stdin)")
    sub.add_parser("unregister", help="delete the services of the spec this script registered (spec on stdin)")
    wait = sub.add_parser("wait-compute", help="wait for nova-conductor and nova-scheduler")
    wait.add_argument("--auth-url", required=True)
    wait.add_argument("--admin-password-file", required=True)
    wait.add_argument("--region", default="RegionOne")
    wait.add_argument("--timeout", type=int, default=180)
    wait.add_argument("--since", type=float, default=0,
                      help="epoch seconds; see --fresh")
    wait.add_argument("--fresh", nargs="*", default=[],
                      help="binaries that must have reported after --since")
    net = sub.add_parser("wait-network", help="wait until Neutron lists its agents")
    net.add_argument("--auth-url", required=True)
    net.add_argument("--admin-password-file", required=True)
    net.add_argument("--region", default="RegionOne")
    net.add_argument("--timeout", type=int, default=180)
    args = parser.parse_args()
    if args.command == "register":
        register(json.load(sys.stdin))
        return 0
    if args.command == "unregister":
        unregister(json.load(sys.stdin))
        return 0
    if args.command == "wait-network":
        return wait_network(args)
    return wait_compute(args)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A hub's governance at run time (backend/hub/SPOKES.md, "Residency at run
time"), end to end with a hub `weft serve` and a spoke in another region:

- GET /api/v1/hub/spokes lists the spoke as the hub sees it: its user,
  region and address, its change feed connected, its requests and the
  chunk bytes sent to it (logical and wire), and later its refusals.
- A residency rule added over REST applies at once: a read that worked at
  the spoke over S3 is refused (AccessDenied) and the hub audits the
  refusal (residency_denied) and the change (residency.add). A dry run
  first lists the spoke it would cut off and the files under the prefix,
  and changes nothing. Removing the rule lets the read work again.
- Rules added over REST survive a hub restart; rules of the config file
  cannot be changed over REST (409); bad rules are 400s; the routes are
  for administrators.

    governance_test.py --weft PATH [unittest arguments]
"""

import os
import sys
import time
import unittest

import botocore.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hubsite import Site, Spoke, hub_put, rest, run_tests  # noqa: E402

WEFT = None
SPOKE = ("rest", "s3")
SPOKE_REGION = "ap-south-1"
RULE = {"prefix": "data/region/eu", "regions": ["eu-west-1"]}


def s3_body(s3, key):
    return s3.get_object(Bucket="region", Key=key)["Body"].read()


def wait_for(what, check, seconds=15):
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            assert value, "timed out waiting for " + what
            return value
        time.sleep(0.2)


class RuntimeResidencyTest(unittest.TestCase):
    def setUp(self):
        self.hub = Site(WEFT, residency=[("data/cfg", ["us-east-1"])])
        self.spoke = None
        self.secret = os.urandom(200 << 10)
        hub_put(self.hub, "data/region/eu/secret.bin", self.secret)
        hub_put(self.hub, "data/region/open/public.txt", b"for everyone\n")
        self.spoke = Spoke(WEFT, self.hub, self.hub.url, local="/region", remote="data/region", protocols=SPOKE,
                           region=SPOKE_REGION)
        self.s3 = self.spoke.s3()
        self.admin = rest(self.hub)

    def tearDown(self):
        self.s3.close()
        self.admin.close()
        for site in (self.spoke, self.hub):
            if site:
                self.assertEqual(site.stop(), 0)

    def api(self, path):
        return self.hub.url + "/api/v1" + path

    def spoke_view(self):
        r = self.admin.get(self.api("/hub/spokes"))
        self.assertEqual(r.status_code, 200, r.text)
        mine = [x for x in r.json()["spokes"] if x["region"] == SPOKE_REGION]
        return mine[0] if mine else None

    def read_denied(self):
        try:
            s3_body(self.s3, "eu/secret.bin")
        except botocore.exceptions.ClientError as e:
            return e.response["Error"]["Code"] == "AccessDenied"
        except botocore.exceptions.ResponseStreamingError:
            # A GET that the spoke opened before its feed brought the new rule
            # is cut when its chunks are then refused (the 200 header is
            # already out); the next GET is refused outright.
            return False
        return False

    def audit(self, **params):
        r = self.admin.get(self.api("/audit"), params=dict(limit=1000, **params))
        self.assertEqual(r.status_code, 200, r.text)
        return r.json()["records"]

    def test_rules_at_run_time(self):
        # The spoke reads the file; the hub sees the spoke.
        self.assertEqual(s3_body(self.s3, "eu/secret.bin"), self.secret)
        view = wait_for("the spoke's feed", lambda: (v := self.spoke_view()) and v["feed_connected"] and v)
        self.assertEqual(view["user"], self.hub.credentials["user"])  # the spoke signs in with the hub's credentials
        self.assertTrue(view["address"].startswith("127.0.0.1:"), view)
        self.assertGreater(view["requests"], 0)
        self.assertGreaterEqual(view["sent_logical_bytes"], len(self.secret))
        self.assertGreater(view["sent_wire_bytes"], 0)
        self.assertEqual(view["residency_denials"], 0)
        self.assertEqual(set(view), {"user", "region", "address", "feed_connected", "first_seen", "last_request",
                                     "requests", "residency_denials", "sent_logical_bytes", "sent_wire_bytes",
                                     "cache_reported", "cache_chunks"})

        r = self.admin.get(self.api("/residency"))
        self.assertEqual(r.json(), {"rules": [{"prefix": "data/cfg", "regions": ["us-east-1"], "source": "config"}]})

        # A dry run names the spoke and the files, and changes nothing.
        r = self.admin.post(self.api("/residency"), json=dict(RULE, dry_run=True))
        self.assertEqual(r.status_code, 200, r.text)
        dry = r.json()
        self.assertEqual(dry["rule"], dict(RULE, source="api"))
        self.assertEqual([(b["region"], b["user"]) for b in dry["blocked_spokes"]], [(SPOKE_REGION, view["user"])])
        self.assertEqual((dry["files"], dry["bytes"], dry["paths"], dry["complete"]),
                         (1, len(self.secret), ["data/region/eu/secret.bin"], True))
        r = self.admin.post(self.api("/residency"), json={"prefix": "data/region", "regions": [SPOKE_REGION],
                                                          "dry_run": True})
        self.assertEqual((r.json()["blocked_spokes"], r.json()["files"]), ([], 2))
        self.assertEqual(len(self.admin.get(self.api("/residency")).json()["rules"]), 1)
        self.assertEqual(s3_body(self.s3, "eu/secret.bin"), self.secret)

        # The rule, for real: the same read is refused at once, and audited.
        r = self.admin.post(self.api("/residency"), json={"prefix": "/data/region/eu/", "regions": ["us-west-2"]})
        self.assertEqual((r.status_code, r.json()), (201, {"prefix": "data/region/eu", "regions": ["us-west-2"],
                                                            "source": "api"}))
        r = self.admin.post(self.api("/residency"), json=RULE)
        self.assertEqual((r.status_code, r.json()), (200, dict(RULE, source="api")))  # replaced
        # The hub refuses at once; the spoke drops what it cached when its
        # feed says the rules changed (within the feed's 20 ms poll).
        wait_for("the read refused at the spoke", self.read_denied, seconds=5)
        self.assertEqual(s3_body(self.s3, "open/public.txt"), b"for everyone\n")
        denied = wait_for("the refusal in the hub's audit log",
                          lambda: [x for x in self.audit(protocol="hub") if x["result"] == "residency_denied"])
        self.assertTrue(all(x["region"] == SPOKE_REGION and x["path"].startswith("data/region/eu") for x in denied),
                        denied)
        added = wait_for("residency.add in the audit log",
                         lambda: (a := [x for x in self.audit(protocol="rest") if x["op"] == "residency.add"])
                         and len(a) == 4 and a)
        # The two dry runs, the add and the replace.
        self.assertEqual(sorted(x["path"] for x in added), ["data/region"] + ["data/region/eu"] * 3)
        self.assertTrue(all(x["result"] == "ok" and x["user"] == self.hub.admin[0] for x in added), added)
        self.assertGreater(wait_for("the refusals counted", lambda: self.spoke_view()["residency_denials"]), 0)

        # Removed: the read works again.
        r = self.admin.delete(self.api("/residency/data/region/eu"))
        self.assertEqual(r.status_code, 204, r.text)
        wait_for("the read allowed again", lambda: not self.read_denied(), seconds=5)
        self.assertEqual(s3_body(self.s3, "eu/secret.bin"), self.secret)
        r = self.admin.delete(self.api("/residency/data/region/eu"))
        self.assertEqual((r.status_code, r.json()["error"]["code"]), (404, "not_found"))
        wait_for("residency.remove in the audit log",
                 lambda: [x for x in self.audit(protocol="rest") if x["op"] == "residency.remove"])

        # Kept across a restart of the hub, and enforced after it.
        self.assertEqual(self.admin.post(self.api("/residency"), json=RULE).status_code, 201)
        self.hub.restart()
        r = self.admin.get(self.hub.url + "/api/v1/residency")
        self.assertEqual(r.json()["rules"], [{"prefix": "data/cfg", "regions": ["us-east-1"], "source": "config"},
                                             dict(RULE, source="api")])
        for region, status in ((SPOKE_REGION, 403), ("eu-west-1", 200)):
            r = self.admin.get(self.hub.url + "/hub/v1/attr", params={"path": "data/region/eu/secret.bin"},
                               headers={"Weft-Region": region})
            self.assertEqual(r.status_code, status, r.text)

    def test_bad_requests(self):
        url = self.api("/residency")
        for body, field in (({"prefix": "data//x", "regions": []}, "prefix"),
                            ({"prefix": "/", "regions": []}, "prefix"),
                            ({"prefix": "data/x", "regions": ["no spaces"]}, "regions"),
                            ({"prefix": "data/x"}, "regions"),
                            ({"prefix": "data/x", "regions": "eu"}, "regions"),
                            ({"prefix": "data/x", "regions": [], "dry": True}, "dry")):
            r = self.admin.post(url, json=body)
            self.assertEqual((r.status_code, r.json()["error"]["code"]), (400, "invalid_json"), body)
            self.assertIn(field, r.json()["error"]["message"])
        # Config rules stay the config's.
        r = self.admin.post(url, json={"prefix": "data/cfg", "regions": []})
        self.assertEqual((r.status_code, r.json()["error"]["code"]), (409, "config_rule"))
        r = self.admin.delete(url + "/data/cfg")
        self.assertEqual((r.status_code, r.json()["error"]["code"]), (409, "config_rule"))
        self.assertIn("config file", r.json()["error"]["message"])
        # Administrators only.
        r = self.admin.post(self.api("/users"), json={"name": "ann", "password": "pw-xxxxxxxx", "admin": False})
        self.assertEqual(r.status_code, 201, r.text)
        for method, path in (("GET", "/residency"), ("POST", "/residency"), ("DELETE", "/residency/data/x"),
                             ("GET", "/hub/spokes")):
            self.assertEqual(requests_call(method, self.api(path), ("ann", "pw-xxxxxxxx")).status_code, 403)
            self.assertEqual(requests_call(method, self.api(path), None).status_code, 401)


def requests_call(method, url, auth):
    import requests
    return requests.request(method, url, auth=auth, json={"prefix": "data/x", "regions": []})


def configure(args):
    global WEFT
    WEFT = args.weft


if __name__ == "__main__":
    run_tests(170, configure)

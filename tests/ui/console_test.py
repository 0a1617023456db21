"""The web console end to end: a hub, and a spoke that mounts its
data/datasets through the WAN emulator; files written over S3 at the
spoke, one written at the hub and read by the spoke, and a user of both
who is not an administrator; both sites sample their metrics every second;
then tests/ui/console.mjs drives both consoles in headless Chromium
(Debian's chromium, through playwright-core from ui/node_modules) at
1280x800 and 390x844, checks each step in the page, saves screenshots
under --artifacts and fails on any browser console error. Exit 77 (skipped,
visibly) when node, chromium or playwright-core is missing."""

import argparse
import os
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent / "protocols" / "hub"))
from hubsite import Site, Spoke, hub_put, rest  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
PLAYWRIGHT = ROOT / "ui" / "node_modules" / "playwright-core"
SKIP = 77


def missing():
    """Why the test cannot run here, or None."""
    if not shutil.which("node"):
        return "node is not installed (Debian package nodejs)"
    if not os.access(CHROMIUM, os.X_OK):
        return CHROMIUM + " is not installed (Debian package chromium)"
    if not PLAYWRIGHT.is_dir():
        return "ui/node_modules has no playwright-core (the build runs npm ci in ui/)"
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--artifacts", required=True)
    args = parser.parse_args()
    why = missing()
    if why:
        print("SKIPPED: " + why, flush=True)
        return SKIP
    artifacts = pathlib.Path(args.artifacts)
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)

    # A rule of the hub's configuration keeps data/datasets/eu-only in the
    # EU; the test adds another over the console. Both sites sample their
    # metrics every second, for the charts.
    history = {"metrics_history": {"interval_s": 1, "samples": 300}}
    hub = Site(args.weft, region="eu-west-1", residency=[("data/datasets/eu-only", ["eu-west-1"])], config=history)
    spoke = None
    try:
        # The directory the spoke mounts.
        hub_put(hub, "data/datasets/README.txt", b"training data\n")
        hub_put(hub, "data/datasets/eu-only/secret.bin", os.urandom(64 << 10))
        link = hub.emulator("--rtt-ms", "5")
        # The spoke tells the hub what its cache holds every second (after a change).
        spoke = Spoke(args.weft, hub, "http://" + link.address, protocols=("rest", "s3"), region="us-east-1",
                      config=history, spoke_cache={"report_interval_s": 1})
        s3 = spoke.s3()
        # Written over S3 at the spoke: through to the hub, seen at both.
        s3.put_object(Bucket="datasets", Key="train/shard-000.bin", Body=os.urandom(3 << 20))
        s3.put_object(Bucket="datasets", Key="train/shard-001.bin", Body=os.urandom(1 << 20))
        # Written at the hub and read at the spoke: the path the console's
        # new rule will keep from the spoke.
        hub_put(hub, "data/datasets/restricted/secret.bin", os.urandom(256 << 10))
        s3.get_object(Bucket="datasets", Key="restricted/secret.bin")["Body"].read()
        s3.close()
        # A user of both sites who is not an administrator, for the
        # console's sign-in.
        reader = ("reader", "reader-" + os.urandom(8).hex())
        for site in (hub, spoke):
            with rest(site) as s:
                r = s.post(site.url + "/api/v1/users", json={"name": reader[0], "password": reader[1], "admin": False})
                assert r.status_code == 201, r.text
        env = dict(os.environ,
                   WEFT_SPOKE_URL=spoke.url, WEFT_HUB_URL=hub.url,
                   WEFT_SPOKE_USER=spoke.admin[0], WEFT_SPOKE_PASSWORD=spoke.admin[1],
                   WEFT_HUB_USER=hub.admin[0], WEFT_HUB_PASSWORD=hub.admin[1],
                   WEFT_READER_USER=reader[0], WEFT_READER_PASSWORD=reader[1],
                   WEFT_ARTIFACTS=str(artifacts), WEFT_CHROMIUM=CHROMIUM,
                   WEFT_PLAYWRIGHT=str(PLAYWRIGHT))
        code = subprocess.run(["node", str(HERE / "console.mjs")], env=env, timeout=150).returncode
        if code != 0:
            print("--- hub log ---\n" + hub.log()[-4000:] + "\n--- spoke log ---\n" + spoke.log()[-4000:])
        print("screenshots: " + str(artifacts), flush=True)
        return code
    finally:
        if spoke:
            spoke.stop()
        hub.stop()


if __name__ == "__main__":
    sys.exit(main())

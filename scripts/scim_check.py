"""Runs scim2-tester's checks against the desk's SCIM endpoints and prints the counts.

Every check of every tag runs; the script fails when any check ends in ERROR or
CRITICAL (a DEVIATION or ACCEPTABLE finding is printed, not failed on: the desk
supports a documented subset, e.g. no bulk, no sorting).
"""

import argparse
import collections
import sys

import httpx2
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import Status, check_server


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--token", required=True)
    args = parser.parse_args()
    http = httpx2.Client(base_url=args.base, headers={"Authorization": f"Bearer {args.token}"})
    client = SyncSCIMClient(http)
    results = check_server(client)
    counts = collections.Counter(r.status.name for r in results)
    failed = [r for r in results if r.status in (Status.ERROR, Status.CRITICAL)]
    for r in results:
        if r.status not in (Status.SUCCESS, Status.COMPLIANT):
            print(f"{r.status.name}: {r.title} [{', '.join(sorted(r.tags or []))}]: {r.reason} {r.data or ''}"[:700])
    print("scim2-tester: " + ", ".join(f"{n} {k.lower()}" for k, n in sorted(counts.items())))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

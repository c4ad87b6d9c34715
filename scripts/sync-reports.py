#!/usr/bin/env python3
"""Counts what the devices of scripts/shared-list-devices.sh saw: each NAME.syncs holds one
`jlog sync --json` report a line (and, from a caller that faults the service, marker lines
{"mark": TEXT} written between them, naming what came before the syncs that follow).

    sync-reports.py counts NAME...        prints one line of KEY=VALUE counts, then one line per
                                          sync that was signed out or re-fetched (with the last
                                          mark before it and the report's errors)
    sync-reports.py quiet NAME...         exits 0 when every device has a report after its last
                                          mark and each such report is complete, sent nothing,
                                          applied nothing and re-fetched nothing

With --jlog JLOG before the mode, `counts` also reads `jlog sync-status NAME.wal --json`: a device
whose status has no account, or changes kept across a sign-out, counts as signed out; a list with
a re-fetch wanted or under way counts as a re-fetch.
"""
import json, subprocess, sys

args = sys.argv[1:]
jlog = None
if args[:1] == ["--jlog"]:
    jlog, args = args[1], args[2:]
mode, names = args[0], args[1:]


def reports(name):
    """(mark, report) for each report in NAME.syncs, mark being the last marker line before it
    (marks are numbered in order, so that two alike are told apart)."""
    out, mark = [], (0, "before any mark")
    try:
        lines = open(name + ".syncs").read().splitlines()
    except FileNotFoundError:
        return out, mark
    for line in lines:
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if "mark" in d:
            mark = (mark[0] + 1, d["mark"])
        elif "complete" in d:
            out.append((mark, d))
    return out, mark


if mode == "quiet":
    for n in names:
        r, last_mark = reports(n)
        last = [d for mark, d in r if mark == last_mark]
        if not last:
            sys.exit(1)
        if any(not d["complete"] or d["sent"] or d["applied"] or d["refetched"] for d in last):
            sys.exit(1)
    sys.exit(0)

if mode != "counts":
    sys.exit("usage: sync-reports.py [--jlog JLOG] counts|quiet NAME...")

syncs = incomplete = offline = signed_out_syncs = refetches = 0
signed_out, details = set(), []
for n in names:
    for i, ((_, mark), d) in enumerate(reports(n)[0], 1):
        syncs += 1
        incomplete += not d["complete"]
        offline += d["offline"]
        if d["signedOut"]:
            signed_out_syncs += 1
            signed_out.add(n)
        refetches += len(d["refetched"])
        if d["signedOut"] or d["refetched"]:
            what = ", ".join((["signed out"] if d["signedOut"] else []) + [f"re-fetched {z}" for z in d["refetched"]])
            details.append(f"{n} sync {i} ({mark}): {what}; errors: {d['errors']}")
status_refetches = 0
if jlog:
    for n in names:
        s = json.loads(subprocess.check_output([jlog, "sync-status", n + ".wal", "--json"]))
        if s["account"] is None or s["keptAcrossSignOut"]:
            signed_out.add(n)
            details.append(f"{n} sync-status: account {s['account']}, {s['keptAcrossSignOut']} changes kept across a sign-out")
        for l in s["lists"]:
            if l["refetchWanted"] or l["refetching"]:
                status_refetches += 1
                details.append(f"{n} sync-status: {l['zone']} has a re-fetch {'under way' if l['refetching'] else 'wanted'}")
print(f"syncs={syncs} incomplete={incomplete} offline={offline} signed_out_syncs={signed_out_syncs} "
      f"signed_out_devices={len(signed_out)} refetches={refetches + status_refetches}")
for line in details:
    print(line)

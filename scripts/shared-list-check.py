#!/usr/bin/env python3
"""The end of server-kill9.sh and nodes-kill9.sh: after three devices (alice, bob and carol, each
NAME.wal with the ids it acknowledged in NAME.acked) edited one shared list while servers were
killed, checks that every device shows exactly REFERENCE's list, that every acknowledged change
is in the service's history (HISTORY, `jlog history --json`), and that no store holds an entry id
twice (nor the database: DATABASE_DUPLICATES, counted by the caller). Prints the counts (the
acknowledged changes lost among them) and exits 1 with the problems.

    shared-list-check.py JLOG ZONE HISTORY REFERENCE [DATABASE_DUPLICATES]
"""
import json, subprocess, sys

jlog, zone, history_file, reference = sys.argv[1:5]
database_duplicates = int(sys.argv[5]) if len(sys.argv) > 5 else 0
devices = ("alice", "bob", "carol")

def run(*args):
    return json.loads(subprocess.check_output([jlog, *args]))

def state(store):
    d = run("show", store, "--zone", zone, "--json")
    return {k: v for k, v in d.items() if k not in ("incarnation", "sequence")}

problems = []
expected = state(reference)
for p in devices:
    if state(p + ".wal") != expected:
        problems.append(f"{p}'s list differs from {reference}'s")
history = {e["entry"] for e in json.load(open(history_file))["events"]}
acked = lost = 0
for p in devices:
    try:
        ids = [l.strip() for l in open(p + ".acked") if l.strip()]
    except FileNotFoundError:
        ids = []
    acked += len(ids)
    missing = [i for i in ids if i not in history]
    lost += len(missing)
    if missing:
        problems.append(f"{len(missing)} of {p}'s acknowledged changes are not in the service's history: {missing[:3]}")
for store in dict.fromkeys([reference] + [p + ".wal" for p in devices]):
    ids = [e["id"] for e in run("changes", store, "--zone", zone, "--limit", "100000", "--json")["entries"]]
    if len(ids) != len(set(ids)):
        problems.append(f"{store} holds {len(ids) - len(set(ids))} duplicated entries")
if database_duplicates:
    problems.append(f"the database holds {database_duplicates} duplicated entries")
print(f"acknowledged changes: {acked} ({lost} lost); history events: {len(history)}; items on the list: {len(expected['items'])}")
for p in problems:
    print("PROBLEM:", p)
sys.exit(1 if problems else 0)

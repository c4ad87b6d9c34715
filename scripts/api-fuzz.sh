#!/usr/bin/env bash
# Fuzzes `jlog serve` against its contract, Spec/openapi.yaml, with schemathesis.
#
#   scripts/api-fuzz.sh [SECONDS_OR_EXAMPLES]
#
#   N     examples per operation (default 20: about a minute on a small machine)
#   Ns    a time budget of N seconds for the whole run instead (e.g. 300s)
#
# It installs schemathesis from PyPI if it is missing, builds jlog, makes a server store in a
# temporary directory with two accounts (alice, bob) and a zone of alice's, starts
# `jlog serve` on a free loopback port (no rate limit; stopped on exit), and runs every
# schemathesis check (no 5xx; status codes, content types, headers and response bodies as the
# document says; auth enforced; invalid data rejected ...) with alice's credential as a Bearer
# header. `GET /v1/hints` never ends (server-sent events), so schemathesis skips it and this
# script probes it itself. Exits non-zero on any failure.
#
# It also checks what schemathesis cannot: the hint channel's first event, and that SIGTERM
# stops the server while a device listens for hints.
#
# With POSTGRES=1 the server runs over PostgreSQL (`jlog serve --database`, a private cluster
# started for the run, scripts/postgres.sh) and the accounts live in the database.
#
# Environment: JLOG_SCRATCH, the SwiftPM scratch path to build in (default .build);
# API_FUZZ_SEED, a seed for a reproducible run; API_FUZZ_REPORT, a directory for JUnit and HAR
# reports (default: none kept); API_FUZZ_EXCLUDE_CHECKS, schemathesis checks to skip
# (comma-separated, e.g. unsupported_method while a known failure is being fixed).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
spec="$root/Spec/openapi.yaml"
budget="${1:-20}"
examples=20
max_time=""
case "$budget" in
    *s) max_time="${budget%s}"; examples=100000 ;;
    *) examples="$budget" ;;
esac
if ! [[ "$examples" =~ ^[0-9]+$ ]] || [[ -n "$max_time" && ! "$max_time" =~ ^[0-9]+$ ]]; then
    echo "usage: scripts/api-fuzz.sh [EXAMPLES | SECONDSs]" >&2
    exit 2
fi

# 1. schemathesis.
if ! command -v schemathesis >/dev/null 2>&1; then
    echo "api-fuzz: installing schemathesis from PyPI" >&2
    # Into the Python at hand; where that is the system's (Debian refuses), into a venv of our own.
    if ! python3 -m pip install --quiet schemathesis 2>/dev/null; then
        venv="$root/.build-venv"
        [[ -x "$venv/bin/python3" ]] || python3 -m venv "$venv" \
            || { $([[ "$(id -u)" -ne 0 ]] && echo sudo) apt-get install -y -qq python3-venv >/dev/null && python3 -m venv "$venv"; }
        "$venv/bin/python3" -m pip install --quiet schemathesis
        export PATH="$venv/bin:$PATH"
    fi
    hash -r
fi
st_version="$(schemathesis --version 2>/dev/null | sed -E 's/.*version ([0-9]+)\..*/\1/')"
echo "api-fuzz: $(schemathesis --version)" >&2

# 2. jlog.
scratch="${JLOG_SCRATCH:-.build}"
(cd "$root" && swift build --product jlog --scratch-path "$scratch" >&2)
jlog="$(cd "$root" && swift build --product jlog --scratch-path "$scratch" --show-bin-path)/jlog"

# 3. A store with two accounts, and the server.
work="$(mktemp -d "${TMPDIR:-/tmp}/jlog-api-fuzz.XXXXXX")"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$server_pid" 2>/dev/null || true
    fi
    [[ "${POSTGRES:-0}" == 1 ]] && bash "$root/scripts/postgres.sh" stop "$work/pg" || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

store=("$work/store")
if [[ "${POSTGRES:-0}" == 1 ]]; then
    chmod 755 "$work"
    bash "$root/scripts/postgres.sh" start "$work/pg" >/dev/null
    store=(--database "postgres://jlog@/jlog?host=$work/pg")
fi
"$jlog" accounts add "${store[@]}" alice --output "$work/alice.cred" 2>/dev/null
"$jlog" accounts add "${store[@]}" bob --output "$work/bob.cred" 2>/dev/null
alice="$(cat "$work/alice.cred")"
# Devices may enrol with an identity provider's tokens (POST /v1/enrol): its key set holds the
# Ed25519 public key of RFC 8032's first test vector, so the route is served and every token the
# fuzzer makes up is refused.
printf '%s' '{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"rfc8032","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}' > "$work/jwks.json"
"$jlog" serve "${store[@]}" --listen 127.0.0.1:0 --port-file "$work/port" --rate-limit 0 --compact-every 0 \
    --jwks "$work/jwks.json" --jwt-issuer https://id.example.com --jwt-audience lists.example.com 2>"$work/serve.log" &
server_pid=$!
for _ in $(seq 1 300); do
    [[ -s "$work/port" ]] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log" >&2; echo "api-fuzz: jlog serve did not start" >&2; exit 1; }
    sleep 0.1
done
[[ -s "$work/port" ]] || { echo "api-fuzz: jlog serve wrote no port" >&2; exit 1; }
url="http://127.0.0.1:$(tr -d '[:space:]' < "$work/port")"
echo "api-fuzz: jlog serve on $url" >&2

# Zones of alice's; of bob's, one that alice belongs to (so that calls on it can succeed, or be
# refused for what she is: a participant deleting, sharing, removing another) and one she may
# not see (which must answer like no zone at all).
bob="$(cat "$work/bob.cred")"
for zone in groceries weekly; do
    curl -fsS -X PUT -H "Authorization: Bearer $alice" "$url/v1/zones/alice/$zone" >/dev/null
    curl -fsS -X PUT -H "Authorization: Bearer $bob" "$url/v1/zones/bob/$zone" >/dev/null
done
invitation="$(curl -fsS -X POST -H "Authorization: Bearer $bob" -H 'Content-Type: application/json' \
    -d '{"participant":"alice"}' "$url/v1/zones/bob/weekly/invitations")"
curl -fsS -X POST -H "Authorization: Bearer $alice" -H 'Content-Type: application/json' -d "$invitation" \
    "$url/v1/invitations/accept" >/dev/null

status=0

# 4. The hint channel, which schemathesis cannot read to its end: 200, text/event-stream,
# `event: ready` first; 401 with a challenge without a credential.
hints="$(curl -sS -N --max-time 2 -D "$work/hints.head" -H "Authorization: Bearer $alice" "$url/v1/hints" 2>/dev/null || true)"
if ! head -n1 "$work/hints.head" | grep -q " 200" || ! grep -qi '^content-type: text/event-stream' "$work/hints.head" \
    || [[ "$(printf '%s' "$hints" | head -n1)" != "event: ready" ]]; then
    echo "api-fuzz: FAIL GET /v1/hints: $(head -n1 "$work/hints.head") / $(printf '%s' "$hints" | head -n1)" >&2
    status=1
fi
code="$(curl -sS -o /dev/null -D "$work/hints401.head" -w '%{http_code}' "$url/v1/hints")"
if [[ "$code" != 401 ]] || ! grep -qi '^www-authenticate: bearer' "$work/hints401.head"; then
    echo "api-fuzz: FAIL GET /v1/hints without a credential answered $code" >&2
    status=1
fi

# The enrolment route: a token that is no JWT, and none at all, are 401 with the reason.
enrol="$(curl -sS -X POST -w '\n%{http_code}' -H "Authorization: Bearer not.a.jwt" "$url/v1/enrol")"
if [[ "$(printf '%s' "$enrol" | tail -n1)" != 401 ]] || ! printf '%s' "$enrol" | grep -q 'not a JWT'; then
    echo "api-fuzz: FAIL POST /v1/enrol with a token that is no JWT: $enrol" >&2
    status=1
fi
code="$(curl -sS -o /dev/null -w '%{http_code}' -X POST "$url/v1/enrol")"
if [[ "$code" != 401 ]]; then
    echo "api-fuzz: FAIL POST /v1/enrol without a token answered $code" >&2
    status=1
fi

# 5. schemathesis, every check, run from the work directory (its caches stay there).
#
# The configuration says three things the document cannot:
# - Which answers to a schema-valid request are right all the same (positive_data_acceptance):
#   a made-up token is `tokenExpired` and a zone the stateful phase deleted is `zoneDeleted`
#   (410, SYNC.md §3.3, §3.4, §5.1); and calls the schema cannot tell from good ones are
#   `invalidRequest` (400): a body that is not a wire batch (§9.1), a zone created in another
#   account's name (§3.6), a participant deleting, sharing or removing another (§3.6, §5.2), an
#   account that does not exist, a string that is no invitation, a participant listing participants (§5.2),
#   keys published for another account, or that are no Ed25519 and X25519 points, or not the
#   account's published ones (§5.6), a recovery kit or a link's sealed keys whose base64url is not in its one
#   form (§5.7, §5.8). A zone's reads answer
#   400 too, for a name no zone can have that the schema cannot describe: over 255 UTF-8 bytes
#   with its owner (a schema counts characters, not bytes; SYNC.md §9.3). Every other answer to
#   a schema-valid request must be 2xx, 401, 404 or 429; the database reads never answer 400.
# - Path parameters: mostly an owner and a name of the zones made above (alice, bob; groceries,
#   weekly), so that calls get past "no such zone" (or meet bob's zone alice may not see); else
#   whatever the schema allows.
# - How to send `application/vnd.jlog.batch` (hooks.py): the generated bytes, half of the time
#   framed as a wire batch (magic, length, CRC32C) so the batch decoder behind the frame is
#   fuzzed too.
cat > "$work/schemathesis.toml" <<'TOML'
hooks = "jlog_fuzz_hooks"

[dictionaries.owners]
values = ["alice", "bob"]

[dictionaries.names]
values = ["groceries", "weekly"]

[parameters]
"path.owner" = { dictionary = "owners", probability = 0.8 }
"path.name" = { dictionary = "names", probability = 0.8 }

[checks.positive_data_acceptance]
expected-statuses = ["2xx", "401", "404", "410", "429"]

[[operations]]
include-operation-id-regex = "^(upload|createZone|deleteZone|shareZone|acceptShare|removeParticipant|stopSharing|fetchParticipants|fetchZoneChanges|fetchZoneHistory|fetchZoneHistoryPage|fetchZoneSnapshot|publishAccountKeys|storeRecoveryKit|depositDeviceLink)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "404", "410", "429"]
TOML
cat > "$work/jlog_fuzz_hooks.py" <<'PY'
import struct

import schemathesis

_TABLE = []
for n in range(256):
    c = n
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _TABLE.append(c)


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


@schemathesis.serializer("application/vnd.jlog.batch")
def wire_batch(ctx, value):
    if isinstance(value, bytes):
        data = value
    elif hasattr(value, "data"):
        data = value.data
    else:
        data = str(value).encode("utf-8", errors="ignore")
    # Half of the bodies (by their first byte) go in a valid frame: "JLB1" | length | payload | crc.
    if data and data[0] % 2 == 0:
        length = struct.pack("<I", len(data))
        return b"JLB1" + length + data + struct.pack("<I", crc32c(length + data))
    return data
PY

args=(run "$spec" -H "Authorization: Bearer $alice" --checks all --exclude-operation-id hints)
[[ -n "${API_FUZZ_EXCLUDE_CHECKS:-}" ]] && args+=(--exclude-checks "$API_FUZZ_EXCLUDE_CHECKS")
if [[ "$st_version" == 3 ]]; then
    # 3.x: no configuration file; the same checks, without the expectations above.
    args+=(--base-url "$url" --hypothesis-max-examples "$examples" --request-timeout 10000)
    [[ -n "${API_FUZZ_SEED:-}" ]] && args+=(--hypothesis-seed "$API_FUZZ_SEED")
    (cd "$work" && SCHEMATHESIS_HOOKS=jlog_fuzz_hooks PYTHONPATH="$work" schemathesis "${args[@]}") || status=1
else
    args+=(--url "$url" --max-examples "$examples" --request-timeout 10 --workers 2)
    [[ -n "$max_time" ]] && args+=(--max-time "$max_time")
    [[ -n "${API_FUZZ_SEED:-}" ]] && args+=(--seed "$API_FUZZ_SEED")
    [[ -n "${API_FUZZ_REPORT:-}" ]] && args+=(--report junit,har --report-dir "$API_FUZZ_REPORT")
    echo "api-fuzz: schemathesis --config-file schemathesis.toml ${args[*]//$alice/ALICE-CREDENTIAL}" >&2
    run_st() { (cd "$work" && PYTHONPATH="$work" schemathesis --config-file "$work/schemathesis.toml" "${args[@]}") 2>&1 | tee "$work/st.out"; }
    if ! run_st; then
        # CPython 3.11's AST constructor can fail inside hypothesis's own source inspection (a
        # "Runtime Error" of the tool with every case passed): that, and only that, is run again.
        if grep -q "AST constructor recursion depth mismatch" "$work/st.out"; then
            echo "api-fuzz: schemathesis stopped on its own internal error (AST constructor recursion depth mismatch); running it again" >&2
            run_st || status=1
        else
            status=1
        fi
    fi
fi

# 6. The server must still be up; what it logged is shown.
if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "api-fuzz: FAIL jlog serve died:" >&2
    cat "$work/serve.log" >&2
    status=1
elif grep -qv '^jlog: serving' "$work/serve.log"; then
    echo "api-fuzz: jlog serve logged:" >&2
    grep -v '^jlog: serving' "$work/serve.log" | head -50 >&2
fi

# 7. SIGTERM stops it promptly, even while a device listens for hints (devices always do).
curl -sS -N -H "Authorization: Bearer $alice" "$url/v1/hints" > "$work/listener.out" 2>/dev/null &
listener=$!
for _ in $(seq 1 100); do grep -q "event: ready" "$work/listener.out" 2>/dev/null && break; sleep 0.05; done
kill -TERM "$server_pid" 2>/dev/null || true
for _ in $(seq 1 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$server_pid" 2>/dev/null; then
    echo "api-fuzz: FAIL jlog serve was still running 10 s after SIGTERM, with a device listening for hints" >&2
    status=1
fi
kill "$listener" 2>/dev/null || true
wait "$listener" 2>/dev/null || true

if [[ $status -eq 0 ]]; then echo "api-fuzz: passed" >&2; else echo "api-fuzz: FAILED" >&2; fi
exit $status

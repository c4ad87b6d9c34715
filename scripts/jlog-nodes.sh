# Sourced by nodes-kill9.sh and nodes-db-restart.sh (not run alone): `jlog serve --database $db`
# nodes on loopback, through $JLOG, in front of them nginx (scripts/nginx-front.sh, round robin).
# Node K listens on ports[K], runs as pids[K] with the caller's options node_flags, and logs to
# nodeK.log in the working directory.
#   start_database         a private PostgreSQL cluster in $work/pg (scripts/postgres.sh), $db its URL,
#                          and a credential for alice, bob and carol (NAME.cred)
#   free_port              prints a free TCP port on 127.0.0.1
#   start_node K           starts node K; returns once it answers /v1/health (exits if it never does)
#   start_front DIR PORT   nginx (its files in DIR) on PORT in front of every node in ports;
#                          returns once a request through it reaches a node
#   cleanup_nodes          (an EXIT trap) stops the device processes in devices, the nodes in pids,
#                          nginx and the cluster, and removes $work
cleanup_nodes() {
  for p in "${devices[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  bash "$scripts/nginx-front.sh" stop "$work/nginx" || true
  bash "$scripts/postgres.sh" stop "$work/pg" || true
  rm -rf "$work"
}
start_database() {
  bash "$scripts/postgres.sh" start "$work/pg" >/dev/null
  db="postgres://jlog@/jlog?host=$work/pg"
  for a in alice bob carol; do "$JLOG" accounts add --database "$db" "$a" --output "$a.cred" 2>/dev/null; done
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
start_node() {
  local k=$1
  "$JLOG" serve --database "$db" --listen "127.0.0.1:${ports[$k]}" "${node_flags[@]}" >>"node$k.log" 2>&1 &
  pids[$k]=$!
  disown "${pids[$k]}" 2>/dev/null || true
  for _ in $(seq 1 200); do curl -sf "http://127.0.0.1:${ports[$k]}/v1/health" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "node $k did not start" >&2; cat "node$k.log" >&2; exit 1
}
start_front() {
  bash "$scripts/nginx-front.sh" start "$1" "$2" "${ports[@]}"
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$2/v1/health" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "nginx on port $2 does not reach the nodes" >&2; exit 1
}

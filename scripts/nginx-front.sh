#!/usr/bin/env bash
# nginx in front of jlog serve nodes, for tests and benchmarks on loopback: round robin with no
# sticky sessions, keep-alive to the nodes, no buffering (hints are server-sent events), and a
# request a dead node refused retried on the next (uploads are idempotent by entry id).
#   bash scripts/nginx-front.sh start DIR PORT NODE_PORT...   writes DIR/nginx.conf, starts nginx
#   bash scripts/nginx-front.sh stop DIR
set -euo pipefail
cmd="${1:?usage: nginx-front.sh start DIR PORT NODE_PORT... | stop DIR}"
dir="${2:?usage: nginx-front.sh start DIR PORT NODE_PORT... | stop DIR}"
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
[ -x "$NGINX" ] || { echo "nginx-front.sh: nginx is missing (bash scripts/setup.sh installs it)" >&2; exit 1; }
case "$cmd" in
  start)
    port="${3:?a port to listen on}"
    shift 3
    mkdir -p "$dir"
    chmod 755 "$dir"
    servers=""
    for p in "$@"; do servers+="    server 127.0.0.1:$p max_fails=0;"$'\n'; done
    cat > "$dir/nginx.conf" <<EOF
daemon on;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 2048; }
http {
  access_log off;
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  upstream jlog {
$servers    keepalive 64;
  }
  server {
    listen 127.0.0.1:$port;
    client_max_body_size 64m;
    location / {
      proxy_pass http://jlog;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 60s;
      proxy_next_upstream error timeout http_502 http_503 non_idempotent;
      proxy_next_upstream_tries 2;
    }
  }
}
EOF
    "$NGINX" -c "$dir/nginx.conf" -p "$dir" >"$dir/start.log" 2>&1 || { cat "$dir/start.log" >&2; exit 1; }
    for _ in $(seq 1 100); do [ -s "$dir/nginx.pid" ] && exit 0; sleep 0.05; done
    echo "nginx-front.sh: nginx did not start" >&2; exit 1
    ;;
  stop)
    [ -s "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
    ;;
  *) echo "usage: nginx-front.sh start DIR PORT NODE_PORT... | stop DIR" >&2; exit 2 ;;
esac

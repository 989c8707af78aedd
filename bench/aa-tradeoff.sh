#!/usr/bin/env bash
# Many short repetitions or few long ones? Runs the `aa` suite (go-nethttp's
# default and normalized variants, identical code for static, interleaved)
# plus node-http, alternately as R1 × D1 and R2 × D2 (default 10 × 3 s and
# 3 × 10 s: the same 30 s of measurement per variant), ROUNDS times each,
# and prints for every run:
#
#   - the A/A ratio with its 95 % interval and the noise floor ±X % (the
#     farthest the interval reaches from 1): narrower is better;
#   - node-http normalized relative to go-nethttp normalized, with its
#     interval and the interval's width in percent;
#   - the wall time of the run (server starts and warm-ups included).
#
# Then the median of each per configuration, as Markdown ready for
# docs/suites.md ("Repetitions or duration"). Everything is kept in
# bench/out/aa-tradeoff.db and bench/out/aa-tradeoff.md.
#
#   bench/aa-tradeoff.sh [--rounds N] [--configs "10x3s 3x10s"] [--servers go-nethttp,node-http]
#
# Needs: go (and node for the node-http figures), python3, a release build
# (made here if missing). Traffic goes to 127.0.0.1 only. Takes about
# ROUNDS × 8 minutes on a 2-core machine with node present.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3
configs="10x3s 3x10s"
servers="go-nethttp,node-http"
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift 2 ;;
        --configs) configs="$2"; shift 2 ;;
        --servers) servers="$2"; shift 2 ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) echo "bench/aa-tradeoff.sh: unknown argument $1 (expected --rounds N, --configs \"RxD …\", --servers LIST)" >&2; exit 2 ;;
    esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "bench/aa-tradeoff.sh: --rounds $rounds: expected a number ≥ 1" >&2; exit 2 ;; esac
for c in $configs; do
    case "$c" in
        [0-9]*x[0-9]*s) ;;
        *) echo "bench/aa-tradeoff.sh: --configs: $c is not REPETITIONSxSECONDSs (e.g. 10x3s)" >&2; exit 2 ;;
    esac
done
command -v go >/dev/null || { echo "bench/aa-tradeoff.sh: go not found: the aa suite measures go-nethttp" >&2; exit 2; }

cargo build --release --quiet -p fairbench
fb=target/release/fairbench
mkdir -p bench/out
db=bench/out/aa-tradeoff.db
rows=bench/out/aa-tradeoff.rows
: > "$rows"

for round in $(seq 1 "$rounds"); do
    # Alternate which configuration goes first, so slow drift of the
    # machine over the session does not favour one.
    list=$configs
    if [ $((round % 2)) -eq 0 ]; then
        list=$(echo "$configs" | tr ' ' '\n' | tac | tr '\n' ' ')
    fi
    for c in $list; do
        reps=${c%%x*}
        dur=${c#*x}
        echo "round $round: $reps × $dur" >&2
        start=$(date +%s)
        code=0
        "$fb" run --suite aa --servers "$servers" --repetitions "$reps" --duration "$dur" \
            --db "$db" --quiet >/dev/null || code=$?
        wall=$(( $(date +%s) - start ))
        if [ "$code" -ne 0 ]; then
            echo "bench/aa-tradeoff.sh: the run exited $code (see \`$fb show --db $db\`); its figures are kept but marked" >&2
        fi
        id=$("$fb" runs --db "$db" --json | python3 -c 'import json,sys; print(max(r["id"] for r in json.load(sys.stdin)["runs"]))')
        "$fb" report "$id" --db "$db" --format json \
            | python3 -c '
import json, sys
c, rnd, wall, code = sys.argv[1:5]
p = json.load(sys.stdin)["paired"]
def find(pred):
    return next((r for r in p["rows"] if pred(r)), None)
twin = find(lambda r: r["role"] == "aa")
node = find(lambda r: r["key"]["server"] == "node-http" and r["key"]["response"] == "normalized")
def fig(r):
    q = r and r.get("rps")
    if not q or q.get("low") is None:
        return None
    return {"g": q["geomean"], "lo": q["low"], "hi": q["high"], "n": q["n"]}
print(json.dumps({"config": c, "round": int(rnd), "wall_s": int(wall), "exit": int(code),
                  "aa": fig(twin), "node": fig(node)}))
' "$c" "$round" "$wall" "$code" >> "$rows"
    done
done

python3 - "$rows" "$configs" <<'PY' | tee bench/out/aa-tradeoff.md
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
configs = sys.argv[2].split()

def reach(f):  # the farthest the interval reaches from 1, in percent
    return 100 * max(f["hi"] - 1, 1 - f["lo"])

def width(f):  # the interval's width relative to its centre, in percent
    return 100 * (f["hi"] - f["lo"]) / f["g"]

def ratio(f):
    return "—" if f is None else f"{f['g']:.2f}× [{f['lo']:.2f}–{f['hi']:.2f}]"

print("| configuration | round | wall time | A/A ratio [95 %] | noise floor | node-http / go-nethttp [95 %] | its width | excludes 1 |")
print("|---|---:|---:|---|---:|---|---:|---|")
for r in rows:
    a, n = r["aa"], r["node"]
    mark = "" if r["exit"] == 0 else " (exit %d)" % r["exit"]
    print(f"| {r['config']}{mark} | {r['round']} | {r['wall_s']} s | {ratio(a)} | "
          f"{'—' if a is None else f'±{reach(a):.1f} %'} | {ratio(n)} | "
          f"{'—' if n is None else f'{width(n):.1f} %'} | "
          f"{'—' if n is None else ('yes' if n['hi'] < 1 or n['lo'] > 1 else 'NO')} |")
print()
print("Medians per configuration:")
print()
print("| configuration | runs | wall time | A/A noise floor | A/A contains 1 | node-http / go-nethttp interval width |")
print("|---|---:|---:|---:|---|---:|")
for c in configs:
    rs = [r for r in rows if r["config"] == c]
    aa = [r["aa"] for r in rs if r["aa"]]
    nd = [r["node"] for r in rs if r["node"]]
    med = lambda v, sign="": f"{sign}{statistics.median(v):.1f} %" if v else "—"
    wall = f"{statistics.median(r['wall_s'] for r in rs):.0f} s" if rs else "—"
    print(f"| {c} | {len(rs)} | {wall} | {med([reach(f) for f in aa], '±')} | "
          f"{sum(1 for f in aa if f['lo'] <= 1 <= f['hi'])} of {len(aa)} | "
          f"{med([width(f) for f in nd])} |")
PY
echo "runs kept in $db; table in bench/out/aa-tradeoff.md" >&2

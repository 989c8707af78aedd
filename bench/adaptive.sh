#!/usr/bin/env bash
# Do adaptive repetitions and `auto` warm-ups reach the same verdicts as the
# suite's fixed design, in less machine time? Runs a suite alternately as
# written (fixed repetitions and warm-up) and adaptive (`--repetitions
# until:P%,max:M --warmup auto`), ROUNDS times each, and prints for every
# run:
#
#   - its machine time (`show --json`'s time_spent.total_s: builds,
#     start-ups, warm-ups, measurements) and the warm-ups' share of it;
#   - every paired ratio's verdict on req/s: "higher" (its 95 % interval
#     wholly above 1), "lower" (wholly below) or "cannot tell";
#   - for adaptive runs, why and at which repetition it stopped.
#
# Then per design the median machine time, their ratio (adaptive / fixed;
# the issue's goal is at most 0.5), and whether every ratio got the same
# verdict in every run of both designs. Runs are kept in
# bench/out/adaptive.db and the table in bench/out/adaptive.md.
#
#   bench/adaptive.sh [--suite aa] [--servers LIST] [--rounds N]
#                     [--adaptive "--repetitions until:3%,max:20 --warmup auto"]
#
# --adaptive gives the adaptive design's options: e.g. "--warmup auto"
# alone for a suite of one repetition (quick), which has no interval for
# repetitions to narrow, or "--repetitions until:3%,max:20" alone to see
# what each half saves.
#
# Needs: go (and what the named servers need), python3, a release build
# (made here if missing). Traffic goes to 127.0.0.1 only. The aa suite with
# go-nethttp and node-http takes about ROUNDS × 6 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

suite=aa
servers=""
rounds=2
adaptive="--repetitions until:3%,max:20 --warmup auto"
while [ $# -gt 0 ]; do
    case "$1" in
        --suite) suite="$2"; shift 2 ;;
        --servers) servers="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --adaptive) adaptive="$2"; shift 2 ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) echo "bench/adaptive.sh: unknown argument $1 (expected --suite NAME, --servers LIST, --rounds N, --adaptive \"OPTIONS\")" >&2; exit 2 ;;
    esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "bench/adaptive.sh: --rounds $rounds: expected a number ≥ 1" >&2; exit 2 ;; esac
[ -f "suites/$suite.toml" ] || { echo "bench/adaptive.sh: --suite $suite: no suites/$suite.toml" >&2; exit 2; }

cargo build --release --quiet -p fairbench
fb=target/release/fairbench
mkdir -p bench/out
db=bench/out/adaptive.db
rows=bench/out/adaptive.rows
: > "$rows"
server_args=()
[ -n "$servers" ] && server_args=(--servers "$servers")

for round in $(seq 1 "$rounds"); do
    # Alternate which design goes first, so drift over the session does
    # not favour one.
    list="fixed adaptive"
    [ $((round % 2)) -eq 0 ] && list="adaptive fixed"
    for design in $list; do
        extra=()
        # Word splitting of the options is intended: they are flags.
        # shellcheck disable=SC2206
        [ "$design" = adaptive ] && extra=($adaptive)
        echo "round $round: $design" >&2
        code=0
        "$fb" run --suite "$suite" "${server_args[@]}" "${extra[@]}" --db "$db" --quiet >/dev/null || code=$?
        if [ "$code" -ne 0 ]; then
            echo "bench/adaptive.sh: the run exited $code (see \`$fb show --db $db\`); its figures are kept but marked" >&2
        fi
        id=$("$fb" runs --db "$db" --json | python3 -c 'import json,sys; print(max(r["id"] for r in json.load(sys.stdin)["runs"]))')
        show=$(mktemp)
        "$fb" show "$id" --db "$db" --json > "$show"
        "$fb" report "$id" --db "$db" --format json | python3 -c '
import json, sys
design, rnd, code, show = sys.argv[1:5]
r = json.load(sys.stdin)
spent = json.load(open(show)).get("time_spent") or {}
def verdict(q):
    if not q or q.get("low") is None:
        return "no interval"
    return "higher" if q["low"] > 1 else "lower" if q["high"] < 1 else "cannot tell"
verdicts = {}
for row in (r.get("paired") or {}).get("rows", []):
    if row["role"] == "reference":
        continue
    k = row["key"]
    name = "/".join(str(k.get(f)) for f in ("server", "mode", "response", "scenario"))
    verdicts[name] = verdict(row.get("rps"))
stop = r.get("stopped")
stopped = None if not stop else "%s at %d" % (stop["reason"], stop["repetition"])
print(json.dumps({"design": design, "round": int(rnd), "exit": int(code),
                  "total_s": spent.get("total_s"), "warmups_s": spent.get("warmups_s"),
                  "verdicts": verdicts, "stopped": stopped}))
' "$design" "$round" "$code" "$show" >> "$rows"
        rm -f "$show"
    done
done

python3 - "$rows" "$suite" "$adaptive" <<'PY' | tee bench/out/adaptive.md
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
suite, adaptive = sys.argv[2], sys.argv[3]
print(f"Suite `{suite}`: as written vs `{adaptive}`")
print()
print("| design | round | machine time | warm-ups | stopped | verdicts (req/s vs reference) |")
print("|---|---:|---:|---:|---|---|")
for r in rows:
    mark = "" if r["exit"] == 0 else f" (exit {r['exit']})"
    v = "; ".join(f"{k}: {x}" for k, x in sorted(r["verdicts"].items())) or "—"
    t = "—" if r["total_s"] is None else f"{r['total_s']:.0f} s"
    w = "—" if r["warmups_s"] is None else f"{r['warmups_s']:.0f} s"
    print(f"| {r['design']}{mark} | {r['round']} | {t} | {w} | {r['stopped'] or '—'} | {v} |")
print()
med = {}
for d in ("fixed", "adaptive"):
    ts = [r["total_s"] for r in rows if r["design"] == d and r["total_s"] is not None]
    med[d] = statistics.median(ts) if ts else None
keys = sorted({k for r in rows for k in r["verdicts"]})
same = all(len({r["verdicts"].get(k) for r in rows}) == 1 for k in keys)
if med["fixed"] and med["adaptive"]:
    print(f"Median machine time: fixed {med['fixed']:.0f} s, adaptive {med['adaptive']:.0f} s, "
          f"ratio {med['adaptive'] / med['fixed']:.2f} (goal ≤ 0.50)")
print(f"Same verdict for every ratio in every run: {'yes' if same else 'NO'}")
for k in keys:
    seen = sorted({str(r['verdicts'].get(k)) for r in rows})
    if len(seen) > 1:
        print(f"  {k}: {', '.join(seen)}")
PY
echo "runs kept in $db; table in bench/out/adaptive.md" >&2

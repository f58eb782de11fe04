#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A simulated cluster on one machine (issue 25, item 5): every MPI rank in a
# network namespace of its own, joined by a veth pair to one bridge (the
# switch), each link rate-limited in both directions with tc netem (a rate
# and a one-way latency), and paramserv's traffic alone
# (bench/dml/ps_cluster.dml: LeNet's 13.3 MB of weights pulled and pushed,
# no computing) under BSP and ASP at k = 1, 2, 4, 8. Prints a Markdown
# section on stdout (progress on stderr): per rate, utype and k, the time
# per round, rank 0's bytes in and out per round (--stats' "Rank 0 bytes
# per round" line) and the communication share. A round is one update of
# the model: under BSP one aggregated step of k pushes, under ASP one push.
#
#   sh bench/ps_cluster.sh [dml=build/release/dml] [rates="1gbit 10gbit"] [delay=50us]
#      [ks="1 2 4 8"] [utypes="BSP ASP"] [rounds=10] [reps=1] [servers=1] [wpr=1] [batch_ms=T]
#
# servers=S starts S-1 more ranks and passes servers=S to paramserv
# (sharded servers); wpr=W runs W workers per worker rank (k/W worker
# ranks, rounded up). Neither is in today's dml: they are for the runs
# after the tree, the groups and the shards land. reps=R runs each
# configuration R times (interleaved) and keeps the fastest.
#
# Then, from the compute time of one LeNet batch of 64 (measured here: the
# CPU time per batch of bench/dml/lenet_ps.dml on one thread, best of 3; or
# batch_ms=T), the predicted efficiency of BSP at k = 8, 16, 32 on the
# 10 Gbit/s link: t_batch / (t_batch + t_comm(k)), t_comm(k) the measured
# time per round (k = 16, 32: a least-squares line through the measured k).
#
# How ranks land in namespaces: mpirun runs in a namespace of its own and
# reads a hostfile whose host names are the ranks' namespaces; its remote
# shell (plm_rsh_agent) is a small script that starts Open MPI's orted for
# a "host" with `ip netns exec <host>`. The orteds reach mpirun, and the
# ranks each other, over the bridge (TCP only: btl self,tcp).
#
# Needs root and `ip netns` (skipped with a message otherwise). Creates only
# its own namespaces, veth pairs and bridge (names starting with dpc and
# its process id, addresses in 10.213.0.0/24 inside the namespaces; the
# bridge has no address, so the host's routes do not change) and removes
# them on exit, also on Ctrl-C.
set -eu
DML=build/release/dml
RATES="1gbit 10gbit"
DELAY=50us
KS="1 2 4 8"
UTYPES="BSP ASP"
ROUNDS=10
REPS=1
SERVERS=1
WPR=1
BATCH_MS=""
for a in "$@"; do
    case $a in
    dml=*) DML=${a#dml=} ;;
    rates=*) RATES=${a#rates=} ;;
    delay=*) DELAY=${a#delay=} ;;
    ks=*) KS=${a#ks=} ;;
    utypes=*) UTYPES=${a#utypes=} ;;
    rounds=*) ROUNDS=${a#rounds=} ;;
    reps=*) REPS=${a#reps=} ;;
    servers=*) SERVERS=${a#servers=} ;;
    wpr=*) WPR=${a#wpr=} ;;
    batch_ms=*) BATCH_MS=${a#batch_ms=} ;;
    *=*) echo "ps_cluster.sh: unknown option '$a'" >&2; exit 2 ;;
    *) DML=$a ;;
    esac
done
case "$DML" in /*) ;; *) DML="$PWD/$DML" ;; esac

title="## paramserv on a simulated cluster: namespaces, veth, tc (issue 25)"
skip() {
    echo "$title"
    echo
    echo "Not measured: $1"
    echo "ps_cluster.sh: skipped: $1" >&2
    exit 0
}
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, veth pairs and tc); run 'sudo sh bench/ps_cluster.sh'."
command -v mpirun >/dev/null 2>&1 && command -v orted >/dev/null 2>&1 ||
    skip "mpirun or orted is not installed (tools/install-deps.sh installs openmpi-bin)."
command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1 || skip "ip or tc is missing (iproute2)."
[ -x "$DML" ] || { echo "ps_cluster.sh: no dml at $DML" >&2; exit 1; }

P=dpc$$
NET=10.213.0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ps_cluster.XXXXXX")
NS_MADE=""
cleanup() {
    for n in $NS_MADE; do
        ip netns pids "$n" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
        ip link del "${n}o" 2>/dev/null || true
        ip netns del "$n" 2>/dev/null || true
    done
    ip link del "${P}br" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if ! ip netns add "${P}h" 2>"$TMP/err"; then
    skip "'ip netns add' fails here ($(head -n 1 "$TMP/err")): no network namespaces."
fi
NS_MADE="${P}h"
if ! ip link add "${P}br" type bridge 2>"$TMP/err"; then
    skip "cannot create a bridge ($(head -n 1 "$TMP/err"))."
fi
ip link set "${P}br" up

# link NAME IP: a namespace NAME joined to the bridge by a veth pair
# (NAME's end: eth0-like "${NAME}i", the bridge's: "${NAME}o").
link() {
    ip netns add "$1" 2>/dev/null || true
    case " $NS_MADE " in *" $1 "*) ;; *) NS_MADE="$NS_MADE $1" ;; esac
    ip link add "${1}o" type veth peer name "${1}i"
    ip link set "${1}i" netns "$1"
    ip link set "${1}o" master "${P}br" up
    ip netns exec "$1" ip link set lo up
    ip netns exec "$1" ip addr add "$NET.$2/24" dev "${1}i"
    ip netns exec "$1" ip link set "${1}i" up
}
# shape NAME RATE: both directions of NAME's link: RATE, and DELAY one way
# with netem; where the kernel has no netem (sch_netem), tbf: the rate
# alone (a token bucket of 1 ms at that rate, at least 64 KiB: the largest
# segment veth hands on).
shape() {
    if [ "$SHAPER" = netem ]; then
        ip netns exec "$1" tc qdisc replace dev "${1}i" root netem rate "$2" delay "$DELAY" limit 100000
        tc qdisc replace dev "${1}o" root netem rate "$2" delay "$DELAY" limit 100000
    else
        burst=$(echo "$2" | awk '{ r = $1 + 0; if ($1 ~ /gbit$/) r *= 1e9; else if ($1 ~ /mbit$/) r *= 1e6;
            b = r / 8 / 1000; if (b < 65536) b = 65536; printf "%d", b }')
        ip netns exec "$1" tc qdisc replace dev "${1}i" root tbf rate "$2" burst "$burst" latency 20ms
        tc qdisc replace dev "${1}o" root tbf rate "$2" burst "$burst" latency 20ms
    fi
}

# mpirun's own namespace (the launch traffic only: not shaped).
link "${P}h" 254
KMAX=1
for k in $KS; do [ "$k" -gt "$KMAX" ] && KMAX=$k; done
NRANKS=$((1 + (KMAX + WPR - 1) / WPR + SERVERS - 1))
i=0
while [ $i -lt $NRANKS ]; do
    link "${P}r$i" $((i + 1))
    i=$((i + 1))
done
SHAPER=netem
if ! ip netns exec "${P}r0" tc qdisc replace dev "${P}r0i" root netem delay "$DELAY" 2>/dev/null; then
    SHAPER=tbf
    echo "ps_cluster.sh: note: this kernel has no netem (sch_netem): links get their rate (tbf), no latency" >&2
fi

cat >"$TMP/agent" <<'EOF'
#!/bin/sh
# plm_rsh_agent: "host" is a namespace; run the command there.
host=$1
shift
exec ip netns exec "$host" sh -c "$*"
EOF
chmod +x "$TMP/agent"
SCRIPT=bench/dml/ps_cluster.dml
if [ "$SERVERS" -gt 1 ]; then
    sed "s/hyperparams=list(lr=0.5)/servers=$SERVERS, hyperparams=list(lr=0.5)/" $SCRIPT >"$TMP/ps_cluster.dml"
    SCRIPT=$TMP/ps_cluster.dml
fi

# run RATE UTYPE K: "seconds updates in out compute agg in1 out1" of one
# call (in1, out1: server rank 1's bytes per round with servers > 1, else 0).
run() {
    np=$((1 + ($3 + WPR - 1) / WPR + SERVERS - 1))
    : >"$TMP/hosts"
    i=0
    while [ $i -lt "$np" ]; do
        echo "${P}r$i slots=1" >>"$TMP/hosts"
        i=$((i + 1))
    done
    ip netns exec "${P}h" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        timeout 900 mpirun --allow-run-as-root -np "$np" --hostfile "$TMP/hosts" \
        --mca plm_rsh_agent "$TMP/agent" --mca plm_rsh_no_tree_spawn 1 \
        --mca btl self,tcp --mca btl_tcp_if_include "$NET.0/24" --mca oob_tcp_if_include "$NET.0/24" \
        -wdir "$PWD" "$DML" run "$SCRIPT" --stats -nvargs k="$3" utype="$2" rounds="$ROUNDS" \
        >"$TMP/out" 2>"$TMP/err" || { sed -n '1,8p' "$TMP/err" >&2; return 1; }
    awk '$1 == "ps_cluster" { s = $2; u = $3 }
         /^Rank 0 bytes per round:/ { i = $7; o = $9; sub(",", "", i) }
         /^Rank 1 bytes per round:/ { i1 = $7; o1 = $9; sub(",", "", i1) }
         /^Paramserv grad compute time:/ { c = $5 }
         /^Paramserv model update time:/ { split($5, a, "/"); g = a[2] }
         END { if (s != "") print s, u, i, o, c, g, i1 + 0, o1 + 0 }' "$TMP/out"
}

# t_batch: one LeNet batch of 64 on one thread (CPU time: the machine may be
# shared), best of 3; outside the namespaces.
if [ -n "$BATCH_MS" ]; then
    BATCH_FROM="given (batch_ms=)"
else
    for i in 1 2 3; do
        v=$("$DML" run bench/dml/lenet_ps.dml --threads 1 --stats -nvargs n=640 k=1 2>/dev/null | awk '
            /^Paramserv CPU time:/ { c = $4 } /^  worker 1: / { b = $3 } END { if (b > 0) printf "%.1f", 1000 * c / b }')
        [ -n "$v" ] && { [ -z "$BATCH_MS" ] || awk "BEGIN{exit !($v < $BATCH_MS)}"; } && BATCH_MS=$v
    done
    [ -n "$BATCH_MS" ] || { echo "ps_cluster.sh: bench/dml/lenet_ps.dml failed" >&2; exit 1; }
    BATCH_FROM="the CPU time per batch of \`dml run bench/dml/lenet_ps.dml --threads 1 --stats -nvargs n=640 k=1\` (10 batches of 64, upd and agg of scripts/mnist_lenet.dml), best of 3"
fi

CONFIGS=""
for r in $RATES; do for u in $UTYPES; do for k in $KS; do CONFIGS="$CONFIGS $r:$u:$k"; done; done; done
for rep in $(seq 1 "$REPS"); do
    for r in $RATES; do
        i=0
        while [ $i -lt $NRANKS ]; do shape "${P}r$i" "$r"; i=$((i + 1)); done
        for u in $UTYPES; do
            for k in $KS; do
                echo "ps_cluster: round $rep: $r $u k=$k" >&2
                v=$(run "$r" "$u" "$k") || v=""
                [ -n "$v" ] || { echo "ps_cluster.sh: $r $u k=$k failed" >&2; continue; }
                key=$(echo "${r}_${u}_$k" | tr -c 'a-zA-Z0-9_\n' '_')
                eval "old=\${best_$key:-}"
                if [ -z "$old" ] || awk "BEGIN{exit !(${v%% *} < ${old%% *})}"; then
                    eval "best_$key=\$v"
                fi
            done
        done
    done
done

echo "$title"
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)."
if [ "$SHAPER" = netem ]; then
    echo "Every rank in its own network namespace, links of RATE with $DELAY one-way latency in each"
    echo "direction (tc netem), TCP (btl self,tcp); $(basename "$SCRIPT"): LeNet's 13.3 MB model pulled and pushed"
else
    echo "Every rank in its own network namespace, links of RATE in each direction (tc tbf: this kernel has no"
    echo "netem, so no latency is added), TCP (btl self,tcp); $(basename "$SCRIPT"): LeNet's 13.3 MB model pulled and pushed"
fi
echo "by a upd and agg that compute nothing, $ROUNDS rounds per worker, servers=$SERVERS, $WPR worker(s) per rank,"
echo "best of $REPS. A round is one model update (BSP: k pushes summed and applied; ASP: one push)."
echo "Communication share: of a worker's cycle (BSP: a round; ASP: k updates, each worker's pull and push) plus one"
echo "LeNet batch of compute (t_batch, below), the cycle's part: cycle / (cycle + t_batch)."
echo
if [ "$SERVERS" -gt 1 ]; then
    echo "| link | utype | k | ranks | ms per round | rank 0 in per round (MB) | rank 0 out per round (MB) | communication share | rank 1 in, out per round (MB) |"
    echo "|---|---|---|---|---|---|---|---|---|"
else
    echo "| link | utype | k | ranks | ms per round | rank 0 in per round (MB) | rank 0 out per round (MB) | communication share |"
    echo "|---|---|---|---|---|---|---|---|"
fi
for c in $CONFIGS; do
    r=${c%%:*}
    rest=${c#*:}
    u=${rest%%:*}
    k=${rest#*:}
    key=$(echo "${r}_${u}_$k" | tr -c 'a-zA-Z0-9_\n' '_')
    eval "v=\${best_$key:-}"
    np=$((1 + (k + WPR - 1) / WPR + SERVERS - 1))
    if [ -z "$v" ]; then
        echo "| $r | $u | $k | $np | failed | | | |"
        continue
    fi
    echo "$v" | awk -v r="$r" -v u="$u" -v k="$k" -v np="$np" -v tb="$BATCH_MS" -v S="$SERVERS" '{
        per = 1000 * $1 / $2; cyc = (u == "BSP" || u == "SBP") ? per : per * k
        printf "| %s | %s | %d | %d | %.1f | %.2f | %.2f | %.0f%% |", r, u, k, np, per, $3 / 1e6, $4 / 1e6,
               100 * cyc / (cyc + tb)
        if (S > 1) printf " %.2f, %.2f |", $7 / 1e6, $8 / 1e6
        printf "\n" }'
done
echo
echo "t_batch = $BATCH_MS ms: $BATCH_FROM"
# The predicted BSP efficiency on the 10 Gbit/s link (when it was measured).
pts=""
for k in $KS; do
    key=$(echo "10gbit_BSP_$k" | tr -c 'a-zA-Z0-9_\n' '_')
    eval "v=\${best_$key:-}"
    [ -n "$v" ] && pts="$pts $k:$(echo "$v" | awk '{printf "%.3f", 1000 * $1 / $2}')"
done
if [ -n "$pts" ]; then
    echo
    echo "Predicted BSP efficiency on 10 GbE, t_batch / (t_batch + t_comm(k)), t_comm(k) the measured ms per round"
    echo "(a least-squares line through the measured k where k was not measured):"
    echo
    echo "| k | t_comm (ms per round) | from | efficiency |"
    echo "|---|---|---|---|"
    echo "$pts" | tr ' ' '\n' | sed '/^$/d' | awk -F: -v tb="$BATCH_MS" '
        { k[NR] = $1; t[NR] = $2; n = NR; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2 }
        END {
            d = n * sxx - sx * sx; b = d != 0 ? (n * sxy - sx * sy) / d : 0; a = (sy - b * sx) / n
            split("8 16 32", want, " ")
            for (j = 1; j <= 3; j++) {
                kk = want[j]; tc = ""; from = ""
                for (i = 1; i <= n; i++) if (k[i] == kk) { tc = t[i]; from = "measured" }
                if (tc == "") { tc = a + b * kk; from = sprintf("line %.1f + %.1f k", a, b) }
                printf "| %d | %.1f | %s | %.0f%% |\n", kk, tc, from, 100 * tb / (tb + tc)
            }
        }'
fi

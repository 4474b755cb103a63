#!/bin/sh
# One rank of the shared-interface study with NetPIPE (NPtcp) or iperf3.
# Rank 0 transmits: stream 1 alone, stream 2 alone, then both at once.
# The k-th rank of NP_RX receives stream k. Receivers publish their
# address on the stream's device in NP_DIR (a directory every node sees)
# once they listen; the transmitter waits for it, so no stream starts
# before its receiver listens. Only rank 0 writes stdout:
#   NP_BEGIN phase=P stream=S tool=T dev=D dst=A rc=R
#   <the program's own output>
#   NP_END phase=P stream=S
#   NP_TX phase=P dev=D bytes=B      (device's transmit counter delta)
#   NP_DONE
# Errors: "NP_ERROR <cause>" on stderr, exit status 2.
#   NP_TOOL=NPtcp|iperf3   NP_IFACES="dev1 dev2"   NP_RX="1 2"
#   NP_PORT (base; stream k uses NP_PORT+k)   NP_WAIT (s, default 120)
#   NP_NETPIPE_OPTS, NP_IPERF_OPTS (options of both ends / of the client)
rank=${PMIX_RANK:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}}
wait_s=${NP_WAIT:-120}
host=$(hostname)

fail() {
    echo "NP_ERROR $host rank $rank: $*" >&2
    exit 2
}

[ -n "$rank" ] || fail "no rank in the environment (launcher?)"
[ -d "${NP_DIR:-}" ] || fail "NP_DIR '${NP_DIR:-}' is not a directory here"
case "$NP_TOOL" in
    NPtcp|iperf3) ;;
    *) fail "NP_TOOL '$NP_TOOL': expected NPtcp or iperf3" ;;
esac
command -v "$NP_TOOL" >/dev/null || fail "$NP_TOOL not found on PATH"

dev_of() {  # the device of stream $1
    set -- "$1" $NP_IFACES
    shift "$1"
    echo "$1"
}

server() {  # stream $1: one listening server, exits after one test
    port=$((NP_PORT + $1))
    if [ "$NP_TOOL" = NPtcp ]; then
        # shellcheck disable=SC2086
        exec timeout "$wait_s" NPtcp -P "$port" $NP_NETPIPE_OPTS
    fi
    exec timeout "$wait_s" iperf3 -s -1 -p "$port"
}

client() {  # stream $1 to address $2
    port=$((NP_PORT + $1))
    if [ "$NP_TOOL" = NPtcp ]; then
        # shellcheck disable=SC2086
        timeout "$wait_s" NPtcp -h "$2" -P "$port" $NP_NETPIPE_OPTS
    else
        # shellcheck disable=SC2086
        timeout "$wait_s" iperf3 -c "$2" -p "$port" -J $NP_IPERF_OPTS
    fi
}

listening() {  # a TCP socket listens on port $1
    ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
}

address() {  # the IPv4 address of device $1
    ip -o -4 addr show dev "$1" 2>/dev/null |
        awk '{ split($4, a, "/"); print a[1]; exit }'
}

streams_of() {  # the streams of phase $1
    case "$1" in
        alone1) echo 1 ;;
        alone2) echo 2 ;;
        together) echo "1 2" ;;
    esac
}

my_streams() {  # the streams this rank receives
    k=0
    for r in $NP_RX; do
        k=$((k + 1))
        [ "$r" = "$rank" ] && printf '%s ' "$k"
    done
}

receive_phase() {  # start my servers of phase $1, publish, wait for them
    pids=''
    for s in $(streams_of "$1"); do
        case " $mine " in *" $s "*) ;; *) continue ;; esac
        dev=$(dev_of "$s")
        addr=$(address "$dev")
        [ -n "$addr" ] || fail "device $dev has no IPv4 address"
        server "$s" >/dev/null 2>&1 &
        pids="$pids $!"
        t=0
        until listening $((NP_PORT + s)); do
            kill -0 "$!" 2>/dev/null ||
                fail "$NP_TOOL server for stream $s exited at start"
            t=$((t + 1))
            [ "$t" -le $((wait_s * 10)) ] ||
                fail "$NP_TOOL server for stream $s not listening"
            sleep 0.1
        done
        echo "$addr" > "$NP_DIR/.$1.$s" && mv "$NP_DIR/.$1.$s" "$NP_DIR/$1.$s"
    done
    for p in $pids; do
        wait "$p"
    done
}

await() {  # the address file $1, within wait_s
    t=0
    until [ -s "$1" ]; do
        t=$((t + 1))
        [ "$t" -le $((wait_s * 10)) ] ||
            fail "no receiver published $1 within ${wait_s}s"
        sleep 0.1
    done
}

tx_bytes() {  # device $1's transmit counter, -1 if there is no such
    # /proc/net/dev follows this process's network namespace; /sys/class/net
    # shows the namespace that mounted /sys
    awk -v dev="$1" '{ sub(/^ */, ""); split($0, f, ":") }
        f[1] == dev { split(f[2], v, " "); print v[9]; found = 1; exit }
        END { if (!found) print -1 }' /proc/net/dev
}

transmit_phase() {  # run the clients of phase $1 at once, print them
    devs=''
    for s in $(streams_of "$1"); do
        await "$NP_DIR/$1.$s"
        d=$(dev_of "$s")
        case " $devs " in *" $d "*) ;; *) devs="$devs $d" ;; esac
    done
    for d in $devs; do
        eval "before_$d=\$(tx_bytes $d)"
    done
    for s in $(streams_of "$1"); do
        (client "$s" "$(cat "$NP_DIR/$1.$s")" > "$NP_DIR/$1.$s.out" 2>&1
         echo $? > "$NP_DIR/$1.$s.rc") &
    done
    wait
    for d in $devs; do
        eval "b=\$before_$d"
        echo "NP_TX phase=$1 dev=$d bytes=$(( $(tx_bytes "$d") - b ))"
    done
    for s in $(streams_of "$1"); do
        echo "NP_BEGIN phase=$1 stream=$s tool=$NP_TOOL dev=$(dev_of "$s")" \
             "dst=$(cat "$NP_DIR/$1.$s") rc=$(cat "$NP_DIR/$1.$s.rc")"
        cat "$NP_DIR/$1.$s.out"
        echo "NP_END phase=$1 stream=$s"
    done
}

mine=$(my_streams)
if [ "$rank" = 0 ]; then
    for phase in alone1 alone2 together; do
        transmit_phase "$phase"
    done
    echo "NP_DONE"
elif [ -n "$mine" ]; then
    command -v ss >/dev/null || fail "ss (iproute2) not found on PATH"
    for phase in alone1 alone2 together; do
        receive_phase "$phase"
    done
fi

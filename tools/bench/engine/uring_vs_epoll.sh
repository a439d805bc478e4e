#!/bin/bash
# uring_vs_epoll.sh BUILD [SIZE_MIB] [PAIRS]: io_uring against epoll, paired and
# interleaved, for the NFSv3 and the NFSv4.1 engine at nconnect 1, 4, 8 (paired.sh io).
# UVE_RAND_OPS, UVE_VERS, UVE_NCONNECT: paired.sh's PAIRED_RAND_OPS, PAIRED_ROWS and
# PAIRED_NCONNECT.
set -euo pipefail
export PAIRED_RAND_OPS=${UVE_RAND_OPS:-${PAIRED_RAND_OPS:-20000}}
export PAIRED_ROWS=${UVE_VERS:-${PAIRED_ROWS:-3 4.1}}
export PAIRED_NCONNECT=${UVE_NCONNECT:-${PAIRED_NCONNECT:-1 4 8}}
exec "$(dirname "$0")/paired.sh" "${1:?usage: uring_vs_epoll.sh BUILD [SIZE_MIB] [PAIRS]}" io "${@:2}"

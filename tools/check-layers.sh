#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The source tree's layers point one way (README.md, "Layout"):
#
#   base/  <-  parser/, lexer/  <-  runtime/  <-  builtins/  <-  cli/
#
# A file may include headers of its own layer or a lower one, never of a
# higher one (nor of tests/, bench/, tools/), whether the include is written
# "../runtime/x.h", "runtime/x.h" or "x.h". Some headers are private to
# their folder (PRIVATE below). bison's and flex's headers count as the
# parser's and the lexer's; other headers not in the tree are not checked.
#
# Prints one "file:line: ..." line for each include that breaks the rule
# and exits 1 if there is any. Run by `make test`.
# Usage: sh tools/check-layers.sh [repository root]
cd "${1:-.}" || exit 2

LAYERS="base parser lexer runtime builtins cli"
# header:folder -- the header may be included only from files in folder/.
PRIVATE="runtime/eval.h:runtime runtime/resolve_int.h:runtime builtins/io/internal.h:builtins/io cli/testrun_int.h:cli"

# Headers made at build time (build/<mode>/gen) and the layer of their source.
GENERATED="dml.tab.h:parser dml.lex.h:lexer"

# shellcheck disable=SC2086
FILES=$(find $LAYERS -type f \( -name '*.c' -o -name '*.h' -o -name '*.y' -o -name '*.l' -o -name '*.def' \) | sort)

# shellcheck disable=SC2086
printf '%s\n' $FILES | awk -v private="$PRIVATE" -v generated="$GENERATED" '
BEGIN {
    rank["base"] = 0; rank["parser"] = 1; rank["lexer"] = 1
    rank["runtime"] = 2; rank["builtins"] = 3; rank["cli"] = 4
    # Folders above every layer: nothing in a layer may include from them.
    rank["tests"] = 9; rank["bench"] = 9; rank["tools"] = 9
    np = split(private, pv, " ")
    for (i = 1; i <= np; i++) {
        k = index(pv[i], ":")
        owner[substr(pv[i], 1, k - 1)] = substr(pv[i], k + 1)
    }
    ng = split(generated, gv, " ")
    for (i = 1; i <= ng; i++) {
        k = index(gv[i], ":")
        gen[substr(gv[i], 1, k - 1)] = substr(gv[i], k + 1)
    }
    bad = 0
}
# First file: the list of files in the layers.
NR == FNR { known[$0] = 1; next }
FNR == 1 {
    dir = FILENAME; sub(/\/[^\/]*$/, "", dir)
    split(FILENAME, parts, "/"); from = parts[1]
}
/^[ \t]*#[ \t]*include[ \t]*"/ {
    inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
    if (inc ~ /^\.\.?\//)
        target = norm(dir "/" inc)
    else if (norm(dir "/" inc) in known)
        target = norm(dir "/" inc)
    else
        target = norm(inc)
    split(target, tp, "/"); to = tp[1]
    if (inc in gen)
        to = gen[inc]
    else if (!(to in rank) || (rank[to] < 9 && !(target in known)))
        next            # not ours
    if (rank[to] > rank[from]) {
        printf "%s:%d: includes \"%s\" (%s/, a higher layer than %s/)\n", FILENAME, FNR, inc, to, from
        bad++
    }
    if ((target in owner) && index(FILENAME, owner[target] "/") != 1) {
        printf "%s:%d: includes \"%s\", private to %s/\n", FILENAME, FNR, inc, owner[target]
        bad++
    }
}
# "a/b/../c/./d.h" -> "a/c/d.h"
function norm(p,    n, seg, out, k, i) {
    n = split(p, seg, "/")
    k = 0
    for (i = 1; i <= n; i++) {
        if (seg[i] == "" || seg[i] == ".")
            continue
        if (seg[i] == ".." && k > 0 && out[k] != "..")
            k--
        else
            out[++k] = seg[i]
    }
    p = ""
    for (i = 1; i <= k; i++)
        p = p (i > 1 ? "/" : "") out[i]
    return p
}
END {
    if (bad)
        printf "check-layers: %d include(s) against the layering (tools/check-layers.sh)\n", bad
    exit (bad > 0)
}
' - $FILES

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The layers point one way at link time too (tools/check-layers.sh checks
# the includes; README.md, "Layout"):
#
#   base/  <-  parser/, lexer/  <-  runtime/  <-  builtins/  <-  cli/
#
# An object may use a symbol defined in an object of its own layer or a
# lower one, never one defined only higher up: a runtime/ object calling a
# function of builtins/ (or cli/) links today only because the executable
# happens to hold both, and a declaration in a runtime header does not make
# the definition the runtime's. What the runtime needs from above, it
# declares and lets the upper layer install (runtime/builtin_api.h).
# Symbols defined outside our objects (libc, OpenBLAS, ...) are not checked.
#
# Prints one "object: symbol ..." line for each such reference and exits 1
# if there is any. Run by `make test` over the objects it built.
# Usage: sh tools/check-link-layers.sh OBJDIR [OBJECT...]
#   OBJDIR   the folder the objects' paths start with (build/release/obj);
#            an object's layer is the first folder under it
#   OBJECT   the objects to check (default: every *.o under OBJDIR; give the
#            list when stale objects of deleted sources may lie there)
objdir=${1:?usage: sh tools/check-link-layers.sh OBJDIR [OBJECT...]}
objdir=${objdir%/}
shift
if [ $# -eq 0 ]; then
    # shellcheck disable=SC2046
    set -- $(find "$objdir" -name '*.o' | sort)
fi
command -v nm >/dev/null || { echo "check-link-layers: nm not found (binutils)" >&2; exit 2; }
[ $# -gt 0 ] || { echo "check-link-layers: no objects under $objdir" >&2; exit 2; }

# -A: every line starts with the object's path; -g: external symbols only.
nm -A -g "$@" | awk -v objdir="$objdir/" '
BEGIN {
    rank["base"] = 0; rank["parser"] = 1; rank["lexer"] = 1
    rank["runtime"] = 2; rank["builtins"] = 3; rank["cli"] = 4
    # Objects made from generated sources (build/<mode>/gen), by source.
    gen["dml.tab.o"] = "parser"; gen["dml.lex.o"] = "lexer"
    gen["doc_text.o"] = "builtins"      # doc/ embedded; read by builtins/help.c
    bad = 0
}
{
    # "path/x.o:0000000000000000 T sym" or "path/x.o:                 U sym"
    k = index($0, ":")
    obj = substr($0, 1, k - 1)
    n = split(substr($0, k + 1), f, " ")
    if (n < 2)
        next
    type = f[n - 1]; sym = f[n]
    name = obj
    if (index(name, objdir) == 1)
        name = substr(name, length(objdir) + 1)
    split(name, parts, "/"); layer = parts[1]
    if (layer == "gen") {
        base = parts[2]
        layer = (base in gen) ? gen[base] : ""
    }
    if (!(layer in rank))
        next
    if (type == "U") {
        nref++; ref_obj[nref] = name; ref_sym[nref] = sym; ref_rank[nref] = rank[layer]
        ref_layer[nref] = layer
    } else {
        # The lowest layer that defines sym, and one object there.
        if (!(sym in low) || rank[layer] < low[sym]) {
            low[sym] = rank[layer]; low_layer[sym] = layer; low_obj[sym] = name
        }
    }
}
END {
    for (i = 1; i <= nref; i++) {
        s = ref_sym[i]
        if ((s in low) && low[s] > ref_rank[i]) {
            printf "%s: uses %s, defined in %s (%s/, a higher layer than %s/)\n", ref_obj[i], s,
                   low_obj[s], low_layer[s], ref_layer[i]
            bad++
        }
    }
    if (bad)
        printf "check-link-layers: %d reference(s) against the layering (tools/check-link-layers.sh)\n", bad
    exit (bad > 0)
}
'

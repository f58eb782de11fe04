/* SPDX-License-Identifier: Apache-2.0
 * Run statistics (--stats): builtins append report sections, main prints
 * them after the run. Owned and written by the main thread only. */
#ifndef DML_RUNTIME_RUNSTATS_H
#define DML_RUNTIME_RUNSTATS_H

#include "../base/strbuf.h"

struct Stats {
    StrBuf report;          /* sections appended by paramserv and friends */
};

#endif

/* SPDX-License-Identifier: Apache-2.0
 * paramserv on Open MPI, as the command-line front end sees it. */
#ifndef DML_BUILTINS_PARAMSERV_PSMPI_H
#define DML_BUILTINS_PARAMSERV_PSMPI_H

#include <stdbool.h>

#include "../../base/diag.h"

/* If this process was launched by mpirun (OMPI_COMM_WORLD_SIZE is set),
 * start MPI; outside mpirun nothing is loaded or initialised. Worker ranks
 * (1..N-1) then serve paramserv calls until rank 0 says to exit. Returns
 * true when main must exit now with *status (a worker rank, or a failed
 * start-up, said through 'sink'); false on rank 0 and outside mpirun (run
 * the script). */
bool ps_mpi_launch(const DiagSink *sink, int *status);
/* Rank 0, when the script has ended: every worker rank exits with
 * 'status'; MPI is closed. Nothing outside mpirun. */
void ps_mpi_finish(int status);
/* dml run --trace FILE: paramserv calls write their timeline to FILE
 * (builtins/paramserv/trace.c). */
void ps_trace_set_path(const char *path);
/* This process was launched by mpirun (Open MPI is up). */
bool ps_mpi_launched(void);
/* Worker rank: serve paramserv calls; returns the exit status rank 0 sent,
 * or -1 when this rank lost its connection to rank 0 (mpi_error says why). */
int ps_mpi_worker_loop(void);

#endif

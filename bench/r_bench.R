# SPDX-License-Identifier: Apache-2.0
# R peer for bench/run.sh, timed like the dml scripts (first, then the median
# of 11). R's BLAS is the system's (OpenBLAS through Debian's alternatives);
# the caller sets OPENBLAS_NUM_THREADS.
#   Rscript bench/r_bench.R matmul N    -> "matmul N <first GF/s> <steady GF/s>"
#   Rscript bench/r_bench.R elementwise -> "elementwise <first s> <steady s>"
args <- commandArgs(trailingOnly = TRUE)
timed <- function(f) {
  t0 <- proc.time()[["elapsed"]]; f(); first <- proc.time()[["elapsed"]] - t0
  ts <- numeric(11)
  for (r in 1:11) { t0 <- proc.time()[["elapsed"]]; f(); ts[r] <- proc.time()[["elapsed"]] - t0 }
  c(first, median(ts))
}
set.seed(1)
if (args[1] == "matmul") {
  n <- as.integer(args[2])
  A <- matrix(runif(n * n), n, n); B <- matrix(runif(n * n), n, n)
  t <- timed(function() A %*% B)
  f <- 2 * n^3 / 1e9
  cat(sprintf("matmul %d %.3f %.3f\n", n, f / t[1], f / t[2]))
} else {
  X <- matrix(runif(1e6), 1000, 1000); Y <- matrix(runif(1e6), 1000, 1000)
  t <- timed(function() exp(X) * Y + X)
  cat(sprintf("elementwise %.6f %.6f\n", t[1], t[2]))
}

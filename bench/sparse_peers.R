# SPDX-License-Identifier: Apache-2.0
# R's Matrix on bench/sparse_bench.c's cases (run by bench/sparse_bench.sh):
#   Rscript bench/sparse_peers.R rows cols density reps
# X: dgCMatrix (compressed columns, R's default) with about density*cols
# entries per row, uniform values. Matrix runs these on one thread. t(X) %*% X
# (crossprod) on X's first 1000 columns at 10x the density.
suppressMessages(library(Matrix))
a <- commandArgs(trailingOnly = TRUE)
rows <- as.integer(a[1]); cols <- as.integer(a[2]); dens <- as.numeric(a[3]); reps <- as.integer(a[4])
set.seed(1)
rand_sparse <- function(rows, cols, dens) {
  counts <- rbinom(rows, cols, dens)
  i <- rep.int(seq_len(rows), counts)
  j <- sample.int(cols, length(i), replace = TRUE)
  sparseMatrix(i = i, j = j, x = runif(length(i)), dims = c(rows, cols))
}
X <- rand_sparse(rows, cols, dens)
Xn <- rand_sparse(rows, 1000L, 10 * dens)
gc()
cat(sprintf("# R %s Matrix %s X nnz %.0f\n", getRversion(), packageVersion("Matrix"), length(X@x)))
cat(sprintf("R bytes_per_nnz_object 1 %.2f\n", as.numeric(object.size(X)) / length(X@x)))
v <- runif(cols); u <- runif(rows)
# proc.time() counts in milliseconds at best; a few repetitions of a fast
# operation show as 0 or 1 ms steps.
timed <- function(name, f) {
  ts <- numeric(reps); cs <- numeric(reps)
  for (k in seq_len(reps)) {
    t0 <- proc.time()
    r <- f()
    d <- proc.time() - t0
    ts[k] <- d[["elapsed"]] * 1e3
    cs[k] <- (d[["user.self"]] + d[["sys.self"]]) * 1e3
  }
  cat(sprintf("R %s 1 %.2f %.2f\n", name, median(ts), median(cs)))
}
timed("X%*%v", function() X %*% v)
timed("t(X)%*%v", function() crossprod(X, u))
timed("rowSums", function() rowSums(X))
timed("colSums", function() colSums(X))
timed("X*2", function() X * 2)
timed("t(X)%*%X", function() crossprod(Xn))

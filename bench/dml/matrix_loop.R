# R peer of matrix_loop.dml.
A <- matrix(0.5, 10, 10)
s <- 0
for (i in 1:200000) {
  A <- A * 0.999 + 0.001
  s <- s + sum(A)
}
print(s)

f <- function(x) {
  x * 2 + 1
}
s <- 0
for (i in 1:500000) {
  s <- s + f(i)
}
print(s)

s <- 0
for (i in 1:2000000) {
  s <- s + i * 0.5
}
print(s)

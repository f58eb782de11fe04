# dml — one non-recursive GNU Makefile.
#   make                      build build/release/dml
#   make test                 build, check the layers (tools/check-layers.sh on the includes,
#                             tools/check-link-layers.sh on the objects), then run every
#                             test (ends with "N passed, N failed")
#   make SANITIZE=address,undefined test    the same under ASan+UBSan (build/asan/)
#   make SANITIZE=thread test               under TSan (build/tsan/)
#   make WERROR=1 ...         any of the above with warnings as errors (what CI does)
#   make bench                benchmarks -> bench/RESULTS.md
#   make install PREFIX=/usr/local [DESTDIR=]
PREFIX ?= /usr/local
CC ?= cc
CFLAGS ?= -O2 -g
BISON ?= bison
FLEX ?= flex
PKG_CONFIG ?= pkg-config

ifeq ($(SANITIZE),)
  MODE := release
  SANFLAGS :=
else ifneq ($(findstring thread,$(SANITIZE)),)
  MODE := tsan
  SANFLAGS := -fsanitize=thread
else
  MODE := asan
  SANFLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  # gcc leaves double->int overflow out of 'undefined' (clang includes it).
  ifneq ($(findstring undefined,$(SANITIZE)),)
    SANFLAGS += -fsanitize=float-cast-overflow -fno-sanitize-recover=float-cast-overflow
  endif
endif
B := build/$(MODE)
# LeakSanitizer's defaults (tests/sanitizer/lsan_hooks.c): linked into the
# AddressSanitizer builds only, never into the product.
SAN_OBJS :=
ifeq ($(MODE),asan)
  SAN_OBJS := $(B)/obj/tests/sanitizer/lsan_hooks.o
endif

BLAS_CFLAGS := $(shell $(PKG_CONFIG) --cflags openblas 2>/dev/null)
BLAS_LIBS := $(shell $(PKG_CONFIG) --libs openblas 2>/dev/null || echo -lopenblas)
RL_CFLAGS := $(shell $(PKG_CONFIG) --cflags readline 2>/dev/null)
RL_LIBS := $(shell $(PKG_CONFIG) --libs readline 2>/dev/null || echo -lreadline)
ZLIB_LIBS := $(shell $(PKG_CONFIG) --libs zlib 2>/dev/null || echo -lz)
# Open MPI: only its headers at build time. libmpi is loaded with dlopen when
# dml is launched by mpirun (builtins/paramserv/mpi_comm.c), so a plain dml
# neither links nor loads it. Without the headers, MPI support is left out.
MPI_CFLAGS := $(shell $(PKG_CONFIG) --cflags-only-I ompi-c 2>/dev/null)
ifneq ($(wildcard $(patsubst -I%,%/mpi.h,$(firstword $(MPI_CFLAGS)))),)
  MPI_CFLAGS += -DDML_HAVE_MPI
else
  MPI_CFLAGS :=
endif
# cairo: plot() pictures (PNG, SVG, PDF; builtins/plot_cairo.c).
CAIRO_CFLAGS := $(shell $(PKG_CONFIG) --cflags cairo 2>/dev/null)
CAIRO_LIBS := $(shell $(PKG_CONFIG) --libs cairo 2>/dev/null || echo -lcairo)
# The Jupyter kernel (cli/kernel*.c, only dml-kernel links it): ZeroMQ
# for the sockets, jansson for JSON, OpenSSL's libcrypto for HMAC-SHA256.
KERNEL_CFLAGS := $(shell $(PKG_CONFIG) --cflags libzmq jansson libcrypto 2>/dev/null)
KERNEL_LIBS := $(shell $(PKG_CONFIG) --libs libzmq jansson libcrypto 2>/dev/null || echo -lzmq -ljansson -lcrypto)

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wwrite-strings
# make WERROR=1: warnings are errors (CI builds this way, .ci/run).
ifeq ($(WERROR),1)
  WARN += -Werror
endif
REQ_CFLAGS := -std=gnu11 $(WARN) -I. -I$(B)/gen -pthread -MMD -MP $(BLAS_CFLAGS) $(RL_CFLAGS) $(CAIRO_CFLAGS) $(SANFLAGS)
# Our objects' allocations go through base/failalloc.c (DML_FAIL_ALLOC).
WRAP_LD := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup,--wrap=posix_memalign
LIBS := $(WRAP_LD) $(BLAS_LIBS) $(RL_LIBS) $(ZLIB_LIBS) $(CAIRO_LIBS) -lm -pthread

SRCS := $(wildcard base/*.c parser/*.c runtime/*.c builtins/*.c builtins/io/*.c builtins/paramserv/*.c)
# cli/: the front ends (main, REPL, test runner); only the executable links them.
# The Jupyter kernel (cli/kernel*.c) is a second executable, dml-kernel, that
# `dml kernel ...` starts: only it links ZeroMQ, jansson and libcrypto, so
# every other run of dml does not load them (they doubled its start-up).
KERNEL_SRCS := $(wildcard cli/kernel*.c)
CLI_SRCS := $(filter-out $(KERNEL_SRCS),$(wildcard cli/*.c))
LIB_SRCS := $(SRCS)
GEN_SRCS := $(B)/gen/dml.tab.c $(B)/gen/dml.lex.c $(B)/gen/doc_text.c
OBJS := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRCS)) $(B)/obj/gen/dml.tab.o $(B)/obj/gen/dml.lex.o \
        $(B)/obj/gen/doc_text.o
# The reference in doc/ is embedded in the binary (help() and ?name read it).
DOC_MD := doc/language.md doc/builtins.md doc/paramserv.md doc/nn.md doc/environment.md
CLI_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(CLI_SRCS))
KERNEL_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(KERNEL_SRCS))
DML_KERNEL := $(B)/dml-kernel
DML := $(B)/dml

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/unit/%,$(UNIT_SRCS))

ifeq ($(V),1)
  Q :=
else
  Q := @
endif

.PHONY: all test test-threads unit check-layers check-link-layers install clean bench fuzz fuzz-replay
all: $(DML) $(DML_KERNEL)

$(DML): $(OBJS) $(CLI_OBJS) $(SAN_OBJS)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(LIBS) $(LDFLAGS)
# dml-kernel: the same program with main.c built to serve `kernel` itself.
$(DML_KERNEL): $(OBJS) $(filter-out $(B)/obj/cli/main.o,$(CLI_OBJS)) $(B)/obj/cli/main_kernel.o $(KERNEL_OBJS) $(SAN_OBJS)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(LIBS) $(KERNEL_LIBS) $(LDFLAGS)
$(B)/obj/cli/kernel%.o: REQ_CFLAGS += $(KERNEL_CFLAGS)
$(B)/obj/cli/main_kernel.o: cli/main.c | $(B)/gen/dml.tab.h $(B)/gen/dml.lex.h
	@mkdir -p $(dir $@)
	@echo "  CC      $< (dml-kernel)"
	$(Q)$(CC) $(REQ_CFLAGS) -DDML_KERNEL_EXE $(CFLAGS) -c -o $@ $<

$(B)/libdml.a: $(OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/gen/dml.tab.c $(B)/gen/dml.tab.h: parser/dml.y
	@mkdir -p $(dir $@)
	@echo "  BISON   $<"
	$(Q)$(BISON) -Wall -Werror --defines=$(B)/gen/dml.tab.h -o $(B)/gen/dml.tab.c $<

$(B)/gen/dml.lex.c $(B)/gen/dml.lex.h: lexer/dml.l $(B)/gen/dml.tab.h
	@mkdir -p $(dir $@)
	@echo "  FLEX    $<"
	$(Q)$(FLEX) --header-file=$(B)/gen/dml.lex.h -o $(B)/gen/dml.lex.c $<

$(B)/gen/doc_text.c: $(DOC_MD) tools/embed_doc.sh
	@mkdir -p $(dir $@)
	@echo "  EMBED   doc/*.md"
	$(Q)sh tools/embed_doc.sh $@ $(DOC_MD)

$(B)/obj/gen/%.o: $(B)/gen/%.c $(B)/gen/dml.tab.h $(B)/gen/dml.lex.h
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(REQ_CFLAGS) -Wno-missing-prototypes -Wno-unused-function -Wno-sign-compare $(CFLAGS) -c -o $@ $<

$(B)/obj/%.o: %.c | $(B)/gen/dml.tab.h $(B)/gen/dml.lex.h
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(REQ_CFLAGS) $(CFLAGS) -c -o $@ $<

# Only this file sees mpi.h.
$(B)/obj/builtins/paramserv/mpi_comm.o: builtins/paramserv/mpi_comm.c | $(B)/gen/dml.tab.h $(B)/gen/dml.lex.h
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(REQ_CFLAGS) $(MPI_CFLAGS) $(CFLAGS) -c -o $@ $<

# tests/unit/run_src.c: "load and run a program from a string", shared by
# the unit tests and the fuzz target.
$(B)/unit/%: tests/unit/%.c $(B)/unit/run_src.o $(B)/libdml.a $(SAN_OBJS)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(REQ_CFLAGS) $(CFLAGS) -o $@ $< $(B)/unit/run_src.o $(B)/libdml.a $(SAN_OBJS) $(LIBS)

$(B)/unit/run_src.o: tests/unit/run_src.c | $(B)/gen/dml.tab.h $(B)/gen/dml.lex.h
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(REQ_CFLAGS) $(CFLAGS) -c -o $@ $<

unit: $(UNIT_BINS)

# The layers point one way: base <- parser <- runtime <- builtins <- cli.
check-layers:
	$(Q)sh tools/check-layers.sh

# ... and at link time: no object uses a symbol defined only in a higher layer.
check-link-layers: $(OBJS) $(CLI_OBJS) $(KERNEL_OBJS)
	$(Q)sh tools/check-link-layers.sh $(B)/obj $(OBJS) $(CLI_OBJS) $(KERNEL_OBJS)

test: $(DML) $(DML_KERNEL) $(UNIT_BINS) check-layers check-link-layers
	$(Q)DML=$(DML) UNIT_DIR=$(B)/unit sh tests/run.sh

# Only the tests that start threads (paramserv, parfor, Open MPI, the unit
# tests of the thread pool's kernels and of paramserv; tests/run.sh's
# THREADED), for ThreadSanitizer. OpenBLAS's own threads are not
# instrumented, so BLAS runs single-threaded here.
test-threads: $(DML) $(DML_KERNEL) $(UNIT_BINS)
	$(Q)THREADED=1 OPENBLAS_NUM_THREADS=1 DML=$(DML) UNIT_DIR=$(B)/unit sh tests/run.sh

# libFuzzer targets (clang): the DML front end + evaluator, the file
# parsers of read(), the Open MPI wire format of paramserv and its
# checkpoint files. Run: see tests/fuzz/README.md (fuzz-replay: what CI runs)
# Our warnings too (flex's scanner leaves one static function unused).
# UBSan findings abort, so the fuzzer (and fuzz-replay) counts them as crashes;
# recoverable, they were only printed, and -fork discards the children's output.
# IO_MAX_BYTES caps the matrix size a file's header may ask for (builtins/io/common.c).
FUZZ_CFLAGS := -std=gnu11 -g -O1 -I. -I$(B)/gen -pthread -fno-sanitize-recover=undefined $(WARN) -Wno-unused-function \
               -DIO_MAX_BYTES=268435456
FUZZ_FLAGS := $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined
FUZZ_TARGETS := build/fuzz/fuzz_dml build/fuzz/fuzz_csv build/fuzz/fuzz_wire build/fuzz/fuzz_checkpoint \
                build/fuzz/fuzz_kernel_msg
FUZZ_TARGETS += build/fuzz/fuzz_frame_csv
FUZZ_TARGETS += build/fuzz/fuzz_sparse_io
fuzz: $(FUZZ_TARGETS)
# The whole library, instrumented, compiled once (one object per source) into
# build/fuzz/libdml.a: every target links the archive, and the linker takes
# the objects the target needs, so a new dependency between our files needs
# no edit here.
FUZZ_OBJS := $(patsubst %.c,build/fuzz/obj/%.o,$(LIB_SRCS)) $(patsubst $(B)/gen/%.c,build/fuzz/obj/gen/%.o,$(GEN_SRCS))
FUZZ_LIB := build/fuzz/libdml.a
FUZZ_LINK := $(FUZZ_LIB) build/fuzz/obj/tests/sanitizer/lsan_hooks.o
build/fuzz/obj/%.o: %.c | $(B)/gen/dml.tab.h $(B)/gen/dml.lex.h
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined $(BLAS_CFLAGS) $(RL_CFLAGS) $(CAIRO_CFLAGS) \
	    -MMD -MP -c -o $@ $<
build/fuzz/obj/gen/%.o: $(B)/gen/%.c $(B)/gen/dml.tab.h $(B)/gen/dml.lex.h
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	$(Q)clang $(FUZZ_CFLAGS) -Wno-missing-prototypes -Wno-sign-compare -fsanitize=fuzzer-no-link,address,undefined \
	    $(BLAS_CFLAGS) $(RL_CFLAGS) $(CAIRO_CFLAGS) -MMD -MP -c -o $@ $<
-include $(FUZZ_OBJS:.o=.d)
$(FUZZ_LIB): $(FUZZ_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^
build/fuzz/fuzz_dml: tests/fuzz/fuzz_dml.c tests/unit/run_src.c $(FUZZ_LINK)
	@echo "  FUZZ    $@"
	$(Q)clang $(FUZZ_FLAGS) $(BLAS_CFLAGS) $(RL_CFLAGS) $(CAIRO_CFLAGS) -o $@ $^ $(LIBS)
build/fuzz/fuzz_checkpoint: tests/fuzz/fuzz_checkpoint.c $(FUZZ_LINK)
	@echo "  FUZZ    $@"
	$(Q)clang $(FUZZ_FLAGS) $(BLAS_CFLAGS) $(RL_CFLAGS) $(CAIRO_CFLAGS) -o $@ $^ $(LIBS)
# The file parsers of read() and the .mtd reader.
build/fuzz/fuzz_csv: tests/fuzz/fuzz_csv.c $(FUZZ_LINK)
	@echo "  FUZZ    $@"
	$(Q)clang $(FUZZ_FLAGS) -o $@ $^ $(LIBS)
# The readers that build a CSR (text, mm, libsvm, sparse binary), round trips.
build/fuzz/fuzz_sparse_io: tests/fuzz/fuzz_sparse_io.c $(FUZZ_LINK)
	@echo "  FUZZ    $@"
	$(Q)clang $(FUZZ_FLAGS) -o $@ $^ $(LIBS)
# Frames in csv and text: quoted fields spanning lines, round trips.
build/fuzz/fuzz_frame_csv: tests/fuzz/fuzz_frame_csv.c $(FUZZ_LINK)
	@echo "  FUZZ    $@"
	$(Q)clang $(FUZZ_FLAGS) -o $@ $^ $(LIBS)
# The decoders alone: no MPI, no interpreter.
build/fuzz/fuzz_wire: tests/fuzz/fuzz_wire.c $(FUZZ_LINK)
	@echo "  FUZZ    $@"
	$(Q)clang $(FUZZ_FLAGS) -o $@ $^ $(LIBS)

# The Jupyter kernel's message decoder alone: no sockets, no interpreter.
build/fuzz/fuzz_kernel_msg: tests/fuzz/fuzz_kernel_msg.c cli/kernel_msg.c $(FUZZ_LINK)
	@echo "  FUZZ    $@"
	$(Q)clang $(FUZZ_FLAGS) $(KERNEL_CFLAGS) -o $@ $^ $(KERNEL_LIBS) $(LIBS)

# CI: every corpus input once (-runs=0), under the fuzzers' ASan+UBSan.
fuzz-replay: fuzz
	$(Q)cd build/fuzz && ./fuzz_dml -runs=0 -rss_limit_mb=4096 ../../tests/fuzz/corpus_dml
	$(Q)cd build/fuzz && ./fuzz_csv -runs=0 -rss_limit_mb=4096 ../../tests/fuzz/corpus
	$(Q)cd build/fuzz && ./fuzz_wire -runs=0 -rss_limit_mb=4096 ../../tests/fuzz/corpus_wire
	$(Q)cd build/fuzz && ./fuzz_checkpoint -runs=0 -rss_limit_mb=4096 ../../tests/fuzz/corpus_checkpoint
	$(Q)cd build/fuzz && ./fuzz_kernel_msg -runs=0 -rss_limit_mb=4096 ../../tests/fuzz/corpus_kernel
	$(Q)cd build/fuzz && ./fuzz_frame_csv -runs=0 -rss_limit_mb=4096 ../../tests/fuzz/corpus_frame
	$(Q)cd build/fuzz && ./fuzz_sparse_io -runs=0 -rss_limit_mb=4096 ../../tests/fuzz/corpus_sparse

bench: $(DML)
	$(Q)env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE DML=$(DML) sh bench/run.sh

# bin/dml; share/dml/{stdlib,scripts,data} (the examples run from any folder:
# source() finds the stdlib and read("data/...") the data next to bin/);
# share/doc/dml (the reference, also built into the binary); the man page.
install: $(DML) $(DML_KERNEL)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/dml/scripts $(DESTDIR)$(PREFIX)/share/dml/data \
	    $(DESTDIR)$(PREFIX)/share/doc/dml $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(DML) $(DESTDIR)$(PREFIX)/bin/dml
	install -m 755 $(DML_KERNEL) $(DESTDIR)$(PREFIX)/bin/dml-kernel
	cp -R stdlib $(DESTDIR)$(PREFIX)/share/dml/
	install -m 644 scripts/*.dml $(DESTDIR)$(PREFIX)/share/dml/scripts/
	install -m 644 data/* $(DESTDIR)$(PREFIX)/share/dml/data/
	install -m 644 doc/README.md $(DOC_MD) doc/plot.md doc/jupyter.md doc/*.ipynb doc/*.png $(DESTDIR)$(PREFIX)/share/doc/dml/
	install -m 644 doc/dml.1 $(DESTDIR)$(PREFIX)/share/man/man1/dml.1

clean:
	rm -rf build

# Every object's and unit test's header dependencies (gcc -MMD), so touching a
# header, tests/unit/check.h included, rebuilds exactly what includes it.
-include $(shell find build/$(MODE)/obj build/$(MODE)/unit -name '*.d' 2>/dev/null)

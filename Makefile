# tex — plain GNU make build.
#
#   make              lib/libtex.a and lib/libtex.so (soname libtex.so.0)
#   make test         deps, check-deps, library, tests and examples (-Werror), then
#                     tests/run_tests.sh: every test program, the install test, a summary line
#   make test-long    20,000 random schedules through the JIT (tests/unit/test_jit_random.c,
#                     gcc and clang) in $(JOBS) processes; LONG_TRIALS= changes the count
#   make asan         the same programs built in build-asan/ under ASan + UBSan
#   make valgrind     the test programs under valgrind --leak-check=full
#   make demo         builds and runs examples/demo.c
#   make bench        builds and runs every bench/*.c program, then writes bench/results/
#                     latest.csv, latest.md, latest.svg (tools/bench_report.sh) and prints the table
#   make install      PREFIX=/usr/local DESTDIR= : headers, libraries, tex.pc; make uninstall
#   make deps         installs missing Debian packages (as root) or prints the command
#   make check-deps   fails if an #include or a symbol (nm) points against util <- ir <- schedule
#                     <- lower <- autosched <- rt <- backends <- runtime <- interp
#   make format       clang-format -i on the C sources; make format-check only checks
#   make clean
#
# Objects go to $(BUILD)/ (build/ by default, build-asan/ for make asan); the
# libraries of the default build go to lib/, those of any other build to $(BUILD)/lib/.
# V=1 prints the commands. Every build uses -Werror.

CC           ?= cc
PKG_CONFIG   ?= pkg-config
PREFIX       ?= /usr/local
DESTDIR      ?=
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BUILD        ?= build
V            ?= 0
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
CLANG_FORMAT ?= $(shell command -v clang-format-14 || command -v clang-format)

, := ,
VERSION     := 0.1.0
SOVERSION   := 0

WARNINGS := -Wall -Wextra -Werror -Wpedantic -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wold-style-definition -Wundef -Wwrite-strings \
            -Wcast-qual -Wvla -Wformat=2 -Wno-format-nonliteral
OPT      ?= -O2 -g
SANITIZE ?=
# make asan's flags; exported to the tests as TEX_SANITIZE_FLAGS so that JIT-compiled
# code can be built with them too.
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

FFI_CFLAGS := $(shell $(PKG_CONFIG) --cflags libffi 2>/dev/null)
FFI_LIBS   := $(shell $(PKG_CONFIG) --libs libffi 2>/dev/null || echo -lffi)
LIBS       := $(FFI_LIBS) -lm -ldl -lpthread
# OpenBLAS (libopenblas-openmp-dev) for the demo and the benchmarks, when installed.
BLAS_FLAGS  = $(shell $(PKG_CONFIG) --exists openblas 2>/dev/null && \
                echo -DTEX_HAVE_OPENBLAS=1 `$(PKG_CONFIG) --cflags --libs openblas`)

STD_CFLAGS     := -std=c11 $(WARNINGS) $(OPT) -MMD -MP
LIB_CFLAGS     := $(STD_CFLAGS) -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinclude -Isrc \
                  $(FFI_CFLAGS) -fPIC -fvisibility=hidden -DTEX_BUILDING_LIBRARY $(SANITIZE)
TEST_CFLAGS    := $(STD_CFLAGS) -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinclude -Isrc \
                  -Itests $(SANITIZE)
EXAMPLE_CFLAGS := $(STD_CFLAGS) -Iinclude $(SANITIZE)
BENCH_CFLAGS   := $(STD_CFLAGS) -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinclude -Isrc \
                  -Itests -O3 -march=native

ifeq ($(V),0)
Q   := @
msg  = @printf '  %-5s %s\n' '$(1)' '$(2)'
else
Q   :=
msg  =
endif
# -j for the sub-makes of test/asan/valgrind/demo unless make already runs with -j.
PAR = $(if $(findstring -j,$(MAKEFLAGS)),,-j$(JOBS))

LIB_SRC     := $(sort $(wildcard src/*/*.c))
LIB_OBJ     := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC    := $(sort $(wildcard tests/unit/test_*.c))
TEST_BIN    := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
EXAMPLE_SRC := $(sort $(wildcard examples/*.c))
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)
HAND_SRC    := $(wildcard bench/*_hand.c)
BENCH_SRC   := $(sort $(filter-out $(HAND_SRC),$(wildcard bench/*.c)))
BENCH_BIN   := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
FORMAT_SRC   = $(wildcard include/tex/*.h src/*/*.c src/*/*.h tests/*.h tests/*/*.c \
                 tests/*/*.h examples/*.c bench/*.c)

# make test, asan and valgrind build what they can (make -k) and then run it; a program
# that failed to build counts as a failed one, and so does the build (tests/build_failed.sh
# joins the run), since an older program of the same name would run in its place.
BUILD_FAILED = { echo "*** the build failed (errors above); what was built runs"; \
               failed=tests/build_failed.sh; }

# The examples that make test runs (examples/demo.c takes seconds; make demo runs it).
TEST_EXAMPLES := $(filter-out $(BUILD)/examples/demo,$(EXAMPLE_BIN))

OUT_LIB     := $(if $(filter build,$(BUILD)),lib,$(BUILD)/lib)
STATIC_LIB  := $(OUT_LIB)/libtex.a
SHARED_REAL := $(OUT_LIB)/libtex.so.$(VERSION)
SHARED_LIB  := $(OUT_LIB)/libtex.so
# Rewritten only when the flags change, so that changing OPT or SANITIZE rebuilds.
FLAGS_STAMP := $(BUILD)/flags.stamp

.PHONY: all tests examples test test-long asan valgrind demo bench install uninstall deps \
        check-deps check-readme format format-check update-golden clean FORCE

all: $(STATIC_LIB) $(SHARED_LIB)

# ------------------------------------------------------------------ building

$(FLAGS_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(LIB_CFLAGS) $(TEST_CFLAGS) $(EXAMPLE_CFLAGS) $(BENCH_CFLAGS) $(LIBS)' | cmp -s - $@ || \
	    echo '$(CC) $(LIB_CFLAGS) $(TEST_CFLAGS) $(EXAMPLE_CFLAGS) $(BENCH_CFLAGS) $(LIBS)' > $@

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC,$<)
	$(Q)$(CC) $(LIB_CFLAGS) -c $< -o $@

$(STATIC_LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# -z defs: an undefined symbol is an error when the library is linked, not when it is loaded.
$(SHARED_REAL): $(LIB_OBJ)
	@mkdir -p $(@D)
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,libtex.so.$(SOVERSION) $(if $(SANITIZE),,-Wl$(,)-z$(,)defs) \
	    $(SANITIZE) -o $@ $^ $(LIBS)

$(SHARED_LIB): $(SHARED_REAL)
	$(Q)ln -sf libtex.so.$(VERSION) $(OUT_LIB)/libtex.so.$(SOVERSION)
	$(Q)ln -sf libtex.so.$(VERSION) $@

$(BUILD)/tests/%: tests/unit/%.c tests/tt.h $(STATIC_LIB) $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call msg,TEST,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@ $(STATIC_LIB) $(LIBS)

$(BUILD)/examples/%: examples/%.c $(STATIC_LIB) $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call msg,EXE,$@)
	$(Q)$(CC) $(EXAMPLE_CFLAGS) $< -o $@ $(STATIC_LIB) $(LIBS) $(EXTRA_LIBS)

# OpenBLAS for the demo and the benchmarks: pkg-config's flags, else plain -lopenblas
# when the library is installed without a .pc file. The demo builds without it; the
# benchmarks need it (their anchor). Both use OpenMP (the demo's naive loop is parallel).
OPENBLAS_FOUND = $(or $(BLAS_FLAGS),$(if $(wildcard /usr/lib/*/libopenblas.so \
                   /usr/lib/libopenblas.so /usr/local/lib/libopenblas.so),-DTEX_HAVE_OPENBLAS=1 -lopenblas))

$(BUILD)/examples/demo: EXTRA_LIBS = -fopenmp $(OPENBLAS_FOUND)

$(BUILD)/bench/%: bench/%.c bench/common.h $(STATIC_LIB) $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call msg,BENCH,$@)
	$(Q)$(CC) $(BENCH_CFLAGS) -fopenmp $< $(BENCH_OBJ) -o $@ $(STATIC_LIB) $(LIBS) \
	    $(or $(OPENBLAS_FOUND),-lopenblas) $(BENCH_LIBS)

# The benchmarks' hand-written anchors: bench/NAME_hand.c is compiled in an object of its
# own, as such kernels are (-O3 -march=native -fopenmp), and linked into bench/NAME only,
# so that no other code gets these flags. bench/softmax's anchor adds -ffast-math (vector
# expf from libmvec); the others keep the IEEE rules of tex's kernels.
$(BUILD)/bench/%_hand.o: bench/%_hand.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC,$<)
	$(Q)$(CC) $(STD_CFLAGS) -O3 -march=native $(HAND_FLAGS) -fopenmp -c $< -o $@

$(BUILD)/bench/softmax_hand.o: HAND_FLAGS = -ffast-math

$(foreach h,$(HAND_SRC:bench/%_hand.c=%),$(eval $(BUILD)/bench/$(h): $(BUILD)/bench/$(h)_hand.o))
$(foreach h,$(HAND_SRC:bench/%_hand.c=%),$(eval $(BUILD)/bench/$(h): BENCH_OBJ = $(BUILD)/bench/$(h)_hand.o))

# bench/layernorm's hand-written anchor lives beside bench/softmax's.
$(BUILD)/bench/layernorm: $(BUILD)/bench/softmax_hand.o
$(BUILD)/bench/layernorm: BENCH_OBJ = $(BUILD)/bench/softmax_hand.o

# bench/conv2d's and bench/tune's conv anchor is oneDNN (libdnnl-dev, bench/onednn_conv.h);
# only those benchmarks link it.
$(BUILD)/bench/conv2d $(BUILD)/bench/tune: BENCH_LIBS = -ldnnl
$(BUILD)/bench/conv2d $(BUILD)/bench/tune: bench/onednn_conv.h

# bench/spmm's library anchor is librsb (librsb-dev) when it is installed; without it the
# benchmark builds and measures its other anchors.
$(BUILD)/bench/spmm: BENCH_LIBS = $(if $(wildcard /usr/include/rsb.h),-DTEX_HAVE_LIBRSB=1 -lrsb)

# The test programs (make -j tests builds them without running anything), the examples.
tests: $(TEST_BIN)

examples: $(EXAMPLE_BIN)

# ------------------------------------------------------------------ checking

test: deps check-deps check-readme
	$(Q)failed=; $(MAKE) --no-print-directory $(PAR) -k all tests examples || $(BUILD_FAILED); \
	    bash tests/run_tests.sh -j $(JOBS) $(TEST_BIN) $(TEST_EXAMPLES) tests/install_test.sh \
	    tests/bench_report_test.sh $$failed

# test_jit_random at scale: LONG_TRIALS schedules (every fourth also built with clang), the
# seeds shared among $(JOBS) processes, each logging to $(BUILD)/test-long.K.log.
LONG_TRIALS ?= 20000
test-long: deps
	$(Q)$(MAKE) --no-print-directory $(PAR) $(BUILD)/tests/test_jit_random
	$(Q)bash tests/run_long.sh $(BUILD)/tests/test_jit_random $(LONG_TRIALS) $(JOBS) $(BUILD)

asan: deps check-deps
	$(Q)failed=; $(MAKE) --no-print-directory $(PAR) -k BUILD=build-asan OPT="-O1 -g" \
	    SANITIZE="$(SAN_FLAGS)" tests examples || $(BUILD_FAILED); \
	    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    TEX_SANITIZE_FLAGS="$(SAN_FLAGS)" bash tests/run_tests.sh -j $(JOBS) \
	    $(TEST_BIN:$(BUILD)/%=build-asan/%) $(TEST_EXAMPLES:$(BUILD)/%=build-asan/%) $$failed

# Rewrites tests/golden/*.tex from the current lowering; review with git diff tests/golden.
update-golden: $(BUILD)/tests/test_golden_lower
	$(Q)TEX_UPDATE_GOLDEN=1 ./$(BUILD)/tests/test_golden_lower

# Valgrind cannot execute AVX-512, so JIT-compiled kernels are built without it here.
valgrind: deps
	@command -v valgrind >/dev/null || { echo "make valgrind: valgrind is not installed" \
	    "(Debian: sudo apt-get install -y valgrind)"; exit 1; }
	$(Q)failed=; $(MAKE) --no-print-directory $(PAR) -k tests examples || $(BUILD_FAILED); \
	    TEX_CFLAGS="$(TEX_CFLAGS) -mno-avx512f" bash tests/run_tests.sh -j $(JOBS) -t 3600 \
	    -w "valgrind -q --error-exitcode=1 \
	    --leak-check=full --errors-for-leak-kinds=definite,indirect" $(TEST_BIN) $(TEST_EXAMPLES) \
	    $$failed

deps:
	$(Q)sh tools/deps.sh

# The symbol check reads the library's objects, so they are built first.
check-deps:
	$(Q)$(MAKE) --no-print-directory $(PAR) $(LIB_OBJ)
	$(Q)sh tools/check_deps.sh $(BUILD)

# The README's C example must be examples/gemm.c, verbatim (make test builds and runs it).
check-readme:
	$(Q)awk '/^```c$$/ { inside = 1; next } /^```$$/ { inside = 0 } inside' README.md | \
	    diff -u examples/gemm.c - || \
	    { echo "check-readme: README.md's C example differs from examples/gemm.c"; exit 1; }

demo: deps
	$(Q)$(MAKE) --no-print-directory $(PAR) $(BUILD)/examples/demo
	$(Q)./$(BUILD)/examples/demo

bench: deps
ifeq ($(BENCH_SRC),)
	@echo "make bench: there are no benchmarks yet (bench/*.c); nothing to run"
else
	$(Q)$(MAKE) --no-print-directory $(PAR) $(BENCH_BIN)
	$(Q)mkdir -p bench/results; for b in $(BENCH_BIN); do echo "== $$b"; ./$$b || \
	    echo "bench=$${b##*/} case=(program) error=exit_status_$$?"; done 2>&1 | \
	    tee bench/results/latest.log
	$(Q)sh tools/bench_report.sh bench/results/latest.log bench/results
	$(Q)! grep -q '^bench=.* error=' bench/results/latest.log || \
	    { echo "make bench: some cases failed (the report's Errors)"; exit 1; }
endif

# ------------------------------------------------------------------ installing

install: all
	$(Q)install -d $(DESTDIR)$(INCLUDEDIR)/tex $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR)
	$(Q)install -m 644 include/tex/*.h $(DESTDIR)$(INCLUDEDIR)/tex/
	$(Q)install -m 644 $(STATIC_LIB) $(DESTDIR)$(LIBDIR)/
	$(Q)install -m 755 $(SHARED_REAL) $(DESTDIR)$(LIBDIR)/
	$(Q)ln -sf libtex.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libtex.so.$(SOVERSION)
	$(Q)ln -sf libtex.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libtex.so
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@REQUIRES_PRIVATE@|$(shell $(PKG_CONFIG) --exists libffi 2>/dev/null && echo libffi)|' \
	    -e '/^Requires.private: *$$/d' pkgconfig/tex.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/tex.pc
	@echo "installed tex $(VERSION) into $(DESTDIR)$(PREFIX)"

uninstall:
	$(Q)rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/tex/,$(notdir $(wildcard include/tex/*.h)))
	$(Q)rmdir $(DESTDIR)$(INCLUDEDIR)/tex 2>/dev/null || true
	$(Q)rm -f $(addprefix $(DESTDIR)$(LIBDIR)/,libtex.a libtex.so libtex.so.$(SOVERSION) \
	    libtex.so.$(VERSION)) $(DESTDIR)$(PKGCONFIGDIR)/tex.pc

# ------------------------------------------------------------------ tidying

format:
	@if [ -z "$(CLANG_FORMAT)" ]; then echo "make format: clang-format is not installed" \
	    "(Debian: sudo apt-get install -y clang-format-14); skipped"; \
	else $(CLANG_FORMAT) -i $(FORMAT_SRC); fi

format-check:
	@if [ -z "$(CLANG_FORMAT)" ]; then echo "make format-check: clang-format is not installed" \
	    "(Debian: sudo apt-get install -y clang-format-14); skipped"; \
	else $(CLANG_FORMAT) --dry-run --Werror $(FORMAT_SRC) && echo "format-check: ok"; fi

clean:
	rm -rf build build-asan $(BUILD) lib/libtex.*

-include $(LIB_OBJ:.o=.d) $(TEST_BIN:=.d) $(EXAMPLE_BIN:=.d) $(BENCH_BIN:=.d) \
          $(HAND_SRC:bench/%.c=$(BUILD)/bench/%.d)

# refurb - data refurbishing for deep-learning input pipelines.
#
#   make            build librefurb and the programs into build/
#   make check      install missing Debian packages, build, run all tests
#                   (a line per test file; make -j2 check: two files at once)
#   make asan       the same tests under AddressSanitizer + UBSan
#   make demo       the whole chain on a synthetic dataset
#   make install    PREFIX=/usr/local DESTDIR= (programs, man pages,
#                   static library, headers, refurb.pc, the Python
#                   reader in PYTHONDIR)

PREFIX   ?= /usr/local
BUILD    ?= build
CC       ?= cc
OPT      ?= -O2 -g
# LIB_SRC, LIB_PKGS, LIB_SYSLIBS: shared with tests/fuzz/fuzz.mk and
# scripts/compare-ops.py
include lib/sources.mk
PKGS      = $(LIB_PKGS)
# Read when make reads this file: `make check` and `make demo` install the
# packages first and then build in a second make, which reads it again.
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
ifeq ($(PKG_LIBS),)
PKG_MISSING = $(error pkg-config finds no $(PKGS): run 'make deps' (or 'make check', which runs it) first)
endif
CPPFLAGS += -Ilib/include -Ibin -D_GNU_SOURCE
CFLAGS   += -std=c11 $(OPT) -Wall -Wextra -Werror -pthread $(PKG_CFLAGS)
LDLIBS   += $(PKG_LIBS) $(LIB_SYSLIBS)

VERSION   = 0.1.0
# the Python reader goes where Debian's /usr/bin/python3 looks for PREFIX
PYVER    := $(shell /usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3)
PYTHONDIR ?= $(PREFIX)/lib/python$(PYVER)/dist-packages
LIB_OBJ   = $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB       = $(BUILD)/librefurb.a
CLI_OBJ   = $(BUILD)/bin/cli.o
DUMP_OBJ  = $(patsubst %.c,$(BUILD)/%.o,$(sort $(wildcard bin/dump_*.c)))
PROGS     = $(patsubst bin/%.c,$(BUILD)/bin/%,$(sort $(wildcard bin/refurb-*.c)))
UNIT_SRC  = $(sort $(wildcard tests/unit/test_*.c))
TOOLS     = $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(sort $(filter-out %_shim.c,$(wildcard tests/tools/*.c))))
SHIMS     = $(patsubst tests/tools/%.c,$(BUILD)/tools/%.so,$(sort $(wildcard tests/tools/*_shim.c)))
BENCHES   = $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(sort $(wildcard tests/bench/*.c)))
UNITS     = $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# the library's own headers beside the API: the ones that say so (refurb.h
# does not include them; scripts/make-man3 and tests/install.bats read the
# same words)
LIB_ONLY_H := $(shell grep -l '^ \* Internal to librefurb' lib/include/refurb/*.h)
INSTALL_H = $(filter-out $(LIB_ONLY_H),$(wildcard lib/include/refurb/*.h))
MAN3      = $(BUILD)/man/man3/refurb.3
MAN       = $(wildcard man/man1/*.1 man/man5/*.5 man/man7/*.7) man/man3/refurb.3

OBJ_SRC   = $(LIB_SRC) $(wildcard bin/*.c) $(UNIT_SRC) $(wildcard tests/tools/*.c tests/bench/*.c)
DEPS      = $(patsubst %.c,$(BUILD)/%.d,$(OBJ_SRC))

# keep objects of tests and tools (make would delete them as intermediate);
# not the .d files, so that a missing one rebuilds its object
.SECONDARY: $(patsubst %.c,$(BUILD)/%.o,$(OBJ_SRC))

.PHONY: all check bench asan deps demo install uninstall clean fuzz
all: $(LIB) $(PROGS) $(TOOLS) $(SHIMS) $(MAN3)

# refurb(3): the public functions, from the installed headers' comments
$(MAN3): scripts/make-man3 $(INSTALL_H) lib/README
	@echo "  MAN     $@"
	@scripts/make-man3 $@

# every object depends on the headers it includes, as the compiler lists
# them (-MMD -MP: BUILD/X.d beside BUILD/X.o); an object without its .d
# (built before) is rebuilt once
$(BUILD)/%.o: %.c $(BUILD)/%.d
	$(PKG_MISSING)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# named here, the .d files are not intermediate: a missing one rebuilds
$(DEPS): ;
-include $(wildcard $(DEPS))

# objects of lib/ files that were renamed or removed would mislead
# tests/check-layout: delete them with the archive
$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	@echo "  AR      $@"
	@rm -f $(filter-out $(LIB_OBJ),$(wildcard $(BUILD)/lib/*/*.o)) \
		$(filter-out $(LIB_OBJ:.o=.d),$(wildcard $(BUILD)/lib/*/*.d))
	@rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/bin/refurb-dump: $(BUILD)/bin/refurb-dump.o $(DUMP_OBJ) $(CLI_OBJ) $(LIB)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bin/refurb-%: $(BUILD)/bin/refurb-%.o $(CLI_OBJ) $(LIB)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(CLI_OBJ) $(LIB)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# the fuzz targets' bodies are compiled into this unit test
$(BUILD)/tests/unit/test_fuzz_regressions.o: $(wildcard tests/fuzz/*.c tests/fuzz/*.h)

# C micro-benchmarks used by the scripts in scripts/ (never by tests)
bench: all $(BENCHES)

$(BUILD)/bench/%: $(BUILD)/tests/bench/%.o $(CLI_OBJ) $(LIB)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# helpers the tests and scripts run (scripts/make-dataset ...)
$(BUILD)/tools/%: $(BUILD)/tests/tools/%.o $(LIB)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# LD_PRELOAD libraries the fault tests run the programs with (no sanitizer:
# they are loaded before the sanitizer's runtime)
$(BUILD)/tools/%.so: tests/tools/%.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) $(CPPFLAGS) $(filter-out -fsanitize=%,$(CFLAGS)) -fPIC -shared -o $@ $< -ldl

# make check: the README's test command.  One line per test file as it
# ends, then "N passed, N failed".  deps run first, alone: the build is a
# second make that reads the pkg-config flags once the packages are there.
# Test files run TEST_JOBS at a time: make -jN check gives N, else nproc.
# CHECK_BATS="tests/a.bats ..." runs those bats files instead of all
# (tests/fresh-root's second pass).
TEST_JOBS ?= $(or $(patsubst -j%,%,$(filter -j%,$(MAKEFLAGS))),$(shell nproc))
CHECK_BATS ?=
check: deps
	@$(MAKE) --no-print-directory all $(UNITS)
	@BUILD=$(BUILD) tests/run -j $(TEST_JOBS) $(UNITS) $(CHECK_BATS)

asan:
	$(MAKE) BUILD=build/asan OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
		LDFLAGS="-fsanitize=address,undefined" check

deps:
	@scripts/deps

demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo

# the packages first, then a make that reads fuzz.mk's pkg-config flags
fuzz:
	@scripts/deps --fuzz
	$(MAKE) -f tests/fuzz/fuzz.mk BUILD=build/fuzz

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/include/refurb $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man3 $(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man7 \
		$(DESTDIR)$(PYTHONDIR)/refurb_stream
	install -m 755 $(PROGS) $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib
	install -m 644 $(INSTALL_H) $(DESTDIR)$(PREFIX)/include/refurb
	install -m 644 $(wildcard man/man1/*.1) $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 $(MAN3) $(DESTDIR)$(PREFIX)/share/man/man3
	install -m 644 $(wildcard man/man5/*.5) $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 644 $(wildcard man/man7/*.7) $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 644 python/refurb_stream/*.py $(DESTDIR)$(PYTHONDIR)/refurb_stream
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
		-e 's|@PKGS@|$(PKGS)|g' -e 's|@SYSLIBS@|$(LIB_SYSLIBS)|g' lib/refurb.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/refurb.pc
	@scripts/python-where "$(DESTDIR)" "$(PYTHONDIR)"

uninstall:
	rm -f $(patsubst $(BUILD)/bin/%,$(DESTDIR)$(PREFIX)/bin/%,$(PROGS))
	rm -f $(DESTDIR)$(PREFIX)/lib/librefurb.a $(DESTDIR)$(PREFIX)/lib/pkgconfig/refurb.pc
	rm -rf $(DESTDIR)$(PREFIX)/include/refurb
	rm -f $(patsubst man/%,$(DESTDIR)$(PREFIX)/share/man/%,$(MAN))
	rm -rf $(DESTDIR)$(PYTHONDIR)/refurb_stream

clean:
	rm -rf build demo

# tests/fuzz/fuzz.mk - the libFuzzer targets (run by the top-level
# `make fuzz`, which passes BUILD=build/fuzz; scripts/fuzz runs them).
#
# librefurb's sources are compiled with clang and
# -fsanitize=fuzzer-no-link,address,undefined (coverage for the fuzzer,
# AddressSanitizer with LeakSanitizer, UBSan that aborts), each
# tests/fuzz/fuzz_NAME.c with -fsanitize=fuzzer into $(BUILD)/fuzz_NAME.
# Needs Debian's clang and libclang-rt-14-dev (scripts/deps --fuzz).

BUILD    ?= build/fuzz
FUZZ_CC  ?= clang
# LIB_SRC, LIB_PKGS, LIB_SYSLIBS: the same as the top-level Makefile's
include lib/sources.mk
PKGS      = $(LIB_PKGS)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
SAN       = address,undefined
CPPFLAGS  = -Ilib/include -D_GNU_SOURCE
CFLAGS    = -std=c11 -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror \
	    -pthread -fno-sanitize-recover=undefined $(PKG_CFLAGS)
LDLIBS    = $(PKG_LIBS) $(LIB_SYSLIBS)

LIB_OBJ   = $(LIB_SRC:%.c=$(BUILD)/%.o)
TARGETS   = $(patsubst tests/fuzz/fuzz_%.c,$(BUILD)/fuzz_%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))

# objects kept (not deleted as intermediate); not the .d files
.SECONDARY: $(LIB_OBJ) $(patsubst $(BUILD)/fuzz_%,$(BUILD)/obj/fuzz_%.o,$(TARGETS))
.PHONY: all
all: $(TARGETS)

# `make fuzz` at the top installs the packages before this file is read
# (its pkg-config flags are read with it); run alone, it needs them there.
ifeq ($(PKG_LIBS),)
$(error pkg-config finds no $(PKGS): run 'scripts/deps --fuzz' first (or the top-level 'make fuzz'))
endif

# headers as the compiler lists them (-MMD -MP), as in the Makefile
$(BUILD)/lib/%.o: lib/%.c $(BUILD)/lib/%.d
	@mkdir -p $(@D)
	@echo "  CC      $< (fuzz)"
	@$(FUZZ_CC) $(CPPFLAGS) $(CFLAGS) -fsanitize=fuzzer-no-link,$(SAN) -MMD -MP -c -o $@ $<

$(BUILD)/obj/fuzz_%.o: tests/fuzz/fuzz_%.c $(BUILD)/obj/fuzz_%.d
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(FUZZ_CC) $(CPPFLAGS) $(CFLAGS) -fsanitize=fuzzer,$(SAN) -MMD -MP -c -o $@ $<

DEPS      = $(LIB_OBJ:.o=.d) $(patsubst $(BUILD)/fuzz_%,$(BUILD)/obj/fuzz_%.d,$(TARGETS))
# named here, the .d files are not intermediate: a missing one rebuilds
$(DEPS): ;
-include $(wildcard $(DEPS))

$(BUILD)/fuzz_%: $(BUILD)/obj/fuzz_%.o $(LIB_OBJ)
	@echo "  LD      $@"
	@$(FUZZ_CC) $(CFLAGS) -fsanitize=fuzzer,$(SAN) -o $@ $^ $(LDLIBS)

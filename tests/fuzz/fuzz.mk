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
PKGS      = libturbojpeg libjpeg libzstd libpng
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
SAN       = address,undefined
CPPFLAGS  = -Ilib/include -D_GNU_SOURCE
CFLAGS    = -std=c11 -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror \
	    -pthread -fno-sanitize-recover=undefined $(PKG_CFLAGS)
LDLIBS    = $(PKG_LIBS) -laio -lm -pthread

LIB_SRC   = $(sort $(wildcard lib/*/*.c))
LIB_OBJ   = $(LIB_SRC:%.c=$(BUILD)/%.o)
TARGETS   = $(patsubst tests/fuzz/fuzz_%.c,$(BUILD)/fuzz_%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
HEADERS   = $(wildcard lib/include/refurb/*.h lib/*/*_internal.h tests/fuzz/*.h)

.SECONDARY:
.PHONY: all
all: $(TARGETS)

# `make fuzz` at the top installs the packages before this file is read
# (its pkg-config flags are read with it); run alone, it needs them there.
ifeq ($(PKG_LIBS),)
$(error pkg-config finds no $(PKGS): run 'scripts/deps --fuzz' first (or the top-level 'make fuzz'))
endif

$(BUILD)/lib/%.o: lib/%.c $(HEADERS)
	@mkdir -p $(@D)
	@echo "  CC      $< (fuzz)"
	@$(FUZZ_CC) $(CPPFLAGS) $(CFLAGS) -fsanitize=fuzzer-no-link,$(SAN) -c -o $@ $<

$(BUILD)/obj/fuzz_%.o: tests/fuzz/fuzz_%.c $(HEADERS)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(FUZZ_CC) $(CPPFLAGS) $(CFLAGS) -fsanitize=fuzzer,$(SAN) -c -o $@ $<

$(BUILD)/fuzz_%: $(BUILD)/obj/fuzz_%.o $(LIB_OBJ)
	@echo "  LD      $@"
	@$(FUZZ_CC) $(CFLAGS) -fsanitize=fuzzer,$(SAN) -o $@ $^ $(LDLIBS)

# lib/sources.mk - librefurb's sources and what they link with, in one
# place: the Makefile and tests/fuzz/fuzz.mk include it, and
# scripts/compare-ops.py asks it (make -s -f lib/sources.mk lib-src,
# lib-pkgs, lib-syslibs).  Paths are relative to the top of the tree.

LIB_SRC     = $(sort $(wildcard lib/*/*.c))
# pkg-config names of the libraries under lib/ (JPEG decode and encode,
# PNG decode, zstd records), and the system ones (AIO reads, threads)
LIB_PKGS    = libturbojpeg libjpeg libzstd libpng
LIB_SYSLIBS = -laio -lm -pthread

# asked by scripts: only when this file is make's first one (-f)
ifeq ($(firstword $(MAKEFILE_LIST)),lib/sources.mk)
.PHONY: lib-src lib-pkgs lib-syslibs
lib-src:
	@echo $(LIB_SRC)
lib-pkgs:
	@echo $(LIB_PKGS)
lib-syslibs:
	@echo $(LIB_SYSLIBS)
endif

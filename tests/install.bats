#!/usr/bin/env bats
# make install / make uninstall: programs, man pages, the static library,
# headers and refurb.pc under PREFIX and DESTDIR; a program builds against
# the installed library through pkg-config.

load helpers
bats_require_minimum_version 1.5.0

# build_client ROOT c|cpp [SRC]: compile SRC (default client.LANG in the
# test's directory) into BATS_TEST_TMPDIR/client with what
# `pkg-config --cflags --libs refurb` says for the library installed under
# ROOT (DESTDIR) with PREFIX=/opt/rfb
build_client() {
	local pc="$1/opt/rfb/lib/pkgconfig" flags san= syms
	flags=$(PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$1" pkg-config --cflags --libs refurb)
	# under make asan the library is instrumented: so must the client be
	syms=$(nm "$1/opt/rfb/lib/librefurb.a" 2>/dev/null)
	if [[ "$syms" == *__asan_* ]]; then san="-fsanitize=address,undefined"; fi
	if [ "$2" = c ]; then
		cc -std=c11 -Wall -Werror $san -o "$BATS_TEST_TMPDIR/client" "${3:-$BATS_TEST_TMPDIR/client.c}" $flags
	else
		c++ -std=c++17 -Wall -Werror $san -o "$BATS_TEST_TMPDIR/client" "${3:-$BATS_TEST_TMPDIR/client.cpp}" $flags
	fi
}

# install_root: make install DESTDIR=BATS_TEST_TMPDIR/root PREFIX=/opt/rfb
install_root() {
	make -s -C "$TOP" BUILD="${REFURB_BUILD#$TOP/}" install DESTDIR="$BATS_TEST_TMPDIR/root" PREFIX=/opt/rfb
}

@test "make install, build against it, make uninstall" {
	d="$BATS_TEST_TMPDIR/root"
	make -s -C "$TOP" BUILD="${REFURB_BUILD#$TOP/}" install DESTDIR="$d" PREFIX=/opt/rfb > /dev/null
	for f in bin/refurb-partial bin/refurb-final lib/librefurb.a \
		 include/refurb/refurb.h lib/pkgconfig/refurb.pc \
		 share/man/man1/refurb-final.1 share/man/man5/refurb-cache.5 \
		 share/man/man3/refurb.3 \
		 share/man/man7/refurb.7; do
		[ -e "$d/opt/rfb/$f" ] || { echo "missing $f"; false; }
	done
	# the library's own headers (their comment says so) stay inside it
	own=$(grep -l '^ \* Internal to librefurb' "$TOP"/lib/include/refurb/*.h)
	[ "$(echo "$own" | wc -l)" -ge 4 ]
	for f in $own; do
		[ ! -e "$d/opt/rfb/include/refurb/${f##*/}" ] || { echo "installed ${f##*/}"; false; }
	done
	"$d/opt/rfb/bin/refurb-index" --version
	# a client program, compiled with the installed headers and library
	cat > "$BATS_TEST_TMPDIR/client.c" <<'C'
#include <stdio.h>
#include "refurb/refurb.h"
int main(void)
{
	printf("%08x\n", rfb_crc32c(0, "123456789", 9));
	return 0;
}
C
	build_client "$d" c
	[ "$("$BATS_TEST_TMPDIR/client")" = "e3069283" ]
	py="$d/opt/rfb/lib/python$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages"
	[ -f "$py/refurb_stream/__init__.py" ]
	make -s -C "$TOP" BUILD="${REFURB_BUILD#$TOP/}" uninstall DESTDIR="$d" PREFIX=/opt/rfb > /dev/null
	left=$(find "$d" -type f)
	[ -z "$left" ]
}

# A C++ program uses the library through refurb.h: extern "C" in every
# installed header (without it: undefined reference to rfb_strerror(int)).
@test "a C++ program builds and runs against the installed library (pkg-config, extern C)" {
	command -v c++ > /dev/null || skip "no C++ compiler (g++)"
	install_root > /dev/null
	cat > "$BATS_TEST_TMPDIR/client.cpp" <<'CPP'
#include <cstdio>
#include <string>
#include "refurb/refurb.h"
int main()
{
	rfb_err err = rfb_err();
	rfb_pipeline *p = nullptr;
	if (rfb_pipeline_parse("resize=256,crop=224,flip", &p, &err) != 0)
		return 1;
	std::string canon = rfb_pipeline_canonical(p);
	rfb_pipeline_free(p);
	int rc = rfb_pipeline_parse("resize=-1", &p, &err);
	std::printf("%08x %s %s\n", rfb_crc32c(0, "123456789", 9),
		    rc < 0 ? rfb_strerror(rc) : "accepted", RFB_VERSION);
	return canon.empty();
}
CPP
	build_client "$BATS_TEST_TMPDIR/root" cpp
	run -0 "$BATS_TEST_TMPDIR/client"
	[ "$output" = "e3069283 bad pipeline spec 0.1.0" ]
}

@test "refurb.h includes exactly the installed headers; each compiles alone in C and C++" {
	set -o pipefail
	install_root > /dev/null
	inc="$BATS_TEST_TMPDIR/root/opt/rfb/include/refurb"
	installed=$(cd "$inc" && ls *.h | grep -vx refurb.h)
	included=$(sed -n 's|^#include "refurb/\(.*\)"$|\1|p' "$inc/refurb.h" | sort)
	[ "$installed" = "$included" ] || { diff <(echo "$installed") <(echo "$included"); false; }
	for h in $installed; do
		printf '#include "refurb/%s"\nint main(void) { return 0; }\n' "$h" > "$BATS_TEST_TMPDIR/one.c"
		cp "$BATS_TEST_TMPDIR/one.c" "$BATS_TEST_TMPDIR/one.cpp"
		cc -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$inc/.." "$BATS_TEST_TMPDIR/one.c" ||
			{ echo "C: $h"; false; }
		if command -v c++ > /dev/null; then
			c++ -std=c++11 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$inc/.." "$BATS_TEST_TMPDIR/one.cpp" ||
				{ echo "C++: $h"; false; }
		fi
	done
	# and each declares its functions inside extern "C"
	for h in $installed; do
		if grep -q '^[a-z].*[ *]rfb_[a-z_0-9]*(' "$inc/$h"; then
			grep -q '^extern "C" {$' "$inc/$h" || { echo "no extern \"C\" in $h"; false; }
		fi
	done
}

@test "make install says where the Python reader went and which python3 imports it" {
	run -0 install_root
	py="/opt/rfb/lib/python$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages"
	[[ "$output" == *"make install: the Python reader refurb_stream is in $BATS_TEST_TMPDIR/root$py/refurb_stream"* ]]
	# /opt/rfb is not on Debian's python3 path: it says so, and how
	[[ "$output" == *"make install: /usr/bin/python3 does not search $py: PYTHONPATH=$py, or pip install ./python"* ]]
	# PREFIX=/usr/local is
	run -0 make -s -C "$TOP" BUILD="${REFURB_BUILD#$TOP/}" install DESTDIR="$BATS_TEST_TMPDIR/r2" PREFIX=/usr/local
	[[ "$output" == *"make install: /usr/bin/python3 imports it once $BATS_TEST_TMPDIR/r2 is copied to /"* ]]
	# another python3 first on PATH (a venv's) is told to pip install
	mkdir -p "$BATS_TEST_TMPDIR/venv/bin"
	printf '#!/bin/sh\nexit 1\n' > "$BATS_TEST_TMPDIR/venv/bin/python3"
	chmod +x "$BATS_TEST_TMPDIR/venv/bin/python3"
	export PATH="$BATS_TEST_TMPDIR/venv/bin:$PATH"
	run -0 install_root
	[[ "$output" == *"make install: $BATS_TEST_TMPDIR/venv/bin/python3 (first on PATH) does not: pip install ./python with it"* ]]
}

# refurb(3) lists every function of the installed headers: make writes
# it from them (scripts/make-man3), make install installs it
@test "refurb(3), made from the installed headers, lists every function and renders" {
	install_root > /dev/null
	inc="$BATS_TEST_TMPDIR/root/opt/rfb/include/refurb"
	page="$BATS_TEST_TMPDIR/root/opt/rfb/share/man/man3/refurb.3"
	missing=0
	for f in $(grep -ohE '^[a-z][^;(=]*[ *]rfb_[a-z0-9_]+\(' "$inc"/*.h | grep -oE 'rfb_[a-z0-9_]+\(' | sort -u); do
		grep -q "${f%(}(" "$page" || { echo "not in refurb(3): ${f%(}"; missing=$((missing + 1)); }
	done
	[ "$missing" -eq 0 ]
	# a function's comment is its line in the page
	grep -qxF 'Human\-readable text of an RFB_E* code.' "$page"
	command -v groff > /dev/null || skip "no groff (groff-base) to render it"
	run -0 groff -man -ww -z "$page"
	[ -z "$output" ]
}

# Debian's python3 finds the reader installed under PREFIX=/usr/local with
# no PYTHONPATH: the directory make install uses is on its default path.
@test "make install PREFIX=/usr/local: /usr/bin/python3 imports refurb_stream" {
	need_numpy
	d="$BATS_TEST_TMPDIR/root"
	make -s -C "$TOP" BUILD="${REFURB_BUILD#$TOP/}" install DESTDIR="$d" PREFIX=/usr/local > /dev/null
	dir=$(cd "$d" && ls -d usr/local/lib/python3*/dist-packages)
	[ -f "$d/$dir/refurb_stream/__init__.py" ]
	run env -u PYTHONPATH /usr/bin/python3 -c "import sys; print('/$dir' in sys.path)"
	[ "$status" -eq 0 ]
	[ "$output" = True ]
	cd "$BATS_TEST_TMPDIR"
	run env -u PYTHONPATH /usr/bin/python3 -c "import sys; sys.path[sys.path.index('/$dir')] = '$d/$dir'; import refurb_stream; print(refurb_stream.__file__)"
	[ "$status" -eq 0 ]
	[ "$output" = "$d/$dir/refurb_stream/__init__.py" ]
}

# pip install ./python in a virtualenv (offline: the venv's own setuptools,
# Debian's numpy through --system-site-packages); python -m works there.
@test "pip install ./python into a venv" {
	need_numpy
	/usr/bin/python3 -m venv --system-site-packages "$BATS_TEST_TMPDIR/venv"
	cp -r "$TOP/python" "$BATS_TEST_TMPDIR/src"
	"$BATS_TEST_TMPDIR/venv/bin/pip" install -q --no-index --no-build-isolation "$BATS_TEST_TMPDIR/src"
	cd "$BATS_TEST_TMPDIR"
	run env -u PYTHONPATH "$BATS_TEST_TMPDIR/venv/bin/python" -c 'import refurb_stream; print(refurb_stream.__file__)'
	[ "$status" -eq 0 ]
	[[ "$output" == "$BATS_TEST_TMPDIR/venv/lib/"*"/site-packages/refurb_stream/__init__.py" ]]
	run env -u PYTHONPATH "$BATS_TEST_TMPDIR/venv/bin/python" -m refurb_stream
	[ "$status" -eq 2 ]
	[[ "$output" == "usage: python3 -m refurb_stream check STREAM"* ]]
}

@test "the man pages hold no control characters and render without warnings" {
	# a "\f" typed through a string escape becomes a form feed
	run grep -lP '[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]' "$TOP"/man/man[157]/*
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	command -v groff > /dev/null || skip "no groff (groff-base) to render them"
	# from man/, as man(1) does, so that an alias page's ".so man5/..." opens
	cd "$TOP/man"
	for f in man[157]/*; do
		run groff -man -ww -z "$f"
		[ "$status" -eq 0 ]
		[ -z "$output" ] || { echo "$f: $output"; false; }
	done
}

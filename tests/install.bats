#!/usr/bin/env bats
# make install / make uninstall: programs, man pages, the static library,
# headers and refurb.pc under PREFIX and DESTDIR; a program builds against
# the installed library through pkg-config.

load helpers

@test "make install, build against it, make uninstall" {
	d="$BATS_TEST_TMPDIR/root"
	make -s -C "$TOP" BUILD="${REFURB_BUILD#$TOP/}" install DESTDIR="$d" PREFIX=/opt/rfb > /dev/null
	for f in bin/refurb-partial bin/refurb-final lib/librefurb.a \
		 include/refurb/refurb.h lib/pkgconfig/refurb.pc \
		 share/man/man1/refurb-final.1 share/man/man5/refurb-cache.5 \
		 share/man/man7/refurb.7; do
		[ -e "$d/opt/rfb/$f" ] || { echo "missing $f"; false; }
	done
	# the library's own headers stay inside it
	for f in aio.h annotate.h pool.h; do
		[ ! -e "$d/opt/rfb/include/refurb/$f" ] || { echo "installed $f"; false; }
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
	pc="$d/opt/rfb/lib/pkgconfig"
	flags=$(PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$d" pkg-config --cflags --libs --static refurb)
	# under make asan the library is instrumented: so must the client be
	san=
	syms=$(nm "$d/opt/rfb/lib/librefurb.a" 2>/dev/null)
	if [[ "$syms" == *__asan_* ]]; then san="-fsanitize=address,undefined"; fi
	cc -std=c11 $san -o "$BATS_TEST_TMPDIR/client" "$BATS_TEST_TMPDIR/client.c" $flags
	[ "$("$BATS_TEST_TMPDIR/client")" = "e3069283" ]
	py="$d/opt/rfb/lib/python$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages"
	[ -f "$py/refurb_stream/__init__.py" ]
	make -s -C "$TOP" BUILD="${REFURB_BUILD#$TOP/}" uninstall DESTDIR="$d" PREFIX=/opt/rfb > /dev/null
	left=$(find "$d" -type f)
	[ -z "$left" ]
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
	for f in "$TOP"/man/man[157]/*; do
		run groff -man -ww -z "$f"
		[ "$status" -eq 0 ]
		[ -z "$output" ] || { echo "$f: $output"; false; }
	done
}

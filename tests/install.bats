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
	nm "$d/opt/rfb/lib/librefurb.a" 2>/dev/null | grep -q __asan_ &&
		san="-fsanitize=address,undefined"
	cc -std=c11 $san -o "$BATS_TEST_TMPDIR/client" "$BATS_TEST_TMPDIR/client.c" $flags
	[ "$("$BATS_TEST_TMPDIR/client")" = "e3069283" ]
	make -s -C "$TOP" BUILD="${REFURB_BUILD#$TOP/}" uninstall DESTDIR="$d" PREFIX=/opt/rfb > /dev/null
	[ -z "$(find "$d" -type f)" ]
}

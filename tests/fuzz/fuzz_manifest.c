/*
 * fuzz_manifest.c - the cache manifest parser (rfb_cache_parse_manifest,
 * what rfb_cache_read_manifest runs on the file) on any bytes, both
 * refurb-cache(5) checksums repaired first.  A manifest that parses has a
 * NUL-terminated pipeline inside its buffer and compares equal to itself.
 */
#include "fuzz.h"
#include "refurb/cache.h"

static void manifest_fix(unsigned char *d, size_t len)
{
	size_t plen;

	if (len < 64)
		return;
	plen = rfb_get_le32(d + 40);
	if (plen <= len - 64)
		fuzz_fix_crc(d, len, 64 + plen, 64, plen);
	fuzz_fix_crc(d, len, 60, 0, 60);
}

FUZZ_TARGET(manifest)
{
	unsigned char *d = fuzz_copy(data, size);
	struct rfb_cache_manifest m, copy;
	rfb_err err = { 0 };
	char codec[32];
	int ok;

	manifest_fix(d, size);
	ok = rfb_cache_parse_manifest(d, size, "fuzz", &m, &err) == 0;
	if (ok) {
		FUZZ_ASSERT(memchr(m.pipeline, 0, sizeof m.pipeline) != NULL);
		FUZZ_ASSERT(strlen(m.pipeline) + 68 <= size);
		copy = m;
		FUZZ_ASSERT(rfb_cache_manifest_diff(&m, &copy) == NULL);
		copy.seed++;
		FUZZ_ASSERT(rfb_cache_manifest_diff(&m, &copy) != NULL);
		rfb_codec_text(&m.codec, codec, sizeof codec);
	} else {
		FUZZ_REJECTED(&err, err.code);
	}
	free(d);
	return ok;
}

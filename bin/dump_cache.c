/*
 * dump_cache.c - refurb-dump on a cache directory: the record listing,
 * the --stats summary, --verify, and --extract of one sample as an image.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dump.h"
#include "refurb/cache.h"
#include "refurb/encode.h"
#include "refurb/io.h"
#include "refurb/record.h"

/* Everything a scan of the segments found. */
struct survey {
	FILE *out;               /* listing goes here, or NULL */
	uint64_t records, bytes, raw, bad;
	uint64_t segments;
	uint64_t per_epoch[64];  /* records by write epoch (last: >= 63) */
	uint64_t seg_bytes;
	uint32_t last_segment;
	int verify;              /* print problems */
	uint64_t problems;
	uint32_t reuse;          /* r, from the records' death epochs */
};

static const char *codec_name(int codec)
{
	return codec == RFB_CODEC_RAW ? "raw" : codec == RFB_CODEC_ZSTD ? "zstd"
	       : "jpeg";
}

static int visit(void *ctx, uint32_t segment, uint32_t death,
		 const struct rfb_cache_addr *a, const struct rfb_record_meta *m,
		 const rfb_err *why)
{
	struct survey *s = ctx;

	if (s->records + s->bad == 0 || segment != s->last_segment) {
		s->segments++;
		s->seg_bytes += RFB_CACHE_SEGMENT_HEADER;
		s->last_segment = segment;
	}
	if (!m) {
		s->bad++;
		if (s->verify) {
			s->problems++;
			fprintf(s->out, "segment %08x offset %llu: %s\n", segment,
				(unsigned long long)a->offset, why->msg[0] ? why->msg
				: why->code ? rfb_strerror(why->code)
				: "bad record (no reason given)");
		}
		return 0;
	}
	s->records++;
	s->bytes += a->length;
	s->seg_bytes += a->length;
	s->raw += m->raw_len;
	s->per_epoch[m->write_epoch < 63 ? m->write_epoch : 63]++;
	/* a record of epoch e > 0 dies in e + r; one of epoch 0 by r */
	if (death != UINT32_MAX && death > m->write_epoch &&
	    death - m->write_epoch > s->reuse)
		s->reuse = death - m->write_epoch;
	if (s->out && !s->verify)
		fprintf(s->out, "%08x\t%llu\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%s\t%u\n",
			segment, (unsigned long long)a->offset, a->length,
			m->sample, m->write_epoch, death, m->width, m->height,
			m->channels, codec_name(m->codec), m->stored_len);
	return 0;
}

static void print_manifest(const char *dir, const struct rfb_cache_manifest *m,
			   FILE *out)
{
	char codec[32];

	fprintf(out, "cache        %s\nindex        %016llx\nschedule     %016llx\n"
		"pipeline     %s\nseed         %llu\ncodec        %s\n", dir,
		(unsigned long long)m->index_identity,
		(unsigned long long)m->schedule_identity, m->pipeline,
		(unsigned long long)m->seed, rfb_codec_text(&m->codec, codec,
							    sizeof codec));
}

static void print_stats(const struct survey *s,
			const struct rfb_cache_checkpoint_info *ck, int have_ck,
			FILE *out)
{
	fprintf(out, "segments     %llu, %.1f MiB on disk\n",
		(unsigned long long)s->segments, s->seg_bytes / 1048576.0);
	fprintf(out, "records      %llu in segments (%.1f MiB), %llu bad\n",
		(unsigned long long)s->records, s->bytes / 1048576.0,
		(unsigned long long)s->bad);
	if (have_ck)
		fprintf(out, "live         %llu records (checkpoint of epoch %u, "
			"batch %llu); the rest are dead or superseded\n",
			(unsigned long long)ck->entries, ck->epoch,
			(unsigned long long)ck->global_step);
	fprintf(out, "compression  %.1f MiB of pixels in %.1f MiB: ratio %.2f\n",
		s->raw / 1048576.0, s->bytes / 1048576.0,
		s->bytes ? (double)s->raw / s->bytes : 0.0);
	if (have_ck)
		fprintf(out, "history      appended %.1f MiB of records, wrote %.1f "
			"MiB: write amplification %.3f\n",
			ck->appended_bytes / 1048576.0, ck->written_bytes / 1048576.0,
			ck->appended_bytes ? (double)ck->written_bytes /
					     ck->appended_bytes : 1.0);
	fprintf(out, "# write_epoch\trecords\n");
	for (int e = 0; e < 64; e++)
		if (s->per_epoch[e])
			fprintf(out, "%d%s\t%llu\n", e, e == 63 ? "+" : "",
				(unsigned long long)s->per_epoch[e]);
}

/* ---- the disk bound (refurb-cache(5), DISK SPACE) ---- */

static void add_live(void *ctx, uint32_t sample, const struct rfb_cache_entry *e)
{
	(void)sample;
	*(uint64_t *)ctx += e->addr.length;
}

/* Bytes the directory's files take on disk (blocks, like du). */
static uint64_t disk_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *ent;
	struct stat st;
	uint64_t total = 0;

	if (!d)
		return 0;
	while ((ent = readdir(d)))
		if (fstatat(dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			total += (uint64_t)st.st_blocks * 512;
	closedir(d);
	return total;
}

static void print_disk(const char *dir, const struct rfb_cache_manifest *m,
		       const struct survey *s, FILE *out)
{
	uint64_t live = 0, disk = disk_bytes(dir), slack, bound;
	rfb_err err = { 0 };
	struct rfb_cache_position p;

	if (rfb_cache_read_checkpoint(dir, add_live, &live, NULL, &err) == 0 &&
	    s->reuse > 0) {
		slack = RFB_CACHE_BOUND_SLACK(m->samples);
		bound = live + live / s->reuse + slack;
		fprintf(out, "disk         %.1f MiB on disk, %.1f MiB live (%.2fx); "
			"bound (1 + 1/r) x live + %.1f MiB = %.1f MiB (r = %u): %s\n"
			"disk bytes   %llu on disk, %llu live, bound %llu\n",
			disk / 1048576.0, live / 1048576.0,
			live ? (double)disk / live : 0.0, slack / 1048576.0,
			bound / 1048576.0, s->reuse,
			disk <= bound ? "within" : "over (a reader that does not tell "
			"its position, or a run that stopped early)",
			(unsigned long long)disk, (unsigned long long)live,
			(unsigned long long)bound);
	} else {
		fprintf(out, "disk         %.1f MiB on disk\n", disk / 1048576.0);
	}
	if (rfb_cache_position_read(dir, &p, NULL) && p.has_written) {
		uint32_t e = p.written_epoch, st = p.written_step + 1;
		if (p.epoch_batches && st >= p.epoch_batches) {
			e++;
			st = 0;
		}
		if (p.ended)
			fprintf(out, "read         by refurb-final (process %u) to the "
				"end of its plan (epoch %u step %u)\n", p.pid,
				p.written_epoch, p.written_step);
		else
			fprintf(out, "read         by refurb-final (process %u) up to "
				"epoch %u step %u: a trainer resumes at most at "
				"refurb-plan --start %u:%u\n", p.pid,
				p.written_epoch, p.written_step, e, st);
	}
}

/* --verify: every checkpoint entry must point at a good record of its
 * sample. */
struct entry_check {
	const char *dir;
	rfb_cache_view *view;
	FILE *out;
	uint64_t problems;
	uint64_t died;           /* entries of segments deleted as they died */
	struct rfb_cache_checkpoint_info info;
	rfb_imgbuf buf;
};

static void check_entry(void *ctx, uint32_t sample, const struct rfb_cache_entry *e)
{
	struct entry_check *k = ctx;
	struct rfb_record_meta m;
	rfb_err err = { 0 };
	int fd = rfb_cache_view_fd(k->view, e->addr.segment, &err);

	/* a segment whose records die in the epoch after the checkpoint was
	 * killed when that epoch began and deleted once the reader had passed
	 * it: the checkpoint still names it until the next one, and recovery
	 * drops its entries (refurb-cache(5), DURABILITY) */
	if (fd == RFB_ENOTFOUND && e->death_epoch <= k->info.epoch + 1) {
		k->died++;
		return;
	}
	if (fd >= 0 && rfb_imgbuf_reserve(&k->buf, e->addr.length, &err) == 0 &&
	    rfb_pread_full(fd, k->buf.data, e->addr.length, (off_t)e->addr.offset) ==
		    (ssize_t)e->addr.length &&
	    rfb_record_parse_header(k->buf.data, e->addr.length, &m, &err) == 0 &&
	    rfb_record_verify(k->buf.data, e->addr.length, &m, &err) == 0 &&
	    m.sample == sample && rfb_record_size(&m) == e->addr.length)
		return;
	k->problems++;
	fprintf(k->out, "sample %u: checkpoint entry segment %08x offset %llu: %s\n",
		sample, e->addr.segment, (unsigned long long)e->addr.offset,
		err.msg[0] ? err.msg : "record of another sample or length");
}

static int verify(struct cli *c, const char *dir, struct survey *s, FILE *out)
{
	struct entry_check k = { .dir = dir, .out = out };
	rfb_err err = { 0 };
	int rc;

	k.view = rfb_cache_view_open(dir, 0, &err);
	if (!k.view)
		cli_die_err(c, &err);
	rc = rfb_cache_read_checkpoint(dir, check_entry, &k, &k.info, &err);
	rfb_cache_view_close(k.view);
	rfb_imgbuf_free(&k.buf);
	if (rc && rc != RFB_ENOTFOUND) {
		fprintf(out, "%s/records: %s\n", dir,
			err.msg[0] ? err.msg : rfb_strerror(rc));
		k.problems++;
	}
	s->problems += k.problems;
	if (k.died)
		fprintf(out, "%s: %llu checkpoint entries are in segments deleted "
			"as their records died after the checkpoint (the next run "
			"drops them)\n", dir, (unsigned long long)k.died);
	fprintf(out, "%s: %llu records checked, %llu problems\n", dir,
		(unsigned long long)s->records, (unsigned long long)s->problems);
	return s->problems ? 1 : 0;
}

int dump_cache(struct cli *c, const char *dir, const struct dump_opts *o,
	       FILE *out)
{
	struct rfb_cache_manifest m;
	struct rfb_cache_checkpoint_info ck = { 0 };
	struct survey s = { 0 };
	rfb_err err = { 0 };
	int have_ck;

	if (rfb_cache_read_manifest(dir, &m, &err))
		cli_die_err(c, &err);
	if (o->extract >= 0)
		return dump_cache_extract(c, dir, (uint32_t)o->extract, o, out);
	s.verify = o->verify;
	s.out = o->stats ? NULL : out;
	if (!o->stats && !o->verify)
		fprintf(out, "# segment\toffset\tlength\tsample\twrite_epoch\t"
			"death_epoch\twidth\theight\tchannels\tcodec\tstored\n");
	if (rfb_cache_scan(dir, visit, &s, &err))
		cli_die_err(c, &err);
	have_ck = rfb_cache_read_checkpoint(dir, NULL, NULL, &ck, &err) == 0;
	if (o->verify)
		return verify(c, dir, &s, out);
	if (o->stats) {
		print_manifest(dir, &m, out);
		print_stats(&s, &ck, have_ck, out);
		print_disk(dir, &m, &s, out);
	}
	return 0;
}

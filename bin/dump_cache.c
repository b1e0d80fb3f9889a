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
	uint64_t torn;           /* torn tails (what the next writer cuts) */
};

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
		/* a torn tail is what a stopped writer leaves: no problem */
		int torn = why->code == RFB_ETRUNC;
		s->bad += !torn;
		s->torn += torn;
		if (s->verify) {
			s->problems += !torn;
			fprintf(s->out, "segment %08x offset %llu: %s\n", segment,
				(unsigned long long)a->offset, why->msg[0] ? why->msg
				: rfb_strerror(why->code));
		}
		return 0;
	}
	s->records++;
	s->bytes += a->length;
	s->seg_bytes += a->length;
	s->raw += m->raw_len;
	if (s->out && !s->verify)
		fprintf(s->out, "%08x\t%llu\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%s\t%u\n",
			segment, (unsigned long long)a->offset, a->length,
			m->sample, m->write_epoch, death, m->width, m->height,
			m->channels, rfb_codec_kind_name((enum rfb_codec_kind)m->codec), m->stored_len);
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

/* ---- --stats: from the cache's own tables, no record scanned ---- */

#define COMPRESSION_SAMPLE 32 /* live records whose headers are read */

/* What --stats reads: the segment files' headers and sizes, the
 * checkpoint, and the headers of a few live records. */
struct tables {
	uint64_t segments, seg_bytes, bad_headers;
	uint64_t appended;       /* segment bytes after the checkpoint's */
	int have_ck;
	struct rfb_cache_checkpoint_info ck;
	uint64_t live, live_bytes, seen;
	uint64_t per_epoch[64];  /* live records by write epoch (63: >= 63) */
	uint32_t reuse;          /* r, from the entries' death epochs */
	struct rfb_cache_entry sample[COMPRESSION_SAMPLE];
	size_t nsample;
	uint64_t raw, stored;    /* of the sampled records */
};

static int add_segment(void *ctx, uint32_t segment, uint32_t death,
		       uint64_t bytes, uint64_t checkpointed)
{
	struct tables *t = ctx;
	uint64_t known = checkpointed > RFB_CACHE_SEGMENT_HEADER
			 ? checkpointed : RFB_CACHE_SEGMENT_HEADER;

	(void)segment;
	t->segments++;
	t->seg_bytes += bytes;
	t->bad_headers += death == UINT32_MAX;
	t->appended += bytes > known ? bytes - known : 0;
	return 0;
}

static void add_entry(void *ctx, uint32_t sample, const struct rfb_cache_entry *e)
{
	struct tables *t = ctx;
	uint64_t every = t->ck.entries / COMPRESSION_SAMPLE + 1;

	(void)sample;
	t->live++;
	t->live_bytes += e->addr.length;
	t->per_epoch[e->write_epoch < 63 ? e->write_epoch : 63]++;
	/* a record of epoch e > 0 dies in e + r; one of epoch 0 by r */
	if (e->death_epoch != UINT32_MAX && e->death_epoch > e->write_epoch &&
	    e->death_epoch - e->write_epoch > t->reuse)
		t->reuse = e->death_epoch - e->write_epoch;
	if (t->seen++ % every == 0 && t->nsample < COMPRESSION_SAMPLE)
		t->sample[t->nsample++] = *e;
}

/* The raw and stored sizes of the sampled records (their headers). */
static void read_sampled(const char *dir, struct tables *t)
{
	rfb_err err = { 0 };
	rfb_cache_view *v = rfb_cache_view_open(dir, 0, &err);
	unsigned char h[RFB_RECORD_HEADER_SIZE];
	struct rfb_record_meta m;
	size_t j = 0;

	for (size_t i = 0; v && i < t->nsample; i++) {
		const struct rfb_cache_entry *e = &t->sample[i];
		int fd = rfb_cache_view_fd(v, e->addr.segment, &err);
		if (fd < 0 || rfb_pread_full(fd, h, sizeof h, (off_t)e->addr.offset) !=
				      (ssize_t)sizeof h ||
		    rfb_record_parse_header(h, sizeof h, &m, &err))
			continue;
		t->raw += m.raw_len;
		t->stored += rfb_record_size(&m);
		j++;
	}
	t->nsample = j;
	rfb_cache_view_close(v);
}

static void print_tables(const struct tables *t, FILE *out)
{
	fprintf(out, "segments     %llu, %.1f MiB on disk", (unsigned long long)
		t->segments, t->seg_bytes / 1048576.0);
	if (t->bad_headers)
		fprintf(out, ", %llu with a bad or cut header (refurb-dump "
			"--verify tells)", (unsigned long long)t->bad_headers);
	fprintf(out, "\n");
	if (!t->have_ck) {
		fprintf(out, "live         unknown: no checkpoint yet (a writer "
			"stopped before its first one); refurb-dump --verify "
			"scans every record\n");
		return;
	}
	uint64_t other = t->seg_bytes - t->appended;
	other = other > t->live_bytes ? other - t->live_bytes : 0;
	fprintf(out, "live         %llu records, %.1f MiB (checkpoint of epoch "
		"%u, batch %llu); %.1f MiB more in the segments are dead or "
		"superseded records\n",
		(unsigned long long)t->live, t->live_bytes / 1048576.0,
		t->ck.epoch, (unsigned long long)t->ck.global_step,
		other / 1048576.0);
	if (t->appended)
		fprintf(out, "appended     %.1f MiB after the checkpoint, by a writer "
			"stopped before its next one: its next run recovers "
			"them (live for the bound below)\n", t->appended / 1048576.0);
	if (t->nsample)
		fprintf(out, "compression  ratio %.2f (pixels to record bytes, "
			"estimated from the headers of %zu live records)\n",
			t->stored ? (double)t->raw / t->stored : 0.0, t->nsample);
	fprintf(out, "history      appended %.1f MiB of records, wrote %.1f "
		"MiB: write amplification %.3f\n",
		t->ck.appended_bytes / 1048576.0, t->ck.written_bytes / 1048576.0,
		t->ck.appended_bytes ? (double)t->ck.written_bytes /
				       t->ck.appended_bytes : 1.0);
	fprintf(out, "# write_epoch\tlive records\n");
	for (int e = 0; e < 64; e++)
		if (t->per_epoch[e])
			fprintf(out, "%d%s\t%llu\n", e, e == 63 ? "+" : "",
				(unsigned long long)t->per_epoch[e]);
}

/* ---- the disk bound (refurb-cache(5), DISK SPACE) ---- */

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
		       const struct tables *t, FILE *out)
{
	/* what a stopped writer appended after its checkpoint is live
	 * until its next run has recovered it */
	uint64_t live = t->live_bytes + t->appended, disk = disk_bytes(dir);
	uint64_t slack, bound;
	struct rfb_cache_position p;

	if (t->have_ck && t->reuse > 0) {
		slack = RFB_CACHE_BOUND_SLACK(m->samples);
		bound = live + live / t->reuse + slack;
		fprintf(out, "disk         %.1f MiB on disk, %.1f MiB live (%.2fx); "
			"bound (1 + 1/r) x live + %.1f MiB = %.1f MiB (r = %u): %s\n"
			"disk bytes   %llu on disk, %llu live, bound %llu\n",
			disk / 1048576.0, live / 1048576.0,
			live ? (double)disk / live : 0.0, slack / 1048576.0,
			bound / 1048576.0, t->reuse,
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

/* Why the record of a checkpoint entry (sample, e) is bad, read through
 * fd into buf (why[] filled), or NULL when it is good. */
static const char *entry_problem(int fd, rfb_imgbuf *buf, uint32_t sample,
				 const struct rfb_cache_entry *e, rfb_err *err,
				 char *why, size_t n)
{
	struct rfb_record_meta m;
	ssize_t got;

	if (fd < 0 || rfb_imgbuf_reserve(buf, e->addr.length, err))
		return err->msg[0] ? err->msg : rfb_strerror(err->code);
	got = rfb_pread_full(fd, buf->data, e->addr.length, (off_t)e->addr.offset);
	if (got != (ssize_t)e->addr.length) {
		snprintf(why, n, "the segment ends before the record does (%zd "
			 "of %u bytes)", got, e->addr.length);
		return why;
	}
	if (rfb_record_parse_header(buf->data, e->addr.length, &m, err) ||
	    rfb_record_verify(buf->data, e->addr.length, &m, err))
		return err->msg[0] ? err->msg : rfb_strerror(err->code);
	if (m.sample != sample) {
		snprintf(why, n, "the record there is of sample %u", m.sample);
		return why;
	}
	if (rfb_record_size(&m) != e->addr.length) {
		snprintf(why, n, "the record there is %zu bytes, the entry says "
			 "%u", rfb_record_size(&m), e->addr.length);
		return why;
	}
	return NULL;
}

static void check_entry(void *ctx, uint32_t sample, const struct rfb_cache_entry *e)
{
	struct entry_check *k = ctx;
	rfb_err err = { 0 };
	char buf[160];
	const char *why;
	int fd = rfb_cache_view_fd(k->view, e->addr.segment, &err);

	/* a segment whose records die in one of the two epochs after the
	 * checkpoint's was killed when that epoch began and deleted once the
	 * reader had passed it: the checkpoint still names it until the next
	 * one lands (the one of an epoch's end is written in the background
	 * while the next epoch runs), and recovery drops its entries
	 * (refurb-cache(5), DURABILITY) */
	if (fd == RFB_ENOTFOUND && e->death_epoch <= k->info.epoch + 2) {
		k->died++;
		return;
	}
	if (!(why = entry_problem(fd, &k->buf, sample, e, &err, buf, sizeof buf)))
		return;
	k->problems++;
	fprintf(k->out, "sample %u: checkpoint entry segment %08x offset %llu: %s\n",
		sample, e->addr.segment, (unsigned long long)e->addr.offset, why);
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
	fprintf(out, "%s: %llu records checked, %llu problems", dir,
		(unsigned long long)s->records, (unsigned long long)s->problems);
	if (s->torn)
		fprintf(out, ", %llu torn %s (a writer stopped while appending: "
			"the next refurb-partial cuts %s, no record is lost)",
			(unsigned long long)s->torn,
			s->torn == 1 ? "tail" : "tails", s->torn == 1 ? "it" : "them");
	fputc('\n', out);
	return s->problems ? 1 : 0;
}

/* --stats: the tables, the disk bound, the read position. */
static int stats(struct cli *c, const char *dir,
		 const struct rfb_cache_manifest *m, FILE *out)
{
	struct tables *t = calloc(1, sizeof *t);
	rfb_err err = { 0 };
	int rc;

	if (!t)
		cli_die(c, "out of memory");
	if (rfb_cache_list(dir, add_segment, t, &err))
		cli_die_err(c, &err);
	/* fills t->ck before the entries are visited */
	rc = rfb_cache_read_checkpoint(dir, add_entry, t, &t->ck, &err);
	if (rc && rc != RFB_ENOTFOUND)
		cli_die_err(c, &err);
	t->have_ck = rc == 0;
	read_sampled(dir, t);
	print_manifest(dir, m, out);
	print_tables(t, out);
	print_disk(dir, m, t, out);
	free(t);
	return 0;
}

int dump_cache(struct cli *c, const char *dir, const struct dump_opts *o,
	       FILE *out)
{
	struct rfb_cache_manifest m;
	struct survey s = { 0 };
	rfb_err err = { 0 };

	if (rfb_cache_read_manifest(dir, &m, &err))
		cli_die_err(c, &err);
	if (o->extract >= 0)
		return dump_cache_extract(c, dir, (uint32_t)o->extract, o, out);
	if (o->stats && !o->verify)
		return stats(c, dir, &m, out);
	s.verify = o->verify;
	s.out = out;
	if (!o->verify)
		fprintf(out, "# segment\toffset\tlength\tsample\twrite_epoch\t"
			"death_epoch\twidth\theight\tchannels\tcodec\tstored\n");
	if (rfb_cache_scan(dir, visit, &s, &err))
		cli_die_err(c, &err);
	return o->verify ? verify(c, dir, &s, out) : 0;
}

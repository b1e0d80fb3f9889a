/*
 * refurb-partial - run the partial augmentation pipeline on the misses of
 * a plan, keep the on-disk cache, pass the plan on with cache addresses.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "refurb/partial.h"
#include "refurb/progress.h"

static const char usage[] =
	"refurb-partial [OPTIONS] -c CACHEDIR -p SPEC INDEX < PLAN > ANNOTATED-PLAN";

static const char help[] =
	"Read a plan (from refurb-plan), evict what the schedule says, decode and\n"
	"run the partial pipeline on every miss, append the results to the\n"
	"cache in CACHEDIR, and write the plan on with every sample annotated\n"
	"with the address of its cached record (for refurb-final).\n"
	"\n"
	"  -c, --cache DIR        the cache directory (created if missing)\n"
	"  -p, --pipeline SPEC    the partial pipeline, e.g.\n"
	"                         'resize=256,randaug=n=2:m=9' (refurb-pipeline(7))\n"
	"      --codec CODEC      raw (default: fastest), zstd[:LEVEL] (level 1 by\n"
	"                         default: about 35% less disk, slower hits) or\n"
	"                         jpeg[:QUALITY] (90: lossy, about 85% less disk)\n"
	"      --reset            empty a cache made for other inputs and start over\n"
	"  -s, --seed SEED        augmentation seed (default: the plan's seed)\n"
	"  -i, --input FILE       read the plan from FILE (default stdin)\n"
	"  -o, --output FILE      write the annotated plan to FILE (default stdout)\n"
	"      --root DIR         the dataset's directory, if it moved since indexing\n"
	"      --strict           an image that cannot be read is fatal (default:\n"
	"                         name it once, leave it out of its batch (the\n"
	"                         stream repeats another sample), count it)\n"
	"      --max-bad P%|N     stop (exit 1) when more than P% of the plan's\n"
	"                         samples, or more than N images, cannot be read\n"
	"                         (default 1%); a first batch whose every image\n"
	"                         fails always stops the run\n"
	CLI_MAX_PIXELS_HELP
	"      --segment-size MIB cache segment size (default 256)\n"
	"      --grace N          keep dead segments N batches (default: one\n"
	"                         epoch, at least 64, plus what the output\n"
	"                         pipe holds: shrunk to 4 KiB unless the reader\n"
	"                         opened the handover)\n"
	"      --inflight N       batches computed at once (default 2)\n"
	"      --handover[=MIB]   hand the records no later epoch reads (every miss\n"
	"                         at r = 1) to refurb-final in shared memory, not\n"
	"                         through the cache's files (a ring of MIB; default\n"
	"                         two batches of 256 KiB records, 16 to 1024), and\n"
	"                         wait up to 10 s for refurb-final to open it; the\n"
	"                         output must be a pipe to refurb-final.  Default\n"
	"                         when the output is a pipe: the ring is offered\n"
	"                         without waiting and used once refurb-final opens it\n"
	"      --no-handover      every record goes through the cache (a plan\n"
	"                         recorded with tee can then be replayed)\n"
	"      --costs FILE       append every computed sample's thread CPU time\n"
	"                         to FILE (refurb-costs(5)), for refurb-plan\n"
	"                         --balance cost=FILE\n"
	"      --stats FILE       one TSV line per batch (misses computed, worker\n"
	"                         wall and CPU time)\n"
	CLI_COMMON_HELP
	"\nExample:\n"
	"  refurb-plan -b 256 -e 0-89 -s 7 train.evict | refurb-partial -j 3 -c cache \\\n"
	"    -p 'resize=256,randaug=n=2:m=9' train.idx | refurb-final ...\n"
	"\nExit status: 0 done (also when the reader closed the stream), 1 error,\n"
	"2 usage error.  See refurb-partial(1), refurb-cache(5).\n";

enum {
	OPT_CODEC = 0x2000, OPT_RESET, OPT_ROOT, OPT_STRICT, OPT_MAX_PIXELS,
	OPT_SEGMENT, OPT_GRACE, OPT_INFLIGHT, OPT_STATS, OPT_HANDOVER, OPT_COSTS,
	OPT_MAX_BAD, OPT_NO_HANDOVER
};

struct run_ctx {
	struct cli *c;
	int split_shown;         /* the first progress line was printed */
	const char *stats_path;  /* --stats, or NULL */
	FILE *stats;
};

static void on_bad(void *ctx, uint32_t sample, const rfb_err *why)
{
	struct run_ctx *r = ctx;
	char text[1200];

	cli_warn(r->c, "%s (sample %u left out of its batch; reported once)",
		 rfb_err_text(why, text, sizeof text), sample);
}

/* How the run fits the system (the open-file limit), before the first
 * batch. */
static void on_note(void *ctx, const rfb_err *note)
{
	struct run_ctx *r = ctx;

	cli_warn_err(r->c, note);
}

static void on_progress(void *ctx, const struct rfb_partial_stats *st,
			uint64_t total)
{
	struct run_ctx *r = ctx;

	if (!r->split_shown && r->c->progress) /* the first line: the split */
		fprintf(stderr, "refurb-partial: split: cached once every %u uses "
			"(here): %s; run on every use: refurb-final's pipeline\n",
			st->reuse, *st->partial_spec ? st->partial_spec :
			"nothing (the decode alone)");
	r->split_shown = 1;
	cli_progress(r->c, st->batches, total, "batches");
}

/* --stats: one line per batch; a write error is found at fclose. */
static void on_batch(void *ctx, const struct rfb_partial_batch_stats *b)
{
	struct run_ctx *r = ctx;

	fprintf(r->stats, "%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%.0f\t%.0f\n",
		b->epoch, b->step, b->samples, b->misses, b->computed, b->healed,
		b->reused, b->skipped, b->worker_seconds * 1e6,
		b->cpu_seconds * 1e6);
}

/* --max-bad: "P%" (0 to 100, decimals allowed) or a count of images. */
static void parse_max_bad(const struct cli *c, struct rfb_partial_opts *o,
			  const char *arg)
{
	size_t n = strlen(arg);
	char *end;
	double v;

	if (n == 0 || arg[n - 1] != '%') {
		o->max_bad_count = cli_parse_u64(c, "--max-bad", arg, 0, UINT64_MAX);
		o->max_bad_is_count = 1;
		return;
	}
	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || end != arg + n - 1 || errno || !(v >= 0 && v <= 100) ||
	    *arg == '-' ||
	    *arg == '+' || *arg == ' ')
		cli_usage_error(c, "--max-bad: '%s' is not a percentage (0%% to "
				"100%%) or a count of images", arg);
	o->max_bad_fraction = v / 100;
	o->max_bad_is_count = 0;
}

/* Whether err is a file that is not there (moved, wrong --root). */
static int missing(const rfb_err *err)
{
	return err->sys_errno == ENOENT || err->sys_errno == ENOTDIR;
}

/* The run stopped because images could not be read: one message that
 * names the first one, where the index looks for them and the options. */
static void die_bad(const struct cli *c, const struct rfb_partial_opts *o,
		    const struct rfb_partial_stats *st)
{
	char first[1100], where[2600], limit[64];

	rfb_err_text(&st->first_bad, first, sizeof first);
	if (st->bad_stop != RFB_PARTIAL_NOTHING_READ && !missing(&st->first_bad))
		/* the files are there but cannot be decoded: a place is no cure */
		snprintf(where, sizeof where, "repair or remove %s and index "
			 "again, or allow more with --max-bad (a count, or a "
			 "percentage)", st->first_bad.path[0] ?
			 st->first_bad.path : "the image");
	else if (o->root)
		snprintf(where, sizeof where, "the index %s has its images under "
			 "%s, read from --root %s instead: check --root",
			 o->index_path, st->index_root, o->root);
	else
		snprintf(where, sizeof where, "the index %s has its images under "
			 "%s: if the dataset moved, give its directory with "
			 "--root DIR", o->index_path, st->index_root);
	if (st->bad_stop == RFB_PARTIAL_NOTHING_READ)
		cli_die(c, "nothing read: all %llu images of the first batch "
			"failed, the first: %s; %s",
			(unsigned long long)st->first_batch_jobs, first, where);
	if (o->max_bad_is_count)
		snprintf(limit, sizeof limit, "%llu",
			 (unsigned long long)o->max_bad_count);
	else
		snprintf(limit, sizeof limit, "%g%%", o->max_bad_fraction * 100);
	cli_die(c, "%llu image%s cannot be read, more than --max-bad %s "
		"allows (%llu of %llu samples per epoch), the first: %s; %s",
		(unsigned long long)st->bad_images, st->bad_images == 1 ? "" : "s",
		limit, (unsigned long long)st->bad_allowed,
		(unsigned long long)st->samples_planned, first, where);
}

/* path is dir or a file in it. */
static int in_cache(const char *dir, const char *path)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || !path[n]);
}

/* The cache's disk is full: say how much it needs and that it can go on. */
static void die_cache_full(const struct cli *c, const rfb_err *err)
{
	char text[1100];

	cli_die(c, "%s (the cache needs up to (1 + 1/r) times its live records "
		"and a little more: refurb-cache(5), DISK SPACE; it is left "
		"consistent: resume once there is room)",
		rfb_err_text(err, text, sizeof text));
}

/* The system failed (descriptors, memory, a device): not an image's
 * fault, nothing was counted against --max-bad; say so, and whether the
 * cache is ready to resume. */
static void die_system(const struct cli *c, const rfb_err *err,
		       const struct rfb_partial_stats *st)
{
	char text[1100];

	cli_die(c, "%s; %s", rfb_err_text(err, text, sizeof text),
		st->batches == 0
		? "nothing was run: run it again once that is fixed"
		: st->checkpointed
		? "no image was counted bad for it, the cache is checkpointed: "
		  "once that is fixed, resume the chain at the trainer's saved "
		  "step (refurb-plan --start EPOCH:STEP)"
		: "no image was counted bad for it; the cache recovers when it "
		  "is opened next");
}

/* *handover: -1 not given (the default: without waiting, when the output
 * is a pipe), 1 --handover (waiting), 0 --no-handover. */
static void parse(struct cli *c, struct rfb_partial_opts *o, const char **in,
		  const char **out, const char **stats, int *handover, int argc,
		  char **argv)
{
	static const struct option longopts[] = {
		{ "cache", required_argument, NULL, 'c' },
		{ "pipeline", required_argument, NULL, 'p' },
		{ "codec", required_argument, NULL, OPT_CODEC },
		{ "reset", no_argument, NULL, OPT_RESET },
		{ "seed", required_argument, NULL, 's' },
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ "max-pixels", required_argument, NULL, OPT_MAX_PIXELS },
		{ "max-bad", required_argument, NULL, OPT_MAX_BAD },
		{ "segment-size", required_argument, NULL, OPT_SEGMENT },
		{ "grace", required_argument, NULL, OPT_GRACE },
		{ "inflight", required_argument, NULL, OPT_INFLIGHT },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "handover", optional_argument, NULL, OPT_HANDOVER },
		{ "no-handover", no_argument, NULL, OPT_NO_HANDOVER },
		{ "costs", required_argument, NULL, OPT_COSTS },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	rfb_err err = { 0 };
	int opt;

	/* raw: hits cost a read and a checksum, nothing more (refurb-partial(1),
	 * CODECS, has the measurements behind this choice) */
	o->codec.kind = RFB_CODEC_RAW;
	o->codec.level = 0;
	o->inflight = 2;
	o->max_bad_fraction = 0.01;
	while ((opt = getopt_long(argc, argv, "c:p:s:i:o:" CLI_COMMON_SHORTOPTS,
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': o->cache_dir = optarg; break;
		case 'p': o->pipeline = optarg; break;
		case 'i': *in = optarg; break;
		case 'o': *out = optarg; break;
		case 's':
			o->seed = cli_parse_u64(c, "--seed", optarg, 0, UINT64_MAX);
			o->have_seed = 1;
			break;
		case OPT_CODEC:
			if (rfb_codec_parse(optarg, &o->codec, &err))
				cli_usage_error(c, "--codec: %s", err.msg);
			break;
		case OPT_RESET: o->reset = 1; break;
		case OPT_ROOT: o->root = optarg; break;
		case OPT_STRICT: o->strict = 1; break;
		case OPT_MAX_PIXELS:
			o->max_pixels = cli_parse_max_pixels(c, optarg);
			break;
		case OPT_SEGMENT:
			o->segment_max = cli_parse_u64(c, "--segment-size", optarg,
						       1, 4095) << 20;
			break;
		case OPT_GRACE:
			o->grace = cli_parse_u64(c, "--grace", optarg, 1, UINT32_MAX);
			break;
		case OPT_INFLIGHT:
			o->inflight = (int)cli_parse_u64(c, "--inflight", optarg, 1, 64);
			break;
		case OPT_STATS: *stats = optarg; break;
		case OPT_HANDOVER:
			o->handover = optarg ? cli_parse_u64(c, "--handover", optarg,
							     1, 1 << 16) << 20
					     : RFB_PARTIAL_HANDOVER_AUTO;
			*handover = 1;
			break;
		case OPT_NO_HANDOVER: *handover = 0; break;
		case OPT_MAX_BAD: parse_max_bad(c, o, optarg); break;
		case OPT_COSTS: o->costs_path = optarg; break;
		default:
			if (!cli_common_option(c, opt, optarg))
				cli_usage_error(c, "unexpected option");
		}
	}
	o->index_path = cli_one_operand(c, argc, argv, "index");
	if (!o->cache_dir)
		cli_usage_error(c, "no cache directory: give -c DIR");
	if (!o->pipeline)
		cli_usage_error(c, "no partial pipeline: give -p SPEC");
	o->threads = c->threads;
}

static void summary(const struct rfb_partial_stats *st)
{
	double rate = st->seconds > 0 ? (double)st->samples / st->seconds : 0;
	double cpu = st->worker_seconds > 0
			     ? (double)(st->computed + st->healed) / st->worker_seconds
			     : 0;

	fprintf(stderr, "refurb-partial: %llu batches, %llu samples in %.2f s "
		"(%.0f samples/s); misses computed %llu (%.0f per worker-second), "
		"reused %llu; hits %llu, recomputed %llu; left out %llu\n",
		(unsigned long long)st->batches, (unsigned long long)st->samples,
		st->seconds, rate, (unsigned long long)st->computed, cpu,
		(unsigned long long)st->reused, (unsigned long long)st->hits,
		(unsigned long long)st->healed, (unsigned long long)st->skipped);
	fprintf(stderr, "refurb-partial: cache: %llu live records, %.1f MiB; "
		"appended %.1f MiB, wrote %.1f MiB (write amplification %.3f); "
		"%llu records compacted, %llu segments deleted%s\n",
		(unsigned long long)st->live_records, st->live_bytes / 1048576.0,
		st->record_bytes / 1048576.0, st->written_bytes / 1048576.0,
		st->record_bytes ? (double)st->written_bytes / st->record_bytes : 1.0,
		(unsigned long long)st->compacted,
		(unsigned long long)st->deleted_segments,
		st->torn_bytes ? " (a torn tail was cut when opening)" : "");
	if (st->handover_unused)
		fprintf(stderr, "refurb-partial: --handover: nothing opened the "
			"handover (is the output refurb-final?); the records went "
			"to the cache\n");
	if (st->handover_records)
		fprintf(stderr, "refurb-partial: %llu records handed to the "
			"reader in shared memory, not written to the cache\n",
			(unsigned long long)st->handover_records);
	if (st->stopped_by_reader)
		fprintf(stderr, "refurb-partial: the reader closed the stream at "
			"epoch %u (batch %llu); the cache is checkpointed and "
			"resumable\n", st->epoch,
			(unsigned long long)st->global_step);
}

/* 1 if the output (a path, or "-": stdout) is a pipe or a FIFO. */
static int is_pipe(const char *out)
{
	struct stat st;
	int rc = strcmp(out, "-") ? stat(out, &st) : fstat(STDOUT_FILENO, &st);

	return rc == 0 && S_ISFIFO(st.st_mode);
}

int main(int argc, char **argv)
{
	struct cli c;
	struct rfb_partial_opts o = { 0 };
	struct rfb_partial_stats st;
	const char *in = "-", *out = "-";
	struct run_ctx r = { .c = &c };
	rfb_err err = { 0 };
	int in_fd, out_fd, rc, handover = -1;

	cli_init(&c, "refurb-partial", usage, help);
	cli_keep_freed_memory();
	parse(&c, &o, &in, &out, &r.stats_path, &handover, argc, argv);
	signal(SIGPIPE, SIG_IGN); /* a closed reader is EPIPE, handled */
	cli_set_stop_line("refurb-partial: interrupted; stopped at once (the "
			  "cache recovers when it is opened next)\n");
	cli_catch_stop_signals();
	in_fd = cli_open_fd(&c, in, 0, 0);
	if (handover == 1 && !is_pipe(out))
		cli_usage_error(&c, "--handover needs the output to be a pipe to "
				"refurb-final (a recorded plan could not reach "
				"its records)");
	if (handover == 0)
		o.handover = 0;
	if (handover == -1 && is_pipe(out)) {
		o.handover = RFB_PARTIAL_HANDOVER_AUTO;
		o.handover_nowait = 1;
	}
	out_fd = cli_open_fd(&c, out, 1, 1);
	if (r.stats_path) {
		if (!(r.stats = fopen(r.stats_path, "w")))
			cli_die(&c, "%s: cannot open: %s", r.stats_path,
				strerror(errno));
		fputs("epoch\tstep\tsamples\tmisses\tcomputed\thealed\treused\t"
		      "skipped\tworker_us\tcpu_us\n", r.stats);
		o.on_batch = on_batch;
	}
	o.out_name = strcmp(out, "-") ? out : NULL;
	o.on_bad = on_bad;
	o.on_note = on_note;
	o.on_progress = on_progress;
	o.stop = (volatile int *)&cli_stop_signal;
	o.ctx = &r;
	rc = rfb_partial_run(&o, in_fd, strcmp(in, "-") ? in : "(stdin)", out_fd,
			     &st, &err);
	cli_progress_clear(&c);
	if (rc == RFB_ESPEC)
		cli_usage_error(&c, "%s", err.msg);
	if (rc && st.bad_stop)
		die_bad(&c, &o, &st);
	if (rc && err.sys_errno == ENOSPC && in_cache(o.cache_dir, err.path))
		die_cache_full(&c, &err);
	if (rc && rfb_err_is_system(&err))
		die_system(&c, &err, &st);
	if (rc)
		cli_die_err(&c, &err);
	if (out_fd != STDOUT_FILENO && close(out_fd) < 0)
		cli_die(&c, "%s: write failed: %s", out, strerror(errno));
	if (r.stats && fclose(r.stats) != 0)
		cli_die(&c, "%s: write failed: %s", r.stats_path, strerror(errno));
	if (cli_stop_signal && !st.stopped_by_signal)
		st.stopped_by_signal = cli_stop_signal; /* and the reader left */
	if (st.stopped_by_signal)
		st.stopped_by_reader = 0; /* its reader stopped on the signal
					   * too: one line says both */
	if (!c.quiet)
		summary(&st);
	if (st.stopped_by_signal) {
		fprintf(stderr, "refurb-partial: interrupted (%s) at epoch %u, "
			"batch %llu; the cache is checkpointed: resume the chain "
			"at the trainer's saved step with refurb-plan --start "
			"EPOCH:STEP (refurb-final names the last batch it "
			"wrote)\n", cli_signal_name(st.stopped_by_signal),
			st.epoch, (unsigned long long)st.global_step);
		return 128 + st.stopped_by_signal;
	}
	return 0;
}

/*
 * refurb-final - read cached records with batched AIO, run the final
 * pipeline, write the batch stream a trainer reads.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "refurb/final.h"
#include "refurb/stream.h"

static const char usage[] =
	"refurb-final [OPTIONS] -p SPEC < ANNOTATED-PLAN > STREAM\n"
	"       refurb-final [OPTIONS] -g K:SPEC[;SPEC...] -g ... < ANNOTATED-PLAN > STREAM";

static const char help[] =
	"Read the annotated plan from refurb-partial, fetch every batch's\n"
	"records from the cache with one Linux AIO submission, run the final\n"
	"pipeline, and write the batch stream (refurb-stream(5)) that a trainer\n"
	"reads (python/refurb_stream, installed by make install).  Output: stdout, a file or a FIFO.\n"
	"\n"
	"  -p, --pipeline SPEC    the final pipeline, e.g. 'crop=224,flip'; it\n"
	"                         must give every image the same size; ending in\n"
	"                         normalize gives float32 NCHW, else uint8 NHWC;\n"
	"                         given K times: K views, view v runs the v-th\n"
	"                         (asymmetric views: BYOL, DINO's global crops),\n"
	"                         all of the same size, dtype and normalize\n"
	"      --views K          run the final pipeline K times on every sample\n"
	"                         (independent views, for self-supervised\n"
	"                         training; 1 to 64, default 1): a version 2\n"
	"                         stream of N x K images per batch\n"
	"  -g, --view-group K:SPEC[;SPEC...]\n"
	"                         a group of K views of one size (multi-crop:\n"
	"                         DINO's global and local crops), each running\n"
	"                         SPEC, or the k-th of K specs separated by ';';\n"
	"                         given once per group (2 to 8 groups, 64 views\n"
	"                         in all; in place of -p): a version 3 stream\n"
	"                         whose reader gets one array per group,\n"
	"                         N x K x H x W x C, every record read once\n"
	"      --allow-view-collisions  run views of one pipeline even when two\n"
	"                         of them would be identical more often than 1%\n"
	"                         (refused by default: the message names the\n"
	"                         probability and what to move into the final part)\n"
	"      --allow-shared-draws  run two or more views even when the partial\n"
	"                         pipeline draws (a crop, a jitter): the views of\n"
	"                         a sample then share its draws (refused by\n"
	"                         default: the message names the layers to move)\n"
	"      --prefetch N       batches in flight (default 2)\n"
	"      --direct           read the cache with O_DIRECT\n"
	"      --strict           a record that cannot be read is fatal (default:\n"
	"                         recompute it from its image, count it)\n"
	"  -s, --seed SEED        final augmentation seed (default: the plan's\n"
	"                         augmentation seed)\n"
	"      --stats FILE       one TSV line per batch (times, bytes, misses)\n"
	"  -i, --input FILE       read the plan from FILE (default stdin)\n"
	"  -o, --output FILE      write the stream to FILE (default stdout)\n"
	"  -f, --force            write the stream to a terminal\n"
	"  -c, --cache DIR        the cache (default: the plan header's)\n"
	"      --index FILE       the index (default: the plan header's)\n"
	"      --root DIR         the dataset's directory, if it moved\n"
	CLI_MAX_PIXELS_HELP
	"      --reader-pid PID   the trainer that reads the stream: stop (as on\n"
	"                         SIGTERM) when that process is gone, also while\n"
	"                         waiting for it to open a FIFO (a trainer killed\n"
	"                         before it opened it leaves no chain behind)\n"
	CLI_COMMON_HELP
	"\nExample:\n"
	"  mkfifo train.fifo   # once; the trainer reads it (refurb_stream)\n"
	"  refurb-plan ... | refurb-partial ... | refurb-final -j 2 -p 'crop=224,flip' \\\n"
	"    -o train.fifo &\n"
	"  # DINO: 2 global crops (224) and 8 local ones (96) of every sample\n"
	"  refurb-final -g \"2:$GLOBAL1;$GLOBAL2\" -g \"8:$LOCAL\" -o train.fifo\n"
	"\nExit status: 0 done (also when the reader closed the stream), 1 error,\n"
	"2 usage error or bad pipeline spec.  See refurb-final(1).\n";

enum {
	OPT_PREFETCH = 0x2000, OPT_DIRECT, OPT_STRICT, OPT_STATS, OPT_INDEX,
	OPT_ROOT, OPT_VIEWS, OPT_MAX_PIXELS, OPT_ALLOW_COLLISIONS, OPT_READER_PID,
	OPT_ALLOW_SHARED
};

#define MAX_GROUPS RFB_STREAM_MAX_GROUPS

struct args {
	const char *in, *out, *stats;
	int force;
	pid_t reader;        /* --reader-pid, 0 = none */
	const char *pipelines[RFB_STREAM_MAX_VIEWS]; /* -p, once per view */
	int npipelines;
	int group_views[MAX_GROUPS];  /* -g: views of each group, whose */
	int ngroups;                  /* specs are in pipelines */
	int plain_pipelines;          /* of them, given with -p */
	char *group_specs[RFB_STREAM_MAX_VIEWS + MAX_GROUPS]; /* -g's copies */
	int ngroup_specs;
};

struct run_ctx {
	struct cli *c;
	int split_shown;         /* the first progress line was printed */
	FILE *stats;             /* --stats, or NULL */
};

static void on_heal(void *ctx, uint32_t sample, const rfb_err *why)
{
	struct run_ctx *r = ctx;
	char text[1200];

	cli_warn(r->c, "sample %u: record recomputed from its image (%s)", sample,
		 rfb_err_text(why, text, sizeof text));
}

/* Samples already named: a bad image is named once per run, not once
 * per epoch. */
static unsigned char *named;
static size_t named_bytes;

static int first_time(uint32_t sample)
{
	size_t byte = sample / 8;

	if (byte >= named_bytes) {
		size_t n = byte * 2 + 64;
		unsigned char *m = realloc(named, n);
		if (!m)
			return 1; /* naming it again is harmless */
		memset(m + named_bytes, 0, n - named_bytes);
		named = m;
		named_bytes = n;
	}
	if (named[byte] & 1u << sample % 8)
		return 0;
	named[byte] |= (unsigned char)(1u << sample % 8);
	return 1;
}

/* How the run fits the system (the open-file limit), before the first
 * batch. */
static void on_note(void *ctx, const rfb_err *note)
{
	struct run_ctx *r = ctx;

	cli_warn_err(r->c, note);
}

static void on_bad(void *ctx, uint32_t sample, const rfb_err *why)
{
	struct run_ctx *r = ctx;
	char text[1200];

	if (!first_time(sample))
		return;
	cli_warn(r->c, "%s (sample %u left out of its batch, another sample "
		 "repeated in its place: its record is bad and its image cannot "
		 "be read; reported once)",
		 rfb_err_text(why, text, sizeof text), sample);
}

/* The next batch after the last one written, as refurb-plan --start. */
static void next_step(const struct rfb_final_stats *st, uint32_t *e,
		      uint32_t *s)
{
	*e = st->last_epoch;
	*s = st->last_step + 1;
	if (*s >= st->epoch_batches) {
		*e += 1;
		*s = 0;
	}
}

static void on_written(void *ctx, const struct rfb_final_stats *st)
{
	uint32_t e, s;

	(void)ctx;
	next_step(st, &e, &s);
	cli_set_stop_line("refurb-final: interrupted after writing epoch %u "
			  "step %u (no END frame); resume: refurb-plan --start "
			  "%u:%u with the same other options (%s), or at the "
			  "trainer's saved step if it read less\n",
			  st->last_epoch, st->last_step, e, s, st->plan_options);
}

/* Stopped by SIGINT/SIGTERM at a batch boundary: say how to resume. */
static void stopped(const struct rfb_final_stats *st)
{
	uint32_t e, s;

	if (!st->wrote_batch) {
		fprintf(stderr, "refurb-final: interrupted (%s) before writing "
			"a batch (no END frame)\n",
			cli_signal_name(st->stopped_by_signal));
	} else {
		next_step(st, &e, &s);
		fprintf(stderr, "refurb-final: interrupted (%s) after writing "
			"epoch %u step %u (no END frame); resume: refurb-plan "
			"--start %u:%u with the same other options (%s), or at "
			"the trainer's saved step if it read less\n",
			cli_signal_name(st->stopped_by_signal), st->last_epoch,
			st->last_step, e, s, st->plan_options);
	}
	exit(128 + st->stopped_by_signal);
}

static void on_progress(void *ctx, const struct rfb_final_stats *st,
			uint64_t total)
{
	struct run_ctx *r = ctx;

	if (!r->split_shown && r->c->progress) /* the first line: the split */
		fprintf(stderr, "refurb-final: split: cached once every %u uses "
			"(refurb-partial): %s; run on every use (here, %d view%s): "
			"%s\n", st->reuse, *st->partial_spec ? st->partial_spec :
			"nothing (the decode alone)", st->views,
			st->views > 1 ? "s" : "", st->final_spec);
	r->split_shown = 1;
	cli_progress(r->c, st->batches, total, "batches");
}

/* --stats: one line per batch; a write error is found at fclose. */
static void on_batch(void *ctx, const struct rfb_final_batch_stats *b)
{
	struct run_ctx *r = ctx;

	fprintf(r->stats, "%u\t%u\t%u\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
		"\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\n", b->epoch, b->step,
		b->images, b->misses, b->healed, b->bytes_read, b->read_s * 1e6,
		b->decompress_s * 1e6, b->augment_s * 1e6, b->heal_s * 1e6,
		b->output_wait_s * 1e6, b->interval_s * 1e6, b->cpu_s * 1e6);
}

/* The --stats file, its header written. */
static FILE *open_stats(struct cli *c, const char *path)
{
	int fd = cli_open_fd(c, path, 1, 1);
	FILE *f = fdopen(fd, "w");

	if (!f)
		cli_die(c, "%s: cannot open: %s", path, strerror(errno));
	fputs("epoch\tstep\timages\tmisses\thealed\tbytes_read\tread_us\t"
	      "decompress_us\taugment_us\theal_us\toutput_wait_us\t"
	      "interval_us\tcpu_us\n", f);
	return f;
}

/* -g K:SPEC[;SPEC...]: K views, each running SPEC or its own of K specs
 * (';' is not a character of the pipeline language). */
static void parse_group(struct cli *c, struct args *a, const char *arg)
{
	char *end, *specs[RFB_STREAM_MAX_VIEWS];
	unsigned long k = strtoul(arg, &end, 10);
	int n = 0;

	if (a->ngroups == MAX_GROUPS)
		cli_usage_error(c, "more than %d view groups (-g)", MAX_GROUPS);
	if (end == arg || *end != ':' || k < 1 || k > RFB_STREAM_MAX_VIEWS ||
	    !end[1])
		cli_usage_error(c, "--view-group '%s': give K:SPEC (K views, 1 to "
				"%d, running SPEC) or K:SPEC1;...;SPECK", arg,
				RFB_STREAM_MAX_VIEWS);
	for (char *p = end + 1;; n++) {
		char *semi = strchr(p, ';');
		if (n < RFB_STREAM_MAX_VIEWS &&
		    !(specs[n] = strndup(p, semi ? (size_t)(semi - p) : strlen(p))))
			cli_die(c, "out of memory");
		if (!semi)
			break;
		p = semi + 1;
	}
	n++;
	if (n != 1 && (unsigned long)n != k)
		cli_usage_error(c, "--view-group '%.40s...': %d specs for %lu views "
				"(give one spec for all K views, or K specs separated "
				"by ';')", arg, n, k);
	if (a->npipelines + (int)k > RFB_STREAM_MAX_VIEWS)
		cli_usage_error(c, "more than %d views in all (-g)",
				RFB_STREAM_MAX_VIEWS);
	for (int i = 0; i < n; i++)   /* freed by main */
		a->group_specs[a->ngroup_specs++] = specs[i];
	for (unsigned long v = 0; v < k; v++)
		a->pipelines[a->npipelines++] = specs[n == 1 ? 0 : v];
	a->group_views[a->ngroups++] = (int)k;
}

/* The views and their groups, once every option is read. */
static void settle_views(struct cli *c, struct rfb_final_opts *o, struct args *a)
{
	if (a->ngroups) {
		if (a->plain_pipelines || o->views)
			cli_usage_error(c, "-g (--view-group) names every view and "
					"its pipeline: give -g for every group, "
					"without -p or --views");
		o->pipeline = a->pipelines[0];
		o->views = a->npipelines;
		o->view_pipelines = a->pipelines;
		o->group_views = a->group_views;
		o->groups = a->ngroups;
		return;
	}
	if (!a->npipelines)
		cli_usage_error(c, "no final pipeline: give -p SPEC (or -g K:SPEC "
				"per view group)");
	o->pipeline = a->pipelines[0];
	if (a->npipelines > 1) {
		if (o->views && o->views != a->npipelines)
			cli_usage_error(c, "--views %d with %d pipelines (-p): give one "
					"-p per view, or one -p for all", o->views,
					a->npipelines);
		o->views = a->npipelines;
		o->view_pipelines = a->pipelines;
	}
}

static void parse(struct cli *c, struct rfb_final_opts *o, struct args *a,
		  int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pipeline", required_argument, NULL, 'p' },
		{ "prefetch", required_argument, NULL, OPT_PREFETCH },
		{ "views", required_argument, NULL, OPT_VIEWS },
		{ "view-group", required_argument, NULL, 'g' },
		{ "allow-view-collisions", no_argument, NULL, OPT_ALLOW_COLLISIONS },
		{ "allow-shared-draws", no_argument, NULL, OPT_ALLOW_SHARED },
		{ "direct", no_argument, NULL, OPT_DIRECT },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ "seed", required_argument, NULL, 's' },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "cache", required_argument, NULL, 'c' },
		{ "index", required_argument, NULL, OPT_INDEX },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "max-pixels", required_argument, NULL, OPT_MAX_PIXELS },
		{ "reader-pid", required_argument, NULL, OPT_READER_PID },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int opt;

	o->prefetch = 2;
	while ((opt = getopt_long(argc, argv, "p:g:s:i:o:fc:" CLI_COMMON_SHORTOPTS,
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (a->npipelines == RFB_STREAM_MAX_VIEWS)
				cli_usage_error(c, "more than %d pipelines (-p)",
						RFB_STREAM_MAX_VIEWS);
			a->pipelines[a->npipelines++] = optarg;
			a->plain_pipelines++;
			break;
		case 'g':
			parse_group(c, a, optarg);
			break;
		case 'i': a->in = optarg; break;
		case 'o': a->out = optarg; break;
		case 'f': a->force = 1; break;
		case 'c': o->cache_dir = optarg; break;
		case 's':
			o->seed = cli_parse_u64(c, "--seed", optarg, 0, UINT64_MAX);
			o->have_seed = 1;
			break;
		case OPT_PREFETCH:
			o->prefetch = (int)cli_parse_u64(c, "--prefetch", optarg, 1, 64);
			break;
		case OPT_VIEWS:
			o->views = (int)cli_parse_u64(c, "--views", optarg, 1,
						      RFB_STREAM_MAX_VIEWS);
			break;
		case OPT_ALLOW_COLLISIONS: o->allow_view_collisions = 1; break;
		case OPT_ALLOW_SHARED: o->allow_shared_draws = 1; break;
		case OPT_DIRECT: o->direct = 1; break;
		case OPT_STRICT: o->strict = 1; break;
		case OPT_STATS: a->stats = optarg; break;
		case OPT_INDEX: o->index_path = optarg; break;
		case OPT_ROOT: o->root = optarg; break;
		case OPT_MAX_PIXELS: o->max_pixels = cli_parse_max_pixels(c, optarg); break;
		case OPT_READER_PID:
			a->reader = (pid_t)cli_parse_u64(c, "--reader-pid", optarg, 1,
							 INT32_MAX);
			break;
		default:
			if (!cli_common_option(c, opt, optarg))
				cli_usage_error(c, "unexpected option");
		}
	}
	if (optind != argc)
		cli_usage_error(c, "unexpected argument '%s'", argv[optind]);
	settle_views(c, o, a);
	o->threads = c->threads;
}

/* ---- --reader-pid ---- */

struct reader_watch {
	pid_t pid;
	const char *out;         /* the stream's name, for the message */
};

/* Whether process pid still runs: it exists and is not a zombie (a dead
 * trainer its shell has not reaped yet is gone too). */
static int process_runs(pid_t pid)
{
	char path[64], buf[512], *paren;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno != ENOENT && errno != ESRCH;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	paren = strrchr(buf, ')'); /* the state follows the name, "(...) S" */
	return !paren || (paren[1] && paren[2] != 'Z' && paren[2] != 'X');
}

/* The watcher: every 0.2 s, is the reader still there?  When it is gone
 * (killed before it opened the FIFO, or with a forked child still holding
 * it, so that no EPIPE comes), say so and stop as SIGTERM stops. */
static void *watch_reader(void *arg)
{
	const struct reader_watch *w = arg;

	while (process_runs(w->pid))
		usleep(200000);
	fprintf(stderr, "refurb-final: %s: its reader, process %d "
		"(--reader-pid), is gone; stopping\n", w->out, (int)w->pid);
	kill(getpid(), SIGTERM);
	return NULL;
}

static void start_reader_watch(struct cli *c, const struct args *a)
{
	static struct reader_watch w;
	pthread_t thread;

	if (!a->reader)
		return;
	w.pid = a->reader;
	w.out = a->out && strcmp(a->out, "-") ? a->out : "(stdout)";
	if (pthread_create(&thread, NULL, watch_reader, &w) != 0 ||
	    pthread_detach(thread) != 0)
		cli_die(c, "cannot start the --reader-pid watch: out of threads");
}

static void summary(const struct rfb_final_stats *st)
{
	fprintf(stderr, "refurb-final: %llu batches, %llu images in %.2f s "
		"(%.0f images/s); per batch %.1f ms (CV %.3f); %.2f io_submit "
		"calls per batch; read %.1f MiB in %.2f s; records recomputed %llu, "
		"samples left out %llu (repeats in their place %llu)\n",
		(unsigned long long)st->batches, (unsigned long long)st->images,
		st->seconds, st->seconds > 0 ? st->images / st->seconds : 0.0,
		st->interval_mean_s * 1e3, st->interval_cv,
		st->batches ? (double)st->submit_calls / st->batches : 0.0,
		st->bytes_read / 1048576.0, st->read_s,
		(unsigned long long)st->healed, (unsigned long long)st->skipped,
		(unsigned long long)st->repeats);
	fprintf(stderr, "refurb-final: time: read %.2f s, decompress %.2f s, "
		"augment %.2f s, recompute %.2f s (worker sums); waited %.2f s "
		"for the plan, %.2f s for the reader\n", st->read_s, st->decode_s,
		st->augment_s, st->heal_s, st->input_wait_s, st->output_wait_s);
	if (st->handover_records)
		fprintf(stderr, "refurb-final: %llu records read from "
			"refurb-partial's handover (shared memory)\n",
			(unsigned long long)st->handover_records);
	if (st->direct_refused)
		fprintf(stderr, "refurb-final: the cache's filesystem refused "
			"O_DIRECT; some reads were buffered\n");
	if (st->stopped_by_reader)
		fprintf(stderr, "refurb-final: the reader closed the stream at "
			"epoch %u (batch %llu)\n", st->epoch,
			(unsigned long long)st->global_step);
}

int main(int argc, char **argv)
{
	struct cli c;
	struct rfb_final_opts o = { 0 };
	struct rfb_final_stats st;
	struct args a = { 0 };
	struct run_ctx r = { .c = &c };
	rfb_err err = { 0 };
	char text[1100];
	int in_fd, out_fd, rc;

	cli_init(&c, "refurb-final", usage, help);
	cli_keep_freed_memory();
	parse(&c, &o, &a, argc, argv);
	signal(SIGPIPE, SIG_IGN); /* a closed reader is EPIPE, handled */
	cli_set_stop_line("refurb-final: interrupted before writing a batch\n");
	cli_catch_stop_signals();
	start_reader_watch(&c, &a);
	in_fd = cli_open_fd(&c, a.in, 0, 0);
	out_fd = cli_open_fd(&c, a.out, 1, a.force);
	if (a.stats) {
		r.stats = open_stats(&c, a.stats);
		o.on_batch = on_batch;
	}
	o.out_name = a.out && strcmp(a.out, "-") ? a.out : NULL;
	o.on_heal = on_heal;
	o.on_bad = on_bad;
	o.on_note = on_note;
	o.on_progress = on_progress;
	o.on_written = on_written;
	o.stop = (volatile int *)&cli_stop_signal;
	o.ctx = &r;
	rc = rfb_final_run(&o, in_fd, a.in && strcmp(a.in, "-") ? a.in : "(stdin)",
			   out_fd, &st, &err);
	cli_progress_clear(&c);
	if (rc == RFB_ESPEC)
		cli_usage_error(&c, "%s", err.msg);
	if (rc && rfb_err_is_system(&err))
		cli_die(&c, "%s; %s", rfb_err_text(&err, text, sizeof text),
			st.batches == 0
			? "nothing was written: run it again once that is fixed"
			: "no sample was left out for it: once that is fixed, "
			  "resume the chain at the trainer's saved step "
			  "(refurb-plan --start EPOCH:STEP)");
	if (rc)
		cli_die_err(&c, &err);
	if (out_fd != STDOUT_FILENO && close(out_fd) < 0)
		cli_die(&c, "%s: write failed: %s", a.out, strerror(errno));
	if (r.stats && fclose(r.stats) != 0)
		cli_die(&c, "%s: write failed: %s", a.stats, strerror(errno));
	if (cli_stop_signal && !st.stopped_by_signal)
		st.stopped_by_signal = cli_stop_signal; /* and the reader left */
	if (st.stopped_by_signal)
		st.stopped_by_reader = 0; /* the reader stopped on the signal
					   * too: one line says both */
	for (int i = 0; i < a.ngroup_specs; i++)
		free(a.group_specs[i]);
	if (!c.quiet)
		summary(&st);
	if (st.stopped_by_signal)
		stopped(&st);
	return 0;
}

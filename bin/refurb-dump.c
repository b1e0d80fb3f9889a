/*
 * refurb-dump - print any refurb file as text, with summaries, checks and
 * pictures.  The kind of file is recognised by its magic; each kind has
 * its part (bin/dump_*.c, see dump.h); --preview makes contact sheets of
 * a pipeline's augmentations (dump_preview.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dump.h"
#include "dump_preview.h"
#include "dump_stream.h"
#include "refurb/format.h"
#include "refurb/io.h"

static const char usage[] =
	"refurb-dump [OPTIONS] FILE\n"
	"       refurb-dump --preview SPEC [-n K] [-o SHEET.jpg] IMAGE.jpg...";

static const char help[] =
	"Print a refurb file as text; the kind is recognised by its magic:\n"
	"  index     TSV (id label class bytes width height channels path) that\n"
	"            refurb-index --from-tsv reads back\n"
	"  schedule  TSV (id phase) and, with --stats, N, r, policy, phases\n"
	"  plan      TSV (epoch step sample_id hit|miss), one line per sample;\n"
	"            with --stats a per-epoch table and the reuse counts\n"
	"  cache     a directory holding a manifest: TSV of its records; with\n"
	"            --stats a summary (records, compression, write\n"
	"            amplification ...)\n"
	"  stream    a batch stream: one line per frame; with --stats per-epoch\n"
	"            counts and the label histogram\n"
	"FILE '-' reads any of them but a cache from stdin, e.g.\n"
	"refurb-final ... | refurb-dump -b 0:0 --sheet batch.jpg -\n"
	"\n"
	"  -S, --stats        a summary instead of the listing\n"
	"  -i, --index FILE   plan: the index, for miss pixels per batch\n"
	"      --verify       cache: check every record and checkpoint entry;\n"
	"                     list the problems, exit 1 if there are any;\n"
	"                     any other file: read it through, exit 1 at the\n"
	"                     first problem (named), else one line\n"
	"  -x, --extract ID   cache: sample ID's record as an image (PPM/PGM, or\n"
	"                     JPEG when -o names a .jpg file); index: sample\n"
	"                     ID's bytes as stored (its file, or its shard range)\n"
	"  -b, --batch SEL    stream: the batch EPOCH:STEP or GLOBAL_STEP\n"
	"      --sheet FILE   stream, with --batch: a contact sheet (JPEG) of it\n"
	"      --columns N    images per row of the sheet\n"
	"      --quality Q    JPEG quality of the sheet (default 90)\n"
	"  -o, --output FILE  write to FILE instead of stdout\n"
	"  -P, --preview SPEC a contact sheet of K augmentations of each image\n"
	"                     under SPEC (options in refurb-dump(1))\n"
	CLI_COMMON_HELP
	"\nExample:\n"
	"  refurb-dump --stats cache\n"
	"  refurb-dump --preview 'resize=256,randaug=n=2:m=9,crop=224,flip' -n 8 \\\n"
	"    -o sheet.jpg img.jpg\n"
	"\nExit status: 0 ok, 1 unreadable or corrupt file (or --verify found\n"
	"problems), 2 usage error.  See refurb-dump(1).\n";

enum kind { KIND_UNKNOWN, KIND_INDEX, KIND_EVICT, KIND_PLAN, KIND_CACHE,
	    KIND_STREAM };

enum { OPT_VERIFY = 0x2000, OPT_SHEET, OPT_COLUMNS, OPT_QUALITY };

static enum kind directory_kind(struct cli *c, const char *path)
{
	char manifest[4200];

	snprintf(manifest, sizeof manifest, "%s/manifest", path);
	if (access(manifest, F_OK) == 0)
		return KIND_CACHE;
	cli_die(c, "%s: is a directory, but not a refurb cache (no manifest)",
		path);
}

/* stdin whose first bytes were read to learn its kind: a file is read
 * in place; for a pipe (which cannot be peeked at) a thread writes them,
 * then the rest of stdin, into a pipe that takes fd 0's place, so every
 * part reads "-" from the start. */
struct replay {
	unsigned char head[16];
	size_t len;
	int in, out;
};

static void *replay_main(void *arg)
{
	struct replay *r = arg;
	static unsigned char buf[1 << 16];
	ssize_t got;

	if (rfb_write_full(r->out, r->head, r->len) == 0)
		while ((got = read(r->in, buf, sizeof buf)) != 0) {
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0 || rfb_write_full(r->out, buf, (size_t)got) < 0)
				break; /* the reader sees the stream end early */
		}
	close(r->out);
	close(r->in);
	return NULL;
}

static ssize_t sniff_stdin(struct cli *c, unsigned char *magic, size_t n)
{
	static struct replay r;
	off_t at = lseek(STDIN_FILENO, 0, SEEK_CUR);
	pthread_t t;
	ssize_t got;
	int p[2];

	if (at >= 0) { /* a file: look, and leave it where it was */
		got = rfb_pread_full(STDIN_FILENO, magic, n, at);
		if (got < 0)
			cli_die(c, "(stdin): read failed: %s", strerror(errno));
		return got;
	}
	got = rfb_read_full(STDIN_FILENO, r.head, sizeof r.head);
	if (got < 0)
		cli_die(c, "(stdin): read failed: %s", strerror(errno));
	r.len = (size_t)got;
	memcpy(magic, r.head, n < r.len ? n : r.len);
	if (pipe(p) < 0 || (r.in = dup(STDIN_FILENO)) < 0 ||
	    dup2(p[0], STDIN_FILENO) < 0)
		cli_die(c, "(stdin): %s", strerror(errno));
	close(p[0]);
	r.out = p[1];
	if ((errno = pthread_create(&t, NULL, replay_main, &r)) != 0)
		cli_die(c, "(stdin): cannot start a thread: %s", strerror(errno));
	pthread_detach(t);
	return got;
}

/* Recognise a file by its first bytes. */
static enum kind file_kind(struct cli *c, const char *path)
{
	unsigned char magic[RFB_FORMAT_SNIFF] = { 0 };
	struct stat st;
	ssize_t got;
	int fd;

	if (strcmp(path, "-") == 0) {
		got = sniff_stdin(c, magic, sizeof magic);
		goto classify;
	}
	if (stat(path, &st) < 0)
		cli_die(c, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return directory_kind(c, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		cli_die(c, "%s: cannot open: %s", path, strerror(errno));
	got = rfb_read_full(fd, magic, sizeof magic);
	close(fd);
	if (got < 0)
		cli_die(c, "%s: read failed: %s", path, strerror(errno));
classify:
	switch (rfb_format_detect(magic, got > 0 ? (size_t)got : 0)) {
	case RFB_FORMAT_INDEX: return KIND_INDEX;
	case RFB_FORMAT_EVICT: return KIND_EVICT;
	case RFB_FORMAT_STREAM: return KIND_STREAM;
	case RFB_FORMAT_PLAN: return KIND_PLAN;
	case RFB_FORMAT_UNKNOWN: break;
	}
	return KIND_UNKNOWN;
}

static void parse(struct cli *c, struct dump_opts *o,
		  struct dump_stream_opts *so, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "stats", no_argument, NULL, 'S' },
		{ "output", required_argument, NULL, 'o' },
		{ "index", required_argument, NULL, 'i' },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		{ "extract", required_argument, NULL, 'x' },
		{ "batch", required_argument, NULL, 'b' },
		{ "sheet", required_argument, NULL, OPT_SHEET },
		{ "columns", required_argument, NULL, OPT_COLUMNS },
		{ "quality", required_argument, NULL, OPT_QUALITY },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "So:i:x:b:" CLI_COMMON_SHORTOPTS,
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'S': o->stats = 1; break;
		case 'o': o->output = optarg; break;
		case 'i': o->index = optarg; break;
		case OPT_VERIFY: o->verify = 1; break;
		case 'x':
			o->extract = (long long)cli_parse_u64(c, "--extract", optarg,
							      0, UINT32_MAX - 1);
			break;
		case 'b': so->batch = optarg; break;
		case OPT_SHEET: so->sheet = optarg; break;
		case OPT_COLUMNS:
			so->columns = (int)cli_parse_u64(c, "--columns", optarg, 1,
							 65535);
			break;
		case OPT_QUALITY:
			so->quality = (int)cli_parse_u64(c, "--quality", optarg, 1, 100);
			break;
		default:
			if (!cli_common_option(c, opt, optarg))
				cli_usage_error(c, "unexpected option");
		}
	}
	cli_one_operand(c, argc, argv, "file");
}

/* --verify on a file that is not a cache: read it through (the readers
 * check every checksum, length and sequence rule and stop at the first
 * problem, naming it: exit 1), and say what was checked. */
static int verify_file(struct cli *c, const char *path, enum kind k,
		       struct dump_opts *o, struct dump_stream_opts *so,
		       FILE *out)
{
	static const char *const names[] = { "", "index", "schedule", "plan",
					      "cache", "batch stream" };
	FILE *sink = fopen("/dev/null", "w");
	int rc = 1;

	if (!sink)
		cli_die(c, "/dev/null: cannot open");
	o->verify = 0;
	switch (k) {
	case KIND_INDEX: rc = dump_index(c, path, o, sink); break;
	case KIND_EVICT: rc = dump_evict(c, path, o, sink); break;
	case KIND_PLAN: rc = dump_plan(c, path, o, sink); break;
	case KIND_STREAM: rc = dump_stream(c, path, o, so, sink); break;
	default: break;
	}
	fclose(sink);
	if (rc == 0)
		fprintf(out, "%s: %s verified: every checksum (where the format "
			"has them), length and sequence rule checked, no "
			"problems\n",
			strcmp(path, "-") ? path : "(stdin)", names[k]);
	cli_close_output(c, out, o->output);
	return rc;
}

int main(int argc, char **argv)
{
	struct cli c;
	struct dump_opts o = { .output = "-", .extract = -1 };
	struct dump_stream_opts so = { 0 };
	const char *path;
	enum kind k;
	FILE *out;
	int rc = 1;

	cli_init(&c, "refurb-dump", usage, help);
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--preview") || !strcmp(argv[i], "-P") ||
		    !strncmp(argv[i], "--preview=", 10))
			return dump_preview(&c, argc, argv);
	parse(&c, &o, &so, argc, argv);
	path = argv[optind];
	k = file_kind(&c, path);
	if (k == KIND_UNKNOWN)
		cli_die(&c, "%s: not a refurb file (unknown magic)",
			strcmp(path, "-") ? path : "(stdin)");
	out = cli_open_output(&c, o.output, 0, 0);
	if (o.verify && k != KIND_CACHE)
		return verify_file(&c, path, k, &o, &so, out);
	switch (k) {
	case KIND_INDEX: rc = dump_index(&c, path, &o, out); break;
	case KIND_EVICT: rc = dump_evict(&c, path, &o, out); break;
	case KIND_PLAN: rc = dump_plan(&c, path, &o, out); break;
	case KIND_CACHE: rc = dump_cache(&c, path, &o, out); break;
	case KIND_STREAM: rc = dump_stream(&c, path, &o, &so, out); break;
	case KIND_UNKNOWN: break;
	}
	cli_close_output(&c, out, o.output);
	return rc;
}

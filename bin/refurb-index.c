/*
 * refurb-index - build a dataset index from an ImageFolder tree, a list,
 * or WebDataset tar shards read in place.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "refurb/image.h"
#include "refurb/index.h"
#include "refurb/io.h"
#include "refurb/progress.h"
#include "refurb/scan.h"

static const char usage[] =
	"refurb-index [OPTIONS] -o INDEX DIR\n"
	"       refurb-index [OPTIONS] -o INDEX --list FILE\n"
	"       refurb-index [OPTIONS] -o INDEX SHARD.tar... | --shards PATTERN";

static const char help[] =
	"Index a dataset: every JPEG's label, byte size, pixel size and path.\n"
	"DIR is a torchvision ImageFolder tree (DIR/CLASS/.../IMAGE.jpg; labels\n"
	"equal ImageFolder's class_to_idx).  --list reads PATH<TAB>LABEL lines,\n"
	"or the TSV that 'refurb-dump INDEX' prints, from FILE ('-' = stdin).\n"
	"Arguments that are uncompressed tar files (by their header) are\n"
	"WebDataset shards, read in place: KEY.jpg members, labels from KEY.cls.\n"
	"\n"
	"  -o, --output FILE     write the index to FILE ('-' = stdout)\n"
	"  -l, --list FILE       index the images listed in FILE\n"
	"      --from-tsv FILE   same as --list (reads refurb-dump's TSV back)\n"
	"      --root DIR        base of relative paths in a list (default: the\n"
	"                        list's '# root' line, else the current directory)\n"
	"      --shards PATTERN  the shards PATTERN names, braces expanded as\n"
	"                        WebDataset does: 'train-{000000..000146}.tar'\n"
	"      --label FROM      shards: cls (KEY.cls, default), json:FIELD\n"
	"                        (KEY.json), dir (the member's first directory)\n"
	"      --classes FILE    shards: the class names, one a line in label\n"
	"                        order (default: numbers name themselves)\n"
	"      --max-pixels N    images with more pixels are bad files\n"
	"                        (default 100000000)\n"
	"      --strict          the first bad file is fatal (default: report it,\n"
	"                        leave it out, count it in the summary)\n"
	"  -M, --memory BYTES    memory for the index's records and paths before\n"
	"                        they go to temporary files, half as much for the\n"
	"                        files or members found (suffix K, M or G;\n"
	"                        default 256M, at least 16K)\n"
	"  -f, --force           write binary output to a terminal\n"
	CLI_COMMON_HELP
	"\nExample:\n"
	"  refurb-index -o train.idx data/train/\n"
	"  refurb-index -o train.idx --shards 'train-{000000..000146}.tar'\n"
	"\nExit status: 0 done (bad files, if any, were reported and left out),\n"
	"1 runtime error or --strict and a bad file, 2 usage error.\n"
	"See refurb-index(1), refurb-index(5).\n";

enum { OPT_ROOT = 0x2000, OPT_MAX_PIXELS, OPT_STRICT, OPT_SHARDS, OPT_LABEL,
       OPT_CLASSES };

#define DEFAULT_MEMORY ((size_t)256 << 20)

struct options {
	const char *output, *list, *root, *dir;
	uint64_t max_pixels;
	size_t memory;
	int strict, force;
	char **shards;             /* malloc'ed names */
	size_t shard_count;
	enum rfb_label_from label_from;
	const char *label_field, *classes;
};

static void on_bad(void *ctx, const char *path, const rfb_err *why)
{
	struct cli *c = ctx;

	(void)path;
	cli_warn_err(c, why);
}

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	cli_progress(ctx, done, total, "files");
}

static void add_shard(struct cli *c, struct options *o, char *name)
{
	char **nv = realloc(o->shards, (o->shard_count + 1) * sizeof *nv);

	if (!nv || !name)
		cli_die(c, "out of memory");
	o->shards = nv;
	nv[o->shard_count++] = name;
}

static void expand_shards(struct cli *c, struct options *o, const char *pattern)
{
	rfb_err err = { 0 };
	char **names;
	size_t n;

	if (rfb_shard_expand(pattern, &names, &n, &err))
		cli_usage_error(c, "--shards %s", err.msg);
	for (size_t i = 0; i < n; i++)
		add_shard(c, o, names[i]);
	free(names);
}

static void parse_label(struct cli *c, struct options *o, const char *arg)
{
	if (strcmp(arg, "cls") == 0)
		o->label_from = RFB_LABEL_CLS;
	else if (strcmp(arg, "dir") == 0)
		o->label_from = RFB_LABEL_DIR;
	else if (strncmp(arg, "json:", 5) == 0 && arg[5])
		o->label_from = RFB_LABEL_JSON, o->label_field = arg + 5;
	else
		cli_usage_error(c, "--label: '%s' is not cls, json:FIELD or dir",
				arg);
}

/* --memory BYTES[K|M|G], at least RFB_INDEX_MIN_MEMORY. */
static size_t parse_memory(const struct cli *c, const char *arg)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (end != arg && *end && !end[1])
		shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' ||
			*end == 'm' ? 20 : *end == 'G' || *end == 'g' ? 30 : -1;
	if (end == arg || *arg == '-' || *arg == '+' || errno || shift < 0 ||
	    (*end && !shift) || v > (SIZE_MAX >> shift))
		cli_usage_error(c, "--memory: '%s' is not a number of bytes "
				"(e.g. 256M)", arg);
	if ((v << shift) < RFB_INDEX_MIN_MEMORY)
		cli_usage_error(c, "--memory %s: an index needs at least %uK",
				arg, RFB_INDEX_MIN_MEMORY >> 10);
	return (size_t)(v << shift);
}

/* Where the builder's temporary files go: beside the output, or in
 * $TMPDIR (else /tmp) when the index goes to stdout. */
static char *temp_dir(const char *output)
{
	const char *env = getenv("TMPDIR"), *slash = strrchr(output, '/');

	if (strcmp(output, "-") == 0)
		return strdup(env && *env ? env : "/tmp");
	if (!slash)
		return strdup(".");
	if (slash == output)
		return strdup("/");
	return strndup(output, (size_t)(slash - output));
}

/* The positional arguments: one directory, or tar shards. */
static void classify_args(struct cli *c, struct options *o, int argc,
			  char **argv)
{
	for (int i = optind; i < argc; i++) {
		struct stat st;
		rfb_err err = { 0 };
		int rc;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			if (o->dir || o->shard_count)
				cli_usage_error(c, "give one dataset directory, or "
						"tar shards, not both or several");
			o->dir = argv[i];
			continue;
		}
		if (o->dir)
			cli_usage_error(c, "give one dataset directory, or tar "
					"shards, not both or several");
		if (stat(argv[i], &st) < 0)
			cli_die(c, "%s: cannot open %s: %s", argv[i],
				argc - optind == 1 ? "dataset directory"
				: "the shard", strerror(errno));
		if ((rc = rfb_shard_sniff(argv[i], &err)) < 0)
			cli_die_err(c, &err);
		if (rc == 0)
			cli_die(c, "%s: not a directory, nor a tar shard (an "
				"uncompressed tar file)", argv[i]);
		add_shard(c, o, strdup(argv[i]));
	}
}

static void parse(struct cli *c, struct options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "list", required_argument, NULL, 'l' },
		{ "from-tsv", required_argument, NULL, 'l' },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "max-pixels", required_argument, NULL, OPT_MAX_PIXELS },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ "shards", required_argument, NULL, OPT_SHARDS },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ "classes", required_argument, NULL, OPT_CLASSES },
		{ "force", no_argument, NULL, 'f' },
		{ "memory", required_argument, NULL, 'M' },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int opt;

	o->max_pixels = RFB_IMAGE_DEFAULT_MAX_PIXELS;
	o->memory = DEFAULT_MEMORY;
	while ((opt = getopt_long(argc, argv, "o:l:fM:" CLI_COMMON_SHORTOPTS,
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'o': o->output = optarg; break;
		case 'l': o->list = optarg; break;
		case 'f': o->force = 1; break;
		case 'M': o->memory = parse_memory(c, optarg); break;
		case OPT_ROOT: o->root = optarg; break;
		case OPT_STRICT: o->strict = 1; break;
		case OPT_SHARDS: expand_shards(c, o, optarg); break;
		case OPT_LABEL: parse_label(c, o, optarg); break;
		case OPT_CLASSES: o->classes = optarg; break;
		case OPT_MAX_PIXELS:
			o->max_pixels = cli_parse_u64(c, "--max-pixels", optarg, 1,
						      UINT64_MAX);
			break;
		default:
			if (!cli_common_option(c, opt, optarg))
				cli_usage_error(c, "unexpected option");
		}
	}
	if (o->list && (optind < argc || o->shard_count))
		cli_usage_error(c, "give either DIR, shards or --list FILE");
	if (!o->list && optind >= argc && !o->shard_count)
		cli_usage_error(c, "no dataset directory given");
	if (o->root && !o->list)
		cli_usage_error(c, "--root applies to --list only");
	if (!o->output)
		cli_usage_error(c, "no output: give -o INDEX (or -o - for stdout)");
	if (!o->list)
		classify_args(c, o, argc, argv);
	if (o->dir && o->shard_count)
		cli_usage_error(c, "give one dataset directory, or tar shards, not "
				"both or several");
	if (o->label_field == NULL && o->label_from == RFB_LABEL_JSON)
		cli_usage_error(c, "--label json needs a FIELD");
	if (!o->shard_count && (o->label_from != RFB_LABEL_CLS || o->classes))
		cli_usage_error(c, "--label and --classes apply to tar shards only");
}

static const char *cli_shards_text(size_t n)
{
	static char buf[48];

	snprintf(buf, sizeof buf, " from %zu shard%s", n, n == 1 ? "" : "s");
	return buf;
}

struct fill_index {
	const rfb_index_builder *b;
	const char *path;
};

static int fill_index(void *ctx, int fd, rfb_err *err)
{
	const struct fill_index *f = ctx;

	return rfb_index_builder_write(f->b, fd, f->path, err);
}

static void write_index(struct cli *c, const char *path,
			const rfb_index_builder *b, int force)
{
	struct fill_index f = { b, path };
	rfb_err err = { 0 };

	if (strcmp(path, "-") == 0) {
		cli_refuse_tty(c, STDOUT_FILENO, force);
		f.path = "(stdout)";
		if (rfb_index_builder_write(b, STDOUT_FILENO, f.path, &err))
			cli_die_err(c, &err);
		return;
	}
	if (rfb_file_replace_with(path, fill_index, &f, &err))
		cli_die_err(c, &err);
}

int main(int argc, char **argv)
{
	struct cli c;
	struct options o = { 0 };
	struct rfb_scan_opts so = { 0 };
	struct rfb_scan_stats st;
	rfb_index_builder *b = NULL;
	rfb_err err = { 0 };
	char *tmp;
	int rc;

	cli_init(&c, "refurb-index", usage, help);
	parse(&c, &o, argc, argv);
	if (strcmp(o.output, "-") == 0)
		cli_refuse_tty(&c, STDOUT_FILENO, o.force);
	so.max_pixels = o.max_pixels;
	so.threads = c.threads;
	so.strict = o.strict;
	so.root = o.root;
	so.on_bad = on_bad;
	so.on_progress = on_progress;
	so.ctx = &c;
	so.label_from = o.label_from;
	so.label_field = o.label_field;
	so.classes = o.classes;
	so.memory = o.memory;
	so.temp_dir = tmp = temp_dir(o.output);
	if (!tmp)
		cli_die(&c, "out of memory");
	rc = o.list ? rfb_scan_list(o.list, &so, &b, &st, &err)
	     : o.shard_count ? rfb_scan_shards(o.shards, o.shard_count, &so, &b,
					       &st, &err)
	     : rfb_scan_folder(o.dir, &so, &b, &st, &err);
	cli_progress_clear(&c);
	if (rc && o.strict && st.bad)
		cli_die(&c, "stopped at the first bad file (--strict)");
	if (rc)
		cli_die_err(&c, &err);
	write_index(&c, o.output, b, o.force);
	if (!c.quiet) {
		double secs = rfb_now() - c.start;
		const char *what = o.shard_count
			? (st.candidates == 1 ? "sample" : "samples")
			: (st.candidates == 1 ? "file" : "files");
		fprintf(stderr, "refurb-index: indexed %llu of %llu %s in %u "
			"class%s%s (%llu bad, left out), %.2f s, %.0f %s/s\n",
			(unsigned long long)st.indexed,
			(unsigned long long)st.candidates, what, st.classes,
			st.classes == 1 ? "" : "es",
			o.shard_count ? cli_shards_text(o.shard_count) : "",
			(unsigned long long)st.bad, secs,
			secs > 0 ? (double)st.candidates / secs : 0.0, what);
		if (st.empty_classes)
			fprintf(stderr, "refurb-index: %u %s no images%s%s (kept "
				"in the class table, so labels stay "
				"ImageFolder's)\n", st.empty_classes,
				st.empty_classes == 1 ? "class has" : "classes have",
				st.empty_names[0] ? ": " : "", st.empty_names);
	}
	free(tmp);
	rfb_index_builder_free(b);
	for (size_t i = 0; i < o.shard_count; i++)
		free(o.shards[i]);
	free(o.shards);
	return 0;
}

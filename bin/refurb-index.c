/*
 * refurb-index - build a dataset index from an ImageFolder tree or a list.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "refurb/image.h"
#include "refurb/index.h"
#include "refurb/io.h"
#include "refurb/progress.h"
#include "refurb/scan.h"

static const char usage[] =
	"refurb-index [OPTIONS] -o INDEX DIR\n"
	"       refurb-index [OPTIONS] -o INDEX --list FILE";

static const char help[] =
	"Index a dataset: every JPEG's label, byte size, pixel size and path.\n"
	"DIR is a torchvision ImageFolder tree (DIR/CLASS/.../IMAGE.jpg; labels\n"
	"equal ImageFolder's class_to_idx).  --list reads PATH<TAB>LABEL lines,\n"
	"or the TSV that 'refurb-dump INDEX' prints, from FILE ('-' = stdin).\n"
	"\n"
	"  -o, --output FILE     write the index to FILE ('-' = stdout)\n"
	"  -l, --list FILE       index the images listed in FILE\n"
	"      --from-tsv FILE   same as --list (reads refurb-dump's TSV back)\n"
	"      --root DIR        base of relative paths in a list (default: the\n"
	"                        list's '# root' line, else the current directory)\n"
	"      --max-pixels N    images with more pixels are bad files\n"
	"                        (default 100000000)\n"
	"      --strict          the first bad file is fatal (default: report it,\n"
	"                        leave it out, count it in the summary)\n"
	"  -f, --force           write binary output to a terminal\n"
	CLI_COMMON_HELP
	"\nExit status: 0 done (bad files, if any, were reported and left out),\n"
	"1 runtime error or --strict and a bad file, 2 usage error.\n"
	"See refurb-index(1), refurb-index(5).\n";

enum { OPT_ROOT = 0x2000, OPT_MAX_PIXELS, OPT_STRICT };

struct options {
	const char *output, *list, *root, *dir;
	uint64_t max_pixels;
	int strict, force;
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

static void parse(struct cli *c, struct options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "list", required_argument, NULL, 'l' },
		{ "from-tsv", required_argument, NULL, 'l' },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "max-pixels", required_argument, NULL, OPT_MAX_PIXELS },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ "force", no_argument, NULL, 'f' },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int opt;

	o->max_pixels = RFB_IMAGE_DEFAULT_MAX_PIXELS;
	while ((opt = getopt_long(argc, argv, "o:l:f" CLI_COMMON_SHORTOPTS,
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'o': o->output = optarg; break;
		case 'l': o->list = optarg; break;
		case 'f': o->force = 1; break;
		case OPT_ROOT: o->root = optarg; break;
		case OPT_STRICT: o->strict = 1; break;
		case OPT_MAX_PIXELS:
			o->max_pixels = cli_parse_u64(c, "--max-pixels", optarg, 1,
						      UINT64_MAX);
			break;
		default:
			if (!cli_common_option(c, opt, optarg))
				cli_usage_error(c, "unexpected option");
		}
	}
	if (o->list && optind < argc)
		cli_usage_error(c, "give either DIR or --list FILE, not both");
	if (!o->list && optind != argc - 1)
		cli_usage_error(c, optind >= argc ? "no dataset directory given"
				: "more than one dataset directory given");
	if (!o->list)
		o->dir = argv[optind];
	if (o->root && !o->list)
		cli_usage_error(c, "--root applies to --list only");
	if (!o->output)
		cli_usage_error(c, "no output: give -o INDEX (or -o - for stdout)");
}

static void write_index(struct cli *c, const char *path, const unsigned char *d,
			size_t len, int force)
{
	rfb_err err = { 0 };

	if (strcmp(path, "-") == 0) {
		cli_refuse_tty(c, STDOUT_FILENO, force);
		if (rfb_write_full(STDOUT_FILENO, d, len) < 0)
			cli_die(c, "(stdout): write failed: %s", strerror(errno));
		return;
	}
	if (rfb_file_replace(path, d, len, &err))
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
	unsigned char *data;
	size_t len;
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
	rc = o.list ? rfb_scan_list(o.list, &so, &b, &st, &err)
		    : rfb_scan_folder(o.dir, &so, &b, &st, &err);
	cli_progress_clear(&c);
	if (rc && o.strict && st.bad)
		cli_die(&c, "stopped at the first bad file (--strict)");
	if (rc)
		cli_die_err(&c, &err);
	if (rfb_index_builder_finish(b, &data, &len, &err))
		cli_die_err(&c, &err);
	write_index(&c, o.output, data, len, o.force);
	if (!c.quiet) {
		double secs = rfb_now() - c.start;
		fprintf(stderr, "refurb-index: indexed %llu of %llu file%s in %u "
			"class%s (%llu bad, left out), %.2f s, %.0f files/s\n",
			(unsigned long long)st.indexed,
			(unsigned long long)st.candidates,
			st.candidates == 1 ? "" : "s", st.classes,
			st.classes == 1 ? "" : "es",
			(unsigned long long)st.bad, secs,
			secs > 0 ? (double)st.candidates / secs : 0.0);
		if (st.empty_classes)
			fprintf(stderr, "refurb-index: %u %s no images (kept in "
				"the class table, so labels stay ImageFolder's)\n",
				st.empty_classes, st.empty_classes == 1 ?
				"class has" : "classes have");
	}
	free(data);
	rfb_index_builder_free(b);
	return 0;
}

/*
 * refurb-dump - print any refurb file as text, with summaries.
 * The kind of file is recognised by its magic; each kind has its part
 * (bin/dump_*.c, see dump.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dump.h"
#include "refurb/io.h"

static const char usage[] = "refurb-dump [OPTIONS] FILE";

static const char help[] =
	"Print a refurb file as text: an index (as TSV that refurb-index\n"
	"--from-tsv reads back).  FILE '-' is stdin.\n"
	"\n"
	"  -S, --stats        a summary instead of the listing\n"
	"  -o, --output FILE  write to FILE instead of stdout\n"
	CLI_COMMON_HELP
	"\nExit status: 0 ok, 1 unreadable or corrupt file, 2 usage error.\n"
	"See refurb-dump(1).\n";

enum kind { KIND_UNKNOWN, KIND_INDEX };

/* Recognise a file by its first bytes. */
static enum kind file_kind(struct cli *c, const char *path)
{
	unsigned char magic[8] = { 0 };
	struct stat st;
	ssize_t got;
	int fd;

	if (strcmp(path, "-") == 0)
		cli_die(c, "(stdin): give a file: refurb-dump needs to recognise "
			"it by its magic");
	if (stat(path, &st) < 0)
		cli_die(c, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		cli_die(c, "%s: is a directory, not a refurb file", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		cli_die(c, "%s: cannot open: %s", path, strerror(errno));
	got = rfb_read_full(fd, magic, sizeof magic);
	close(fd);
	if (got < 0)
		cli_die(c, "%s: read failed: %s", path, strerror(errno));
	if (got >= 7 && memcmp(magic, "RFBINDX", 7) == 0)
		return KIND_INDEX;
	return KIND_UNKNOWN;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "stats", no_argument, NULL, 'S' },
		{ "output", required_argument, NULL, 'o' },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cli c;
	struct dump_opts o = { .output = "-" };
	FILE *out;
	int opt, rc = 1;

	cli_init(&c, "refurb-dump", usage, help);
	while ((opt = getopt_long(argc, argv, "So:" CLI_COMMON_SHORTOPTS,
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'S': o.stats = 1; break;
		case 'o': o.output = optarg; break;
		default:
			if (!cli_common_option(&c, opt, optarg))
				cli_usage_error(&c, "unexpected option");
		}
	}
	if (optind != argc - 1)
		cli_usage_error(&c, optind >= argc ? "no file given"
				: "give one file");
	const char *path = argv[optind];
	enum kind k = file_kind(&c, path);
	if (k == KIND_UNKNOWN)
		cli_die(&c, "%s: not a refurb file (unknown magic)", path);
	out = cli_open_output(&c, o.output, 0, 0);
	if (k == KIND_INDEX)
		rc = dump_index(&c, path, &o, out);
	cli_close_output(&c, out, o.output);
	return rc;
}

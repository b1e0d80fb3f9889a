/*
 * refurb-evict - write the eviction schedule of one shard of an index:
 * which samples the shard has and in which epochs each is recomputed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "refurb/index.h"
#include "refurb/io.h"
#include "refurb/evict.h"

static const char usage[] = "refurb-evict [OPTIONS] INDEX";

static const char help[] =
	"Write the eviction schedule of the dataset in INDEX (or of one shard\n"
	"of it) to stdout: the shard's sample ids and each one's eviction\n"
	"phase, with r, the seed, the policy and the index's identity.\n"
	"\n"
	"  -r, --reuse R         reuse factor: each cached sample serves R uses\n"
	"                        (default 2; 1 = standard augmentation)\n"
	"  -s, --seed SEED       seed of the eviction permutation and of the\n"
	"                        shard partition (default 0)\n"
	"      --policy P        balanced (default): 1/R of the samples are\n"
	"                        evicted at the start of every epoch after the\n"
	"                        first; refcount: every sample expires after R\n"
	"                        uses, so epochs 0, R, 2R ... are all misses\n"
	"      --shard K/N       shard K of N (0 <= K < N, default 0/1): a fixed\n"
	"                        partition of the samples, the same for every\n"
	"                        epoch and every R (nodes must use one seed)\n"
	"  -o, --output FILE     write to FILE (replaced atomically) instead of\n"
	"                        stdout\n"
	"  -f, --force           write binary output to a terminal\n"
	CLI_COMMON_HELP
	"\nExample:\n"
	"  refurb-evict -r 3 --seed 7 train.idx > train.evict\n"
	"\nExit status: 0 ok, 1 unreadable index or write error, 2 usage error.\n"
	"See refurb-evict(1), refurb-evict(5).\n";

enum { OPT_POLICY = 0x2000, OPT_SHARD };

struct options {
	const char *index, *output;
	rfb_evict_params p;
	int force;
};

static void parse(struct cli *c, struct options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "reuse", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "shard", required_argument, NULL, OPT_SHARD },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "r:s:o:f" CLI_COMMON_SHORTOPTS,
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			o->p.reuse = (uint32_t)cli_parse_u64(c, "--reuse", optarg,
						1, RFB_EVICT_MAX_REUSE);
			break;
		case 's':
			o->p.seed = cli_parse_u64(c, "--seed", optarg, 0,
						  UINT64_MAX);
			break;
		case OPT_POLICY:
			o->p.policy = cli_parse_enum(c, "--policy", optarg,
						     rfb_evict_policy_names);
			break;
		case OPT_SHARD:
			cli_parse_shard(c, optarg, &o->p.shard_index,
					&o->p.shard_count);
			break;
		case 'o': o->output = optarg; break;
		case 'f': o->force = 1; break;
		default:
			if (!cli_common_option(c, opt, optarg))
				cli_usage_error(c, "unexpected option");
		}
	}
	o->index = cli_one_operand(c, argc, argv, "index");
}

static void write_schedule(struct cli *c, const char *path,
			   const unsigned char *d, size_t len)
{
	rfb_err err = { 0 };

	if (strcmp(path, "-") == 0) {
		if (rfb_write_full(STDOUT_FILENO, d, len) < 0)
			cli_die(c, "(stdout): write failed: %s", strerror(errno));
		return;
	}
	if (rfb_file_replace(path, d, len, &err))
		cli_die_err(c, &err);
}

static void report(const rfb_evict *s)
{
	const rfb_evict_params *p = rfb_evict_params_of(s);
	uint32_t n = rfb_evict_count(s);

	fprintf(stderr, "refurb-evict: shard %u/%u: %u of %u samples, r=%u %s, "
		"%u to %u misses per epoch after the first, schedule %016llx\n",
		p->shard_index, p->shard_count, n, p->total, p->reuse,
		rfb_evict_policy_name(p->policy),
		p->policy == RFB_EVICT_REFCOUNT ? 0 : n / p->reuse,
		p->policy == RFB_EVICT_REFCOUNT ? n
			: n / p->reuse + (n % p->reuse != 0),
		(unsigned long long)rfb_evict_identity(s));
}

int main(int argc, char **argv)
{
	struct cli c;
	struct options o = { .output = "-" };
	rfb_err err = { 0 };
	rfb_index *idx;
	rfb_evict *s;
	unsigned char *data;
	size_t len;

	o.p.reuse = 2;
	o.p.policy = RFB_EVICT_BALANCED;
	o.p.shard_count = 1;
	cli_init(&c, "refurb-evict", usage, help);
	parse(&c, &o, argc, argv);
	if (strcmp(o.output, "-") == 0)
		cli_refuse_tty(&c, STDOUT_FILENO, o.force);
	if (!(idx = rfb_index_open(o.index, &err)))
		cli_die_err(&c, &err);
	o.p.index_identity = rfb_index_identity(idx);
	o.p.total = rfb_index_count(idx);
	rfb_index_close(idx);
	if (o.p.total == 0)
		cli_die(&c, "%s: the index has no samples", o.index);
	if (o.p.shard_count > o.p.total)
		cli_usage_error(&c, "--shard %u/%u: %s has only %u samples "
				"(every shard needs one)", o.p.shard_index,
				o.p.shard_count, o.index, o.p.total);
	if (!(s = rfb_evict_build(&o.p, &err)) ||
	    rfb_evict_serialize(s, &data, &len, &err) < 0)
		cli_die(&c, "%s: %s", o.index, err.msg);
	write_schedule(&c, o.output, data, len);
	if (!c.quiet)
		report(s);
	free(data);
	rfb_evict_free(s);
	return 0;
}

/*
 * refurb-plan - write the plan stream of a schedule: one line per
 * mini-batch, each sample marked hit or miss; or, with --diversity, the
 * expected number of unique samples of Theorem 1.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "refurb/costs.h"
#include "refurb/index.h"
#include "refurb/plan.h"
#include "refurb/evict.h"

static const char usage[] =
	"refurb-plan [OPTIONS] SCHEDULE\n"
	"       refurb-plan --diversity -A N -F N -r R -k EPOCHS";

static const char help[] =
	"Write the plan of SCHEDULE (from refurb-evict; '-' = stdin) to stdout:\n"
	"a header line, then one line per mini-batch with each sample marked\n"
	"hit or miss, and a summary line after each epoch (refurb-plan(5)).\n"
	"\n"
	"  -b, --batch-size B    samples per mini-batch (default 256)\n"
	"  -e, --epochs A-B      plan epochs A to B, or only A (default 0); the\n"
	"                        plan of 5-9 is exactly the tail of that of 0-9\n"
	"  -s, --seed SEED       seed of the shuffles (default: the schedule's)\n"
	"      --shuffle MODE    cache-aware (default): misses and hits shuffled\n"
	"                        and spread evenly, every full batch has the same\n"
	"                        number of misses +-1; random: one plain shuffle;\n"
	"                        none: schedule order (for debugging)\n"
	"      --balance MODE    none (default); pixels: every batch gets the\n"
	"                        same number of miss pixels (needs --index);\n"
	"                        cost=FILE: the same predicted miss CPU time, from\n"
	"                        the cost file of refurb-partial --costs (needs\n"
	"                        --index; the plan depends on FILE's content)\n"
	"      --start E:S       resume: the plan from step S of epoch E on (the\n"
	"                        stream's epoch and step; E within --epochs),\n"
	"                        given with the same other options: the chain's\n"
	"                        batches are those of the whole plan from there\n"
	"      --drop-last       mark the incomplete last batch of each epoch as\n"
	"                        dropped (D): cached, not trained on\n"
	"  -i, --index FILE      the index of the schedule: checked, and read for\n"
	"                        --balance pixels\n"
	"      --shard K/N       fail unless SCHEDULE is shard K of N\n"
	"      --even MODE       the same samples and batches per epoch in every\n"
	"                        shard of N (DistributedDataParallel): pad\n"
	"                        repeats a cached sample in the smaller shards,\n"
	"                        drop leaves one out of the larger ones, a\n"
	"                        different one every epoch; none (default)\n"
	"  -o, --output FILE     write to FILE instead of stdout\n"
	"\n"
	"Theorem 1 (expected unique samples E(U) over k epochs, and E(U)/E(U*),\n"
	"E(U*) being standard augmentation, r = 1):\n"
	"      --diversity       print E(U), E(U*) and their ratio, and exit\n"
	"  -A, --augmentations N        |A|, distinct full augmentations\n"
	"  -F, --final-augmentations N  |A_F|, distinct final augmentations\n"
	"  -r, --reuse R                reuse factor\n"
	"  -k, --epoch-count K          number of epochs\n"
	CLI_COMMON_HELP
	"\nExample:\n"
	"  refurb-plan -b 256 --epochs 0-89 --seed 7 train.evict | refurb-partial ...\n"
	"  refurb-plan -b 256 -e 0-89 -s 7 --start 40:117 train.evict | ...  # resume\n"
	"\nExit status: 0 ok, 1 bad schedule or index, write error, 2 usage\n"
	"error.  See refurb-plan(1), refurb-plan(5).\n";

enum { OPT_SHUFFLE = 0x2000, OPT_BALANCE, OPT_DROP_LAST, OPT_SHARD,
       OPT_DIVERSITY, OPT_EVEN, OPT_START };

struct options {
	const char *schedule, *index, *output;
	const char *costs;  /* --balance cost=FILE */
	rfb_plan_params p;
	int seed_given, shard_given, diversity, start_given;
	uint32_t start_epoch, start_step;  /* --start E:S */
	uint32_t shard_index, shard_count;
	double aug, final, reuse, epochs; /* --diversity; 0 = not given */
};

/* A real number >= 1 (1e30 is fine) or a usage error. */
static double parse_real(const struct cli *c, const char *opt, const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || *end || errno == ERANGE || !isfinite(v) || v < 1)
		cli_usage_error(c, "%s: '%s' is not a number >= 1", opt, arg);
	return v;
}

/* --start E:S, two numbers. */
static void parse_start(const struct cli *c, struct options *o, const char *arg)
{
	char *end;
	const char *step;
	unsigned long long e, s;

	errno = 0;
	e = strtoull(arg, &end, 10);
	if (end == arg || *end != ':' || *arg == '-' || *arg == '+' ||
	    end[1] == '-' || end[1] == '+' || end[1] == ' ')
		cli_usage_error(c, "--start: '%s' is not EPOCH:STEP", arg);
	step = end + 1;
	s = strtoull(step, &end, 10);
	if (*end || end == step || errno || e > UINT32_MAX || s > UINT32_MAX)
		cli_usage_error(c, "--start: '%s' is not EPOCH:STEP", arg);
	o->start_epoch = (uint32_t)e;
	o->start_step = (uint32_t)s;
	o->start_given = 1;
}

static void parse_option(struct cli *c, struct options *o, int opt)
{
	switch (opt) {
	case 'b':
		o->p.batch_size = (uint32_t)cli_parse_u64(c, "--batch-size",
					optarg, 1, RFB_PLAN_MAX_BATCH);
		break;
	case 'e':
		cli_parse_range(c, "--epochs", optarg, &o->p.first_epoch,
				&o->p.last_epoch);
		break;
	case 's':
		o->p.seed = cli_parse_u64(c, "--seed", optarg, 0, UINT64_MAX);
		o->seed_given = 1;
		break;
	case OPT_SHUFFLE:
		o->p.shuffle = cli_parse_enum(c, "--shuffle", optarg,
					      rfb_plan_shuffle_names);
		break;
	case OPT_BALANCE:
		if (!strncmp(optarg, "cost=", 5) && optarg[5]) {
			o->p.balance = RFB_PLAN_BALANCE_COST;
			o->costs = optarg + 5;
		} else if ((o->p.balance = rfb_plan_balance_parse(optarg)) < 0 ||
			   o->p.balance == RFB_PLAN_BALANCE_COST) {
			cli_usage_error(c, "--balance: '%s' is not none, pixels "
					"or cost=FILE", optarg);
		}
		break;
	case OPT_DROP_LAST: o->p.drop_last = 1; break;
	case 'i': o->index = optarg; break;
	case 'o': o->output = optarg; break;
	case OPT_SHARD:
		cli_parse_shard(c, optarg, &o->shard_index, &o->shard_count);
		o->shard_given = 1;
		break;
	case OPT_EVEN:
		o->p.even = cli_parse_enum(c, "--even", optarg,
					   rfb_plan_even_names);
		break;
	case OPT_DIVERSITY: o->diversity = 1; break;
	case OPT_START: parse_start(c, o, optarg); break;
	case 'A': o->aug = parse_real(c, "--augmentations", optarg); break;
	case 'F': o->final = parse_real(c, "--final-augmentations", optarg);
		break;
	case 'r': o->reuse = parse_real(c, "--reuse", optarg); break;
	case 'k': o->epochs = parse_real(c, "--epoch-count", optarg); break;
	default:
		if (!cli_common_option(c, opt, optarg))
			cli_usage_error(c, "unexpected option");
	}
}

static void check_diversity_args(const struct cli *c, const struct options *o,
				 int argc)
{
	if (!o->aug || !o->final || !o->reuse || !o->epochs)
		cli_usage_error(c, "--diversity needs -A, -F, -r and -k");
	if (o->final > o->aug)
		cli_usage_error(c, "|A_F| (-F) cannot exceed |A| (-A): the final "
				"part is one factor of the full augmentation");
	if (optind != argc)
		cli_usage_error(c, "--diversity takes no schedule");
}

static void parse(struct cli *c, struct options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "batch-size", required_argument, NULL, 'b' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "seed", required_argument, NULL, 's' },
		{ "shuffle", required_argument, NULL, OPT_SHUFFLE },
		{ "balance", required_argument, NULL, OPT_BALANCE },
		{ "drop-last", no_argument, NULL, OPT_DROP_LAST },
		{ "index", required_argument, NULL, 'i' },
		{ "shard", required_argument, NULL, OPT_SHARD },
		{ "even", required_argument, NULL, OPT_EVEN },
		{ "output", required_argument, NULL, 'o' },
		{ "diversity", no_argument, NULL, OPT_DIVERSITY },
		{ "start", required_argument, NULL, OPT_START },
		{ "augmentations", required_argument, NULL, 'A' },
		{ "final-augmentations", required_argument, NULL, 'F' },
		{ "reuse", required_argument, NULL, 'r' },
		{ "epoch-count", required_argument, NULL, 'k' },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "b:e:s:i:o:A:F:r:k:"
				  CLI_COMMON_SHORTOPTS, longopts, NULL)) != -1)
		parse_option(c, o, opt);
	if (o->diversity) {
		check_diversity_args(c, o, argc);
		return;
	}
	if (o->aug || o->final || o->reuse || o->epochs)
		cli_usage_error(c, "-A, -F, -r and -k go with --diversity");
	o->schedule = cli_one_operand(c, argc, argv, "schedule");
	if (o->start_given) {
		if (o->start_epoch < o->p.first_epoch ||
		    o->start_epoch > o->p.last_epoch)
			cli_usage_error(c, "--start %u:%u: epoch %u is not in "
					"--epochs %u-%u", o->start_epoch,
					o->start_step, o->start_epoch,
					o->p.first_epoch, o->p.last_epoch);
		o->p.first_epoch = o->start_epoch;
		o->p.first_step = o->start_step;
	}
	if (o->p.balance != RFB_PLAN_BALANCE_NONE && !o->index)
		cli_usage_error(c, "--balance %s needs the index (-i FILE)",
				rfb_plan_balance_name(o->p.balance));
	if (o->p.balance != RFB_PLAN_BALANCE_NONE &&
	    o->p.shuffle != RFB_PLAN_CACHE_AWARE)
		cli_usage_error(c, "--balance %s works with --shuffle "
				"cache-aware only",
				rfb_plan_balance_name(o->p.balance));
}

static int print_diversity(struct cli *c, const struct options *o)
{
	double u = rfb_evict_diversity(o->aug, o->final, o->reuse, o->epochs);
	double star = rfb_evict_diversity(o->aug, o->final, 1, o->epochs);

	if (isnan(u) || isnan(star))
		cli_usage_error(c, "no E(U) for these arguments");
	printf("|A|\t%.10g\n|A_F|\t%.10g\nr\t%.10g\nepochs\t%.10g\n"
	       "E(U)\t%.10g\nE(U*)\t%.10g\nE(U)/E(U*)\t%.10g\n",
	       o->aug, o->final, o->reuse, o->epochs, u, star, u / star);
	cli_close_output(c, stdout, "-");
	return 0;
}

static uint64_t index_pixels(const void *idx, uint32_t id)
{
	return rfb_index_pixels(idx, id);
}

struct cost_ctx {
	const rfb_cost_model *m;
	uint64_t seed;
};

static double miss_cost(const void *ctx, uint32_t id, uint32_t epoch)
{
	const struct cost_ctx *cc = ctx;

	return rfb_cost_model_predict(cc->m, id, epoch, cc->seed);
}

/* --balance cost=FILE: the model fitted on FILE, which must have been
 * made for the schedule's index, and FILE's identity in *identity (the
 * plan header's costs=). */
static rfb_cost_model *load_costs(struct cli *c, const struct options *o,
				  const rfb_index *idx, uint64_t *identity)
{
	rfb_err err = { 0 };
	rfb_costs *costs;
	rfb_cost_model *m;

	if (!(costs = rfb_costs_open(o->costs, &err)))
		cli_die_err(c, &err);
	if (!(m = rfb_cost_model_fit(costs, idx, &err))) {
		if (err.code == RFB_EMISMATCH)
			cli_die(c, "%s: cost file made for another index than %s",
				o->costs, o->index);
		cli_die(c, "%s: %s", o->costs, err.msg);
	}
	*identity = rfb_costs_identity(costs);
	rfb_costs_free(costs);
	return m;
}

/* Check the schedule against --shard and the index; the pixel table for
 * --balance pixels (NULL otherwise), the cost model and the cost file's
 * identity for --balance cost. */
static uint32_t *check_inputs(struct cli *c, const struct options *o,
			      const rfb_evict *s, rfb_cost_model **model,
			      uint64_t *cost_identity)
{
	const rfb_evict_params *sp = rfb_evict_params_of(s);
	rfb_err err = { 0 };
	uint32_t *pixels = NULL;
	rfb_index *idx;

	if (o->shard_given && (sp->shard_index != o->shard_index ||
			       sp->shard_count != o->shard_count))
		cli_die(c, "%s: schedule of shard %u/%u, not %u/%u", o->schedule,
			sp->shard_index, sp->shard_count, o->shard_index,
			o->shard_count);
	if (!o->index)
		return NULL;
	if (!(idx = rfb_index_open(o->index, &err)))
		cli_die_err(c, &err);
	if (rfb_evict_check_index(s, rfb_index_identity(idx),
				  rfb_index_count(idx), o->schedule, &err) < 0)
		cli_die(c, "%s: %s; give the index it was made from, not %s",
			o->schedule, err.msg, o->index);
	if (o->p.balance == RFB_PLAN_BALANCE_PIXELS &&
	    !(pixels = rfb_plan_pixel_table(s, index_pixels, idx)))
		cli_die(c, "out of memory");
	if (o->p.balance == RFB_PLAN_BALANCE_COST)
		*model = load_costs(c, o, idx, cost_identity);
	rfb_index_close(idx);
	return pixels;
}

static void write_plan(struct cli *c, rfb_plan *pl, FILE *out)
{
	rfb_plan_header h;
	rfb_plan_item it;
	char head[1024], *line;
	uint64_t done = 0, total;

	rfb_plan_header_of(pl, &h);
	total = (uint64_t)(h.last_epoch - h.first_epoch + 1) * h.batches;
	if (!(line = malloc(rfb_plan_batch_text_max(h.batch_size))))
		cli_die(c, "out of memory");
	if (rfb_plan_format_header(head, sizeof head, &h) >= sizeof head)
		cli_die(c, "plan header longer than %zu bytes", sizeof head);
	fputs(head, out);
	while (rfb_plan_next(pl, &it) > 0 && !ferror(out)) {
		size_t len;
		if (it.type == RFB_PLAN_LINE_BATCH) {
			len = rfb_plan_format_batch(line, &it.batch);
			cli_progress(c, ++done, total, "batches");
		} else {
			len = rfb_plan_format_epoch_end(line, 128, &it.epoch);
		}
		fwrite(line, 1, len, out);
	}
	cli_progress_clear(c);
	free(line);
}

int main(int argc, char **argv)
{
	struct cli c;
	struct options o = { .output = "-" };
	rfb_err err = { 0 };
	rfb_evict *s;
	rfb_plan *pl;
	uint32_t *pixels;
	rfb_cost_model *model = NULL;
	struct cost_ctx cc;
	FILE *out;

	o.p.batch_size = 256;
	o.p.shuffle = RFB_PLAN_CACHE_AWARE;
	cli_init(&c, "refurb-plan", usage, help);
	parse(&c, &o, argc, argv);
	if (o.diversity)
		return print_diversity(&c, &o);
	if (!(s = rfb_evict_open(o.schedule, &err)))
		cli_die_err(&c, &err);
	if (!o.seed_given)
		o.p.seed = rfb_evict_params_of(s)->seed;
	pixels = check_inputs(&c, &o, s, &model, &o.p.cost_identity);
	cc.m = model;
	cc.seed = o.p.seed;
	o.p.miss_cost = miss_cost;
	o.p.cost_ctx = &cc;
	if (!(pl = rfb_plan_new(s, &o.p, pixels, &err)))
		cli_die(&c, "%s: %s", o.schedule, err.msg);
	free(pixels);
	out = cli_open_output(&c, o.output, 0, 0);
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	write_plan(&c, pl, out);
	cli_close_output(&c, out, o.output);
	rfb_plan_free(pl);
	rfb_cost_model_free(model);
	rfb_evict_free(s);
	return 0;
}

/*
 * refurb-advise - choose r and the split policy from measurements: time
 * every layer of a full pipeline on a sample of the index, predict every
 * (split, r)'s images per CPU-second and unique fraction, recommend.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "refurb/advise.h"
#include "refurb/pipeline.h"

static const char usage[] = "refurb-advise [OPTIONS] -p FULLSPEC INDEX\n"
	"       refurb-advise [OPTIONS] -p FULLSPEC --size WxH";

static const char help[] =
	"Time every layer of the full augmentation pipeline FULLSPEC (decode\n"
	"included) on a sample of INDEX, predict for every split point (1 to L\n"
	"final layers) and every r in 1..R the images per CPU-second of the\n"
	"whole chain, the expected fraction of unique samples (Theorem 1) and,\n"
	"with --views, how often two views of a sample are identical; print the\n"
	"best of them as a short table (--tsv: every row, the measured costs).\n"
	"\n"
	"  -p, --pipeline SPEC   the whole pipeline, partial and final parts in\n"
	"                        order (e.g. resize=256,randaug=n=2:m=9,crop=224,flip)\n"
	"  -n, --sample K        images to time (default 200), drawn with --seed\n"
	"      --repeat N        runs per image and split, median taken (default 3)\n"
	"  -s, --seed SEED       draws the sample and the augmentations (default 0)\n"
	"  -R, --max-r R         reuse factors 1..R (default 6; never above -e)\n"
	"  -e, --epochs E        epochs of training (default 90)\n"
	"      --views K         views per sample (refurb-final --views K, default\n"
	"                        1): the final part runs K times per sample\n"
	"      --max-view-collision P  with --views: rule out the splits whose\n"
	"                        views are identical with probability above P\n"
	"                        (default 0.01)\n"
	"      --shared-draws    with --views: keep the splits whose partial part\n"
	"                        draws (a crop, a jitter), whose views would share\n"
	"                        its draws (ruled out by default)\n"
	"      --tsv             every (split, r) as TSV, then after '#' the\n"
	"                        layers, their costs with spread, the splits\n"
	"      --size WxH        no INDEX, no timing: the unique fractions and\n"
	"                        view collisions for images of W x H pixels\n"
	"      --rates MODE      steady (default): rates once every record is\n"
	"                        reused r times; epochs: means over the E epochs\n"
	"      --rate IMG/S      the trainer's consumption rate: recommend the most\n"
	"                        diverse configuration that sustains it\n"
	"      --cores N         CPUs for the chain (default: online CPUs)\n"
	"      --codec CODEC     the cache's codec: raw (default), zstd[:LEVEL],\n"
	"                        jpeg[:QUALITY]\n"
	"      --root DIR        read the images under DIR instead of the\n"
	"                        index's root\n"
	"      --tmp-dir DIR     where the timed cache record is written\n"
	"                        (default $TMPDIR or /tmp: put it on the cache's disk)\n"
	"  -o, --output FILE     write to FILE instead of stdout\n"
	CLI_COMMON_HELP
	"\nWithout --rate the table shows the rows no other row beats in both\n"
	"speed and diversity ('# pareto' in the TSV).  With --views K > 1, the\n"
	"splits whose views would be identical too often, or would share the\n"
	"draws of a cached layer, are ruled out and named.  -j threads time\n"
	"images at once (default: --cores, at most the online CPUs), as the\n"
	"chain's workers run at once.\n"
	"\nExample:\n"
	"  refurb-advise -p 'resize=256,randaug=n=2:m=9,crop=224,flip' --rate 2500 \\\n"
	"    --cores 2 train.idx\n"
	"  refurb-advise --views 2 -e 200 -p \"$(python3 -m refurb_stream convert \\\n"
	"    'T.Compose([T.RandomResizedCrop(224), ...])')\" train.idx\n"
	"\nExit status: 0 ok, 1 bad index or images, write error, 2 usage error.\n"
	"See refurb-advise(1).\n";

enum { OPT_REPEAT = 0x2000, OPT_RATES, OPT_RATE, OPT_CORES, OPT_CODEC,
       OPT_ROOT, OPT_TMP_DIR, OPT_VIEWS, OPT_MAX_COLLISION, OPT_TSV,
       OPT_SIZE, OPT_SHARED_DRAWS };

struct options {
	struct rfb_advise_opts a;
	struct rfb_advise_target t;
	const char *output;
	int max_r;
	double rate;      /* 0: not given */
	int cores_given;
	int threads_given;
	int tsv;
	int width, height;  /* --size: the model alone, 0: measure */
};

/* A real number > 0 or a usage error. */
static double parse_positive(const struct cli *c, const char *opt,
			     const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || *end || errno == ERANGE || !isfinite(v) || v <= 0)
		cli_usage_error(c, "%s: '%s' is not a number > 0", opt, arg);
	return v;
}

/* --size WxH: two whole numbers 1..65535 or a usage error. */
static void parse_size(const struct cli *c, struct options *o, const char *arg)
{
	char *end;
	long w, h;

	errno = 0;
	w = strtol(arg, &end, 10);
	if (end == arg || *end != 'x' || *arg == '-' || *arg == '+')
		cli_usage_error(c, "--size: '%s' is not WxH (e.g. 500x375)", arg);
	h = strtol(end + 1, &end, 10);
	if (*end || end[-1] == 'x' || errno || w < 1 || h < 1 || w > 65535 ||
	    h > 65535)
		cli_usage_error(c, "--size: '%s' is not WxH (e.g. 500x375; 1 to "
				"65535 each)", arg);
	o->width = (int)w;
	o->height = (int)h;
}

static void parse_option(struct cli *c, struct options *o, int opt)
{
	rfb_err err = { 0 };

	switch (opt) {
	case 'p':
		/* not a partial and a final part: the whole pipeline, once */
		if (o->a.spec)
			cli_usage_error(c, "-p given twice ('%s', then '%s'): "
					"give the whole pipeline once, the partial "
					"and the final part joined by ',' ('%s,%s'): "
					"refurb-advise splits it itself",
					o->a.spec, optarg, o->a.spec, optarg);
		o->a.spec = optarg;
		break;
	case 'n':
		o->a.sample = (uint32_t)cli_parse_u64(c, "--sample", optarg, 1,
						      1000000);
		break;
	case OPT_REPEAT:
		o->a.repeat = (int)cli_parse_u64(c, "--repeat", optarg, 1, 99);
		break;
	case 's': o->a.seed = cli_parse_u64(c, "--seed", optarg, 0, UINT64_MAX);
		break;
	case 'R': o->max_r = (int)cli_parse_u64(c, "--max-r", optarg, 1, 100);
		break;
	case 'e':
		o->t.epochs = (double)cli_parse_u64(c, "--epochs", optarg, 1,
						    1000000);
		break;
	case OPT_RATES:
		if (strcmp(optarg, "steady") && strcmp(optarg, "epochs"))
			cli_usage_error(c, "--rates: '%s' is not steady or epochs",
					optarg);
		o->t.steady = !strcmp(optarg, "steady");
		break;
	case OPT_RATE: o->rate = parse_positive(c, "--rate", optarg); break;
	case OPT_CORES:
		o->t.cores = parse_positive(c, "--cores", optarg);
		o->cores_given = 1;
		break;
	case OPT_CODEC:
		if (rfb_codec_parse(optarg, &o->a.codec, &err))
			cli_usage_error(c, "--codec: %s", err.msg);
		break;
	case OPT_VIEWS:
		o->t.views = (int)cli_parse_u64(c, "--views", optarg, 1, 64);
		break;
	case OPT_MAX_COLLISION:
		o->t.max_collision = parse_positive(c, "--max-view-collision", optarg);
		if (o->t.max_collision > 1)
			cli_usage_error(c, "--max-view-collision: '%s' is a probability: "
					"give 0.01 for 1%%", optarg);
		break;
	case OPT_TSV: o->tsv = 1; break;
	case OPT_SHARED_DRAWS: o->t.shared_draws = 1; break;
	case OPT_SIZE: parse_size(c, o, optarg); break;
	case OPT_ROOT: o->a.root = optarg; break;
	case OPT_TMP_DIR: o->a.tmp_dir = optarg; break;
	case 'o': o->output = optarg; break;
	case 'j':
		o->threads_given = 1;
		cli_common_option(c, opt, optarg);
		break;
	default:
		if (!cli_common_option(c, opt, optarg))
			cli_usage_error(c, "unexpected option");
	}
}

/* A spec that cannot be split and batched is a usage error. */
static void check_spec(const struct cli *c, const char *spec)
{
	rfb_pipeline *p = NULL;
	struct rfb_pipe_shape shape;
	rfb_err err = { 0 };

	if (rfb_pipeline_parse(spec, &p, &err))
		cli_usage_error(c, "%s", err.msg);
	if (rfb_pipeline_layers(p) < 1)
		cli_usage_error(c, "the pipeline has no layer to split");
	if (rfb_pipeline_fixed_shape(p, 3, &shape, &err))
		cli_usage_error(c, "%s", err.msg);
	rfb_pipeline_free(p);
}

static void parse(struct cli *c, struct options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pipeline", required_argument, NULL, 'p' },
		{ "sample", required_argument, NULL, 'n' },
		{ "repeat", required_argument, NULL, OPT_REPEAT },
		{ "seed", required_argument, NULL, 's' },
		{ "max-r", required_argument, NULL, 'R' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "rates", required_argument, NULL, OPT_RATES },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "cores", required_argument, NULL, OPT_CORES },
		{ "codec", required_argument, NULL, OPT_CODEC },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "tmp-dir", required_argument, NULL, OPT_TMP_DIR },
		{ "views", required_argument, NULL, OPT_VIEWS },
		{ "max-view-collision", required_argument, NULL, OPT_MAX_COLLISION },
		{ "shared-draws", no_argument, NULL, OPT_SHARED_DRAWS },
		{ "tsv", no_argument, NULL, OPT_TSV },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "output", required_argument, NULL, 'o' },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "p:n:s:R:e:o:"
				  CLI_COMMON_SHORTOPTS, longopts, NULL)) != -1)
		parse_option(c, o, opt);
	if (!o->a.spec)
		cli_usage_error(c, "the full pipeline is missing (-p SPEC)");
	if (o->width) {
		if (o->rate)
			cli_usage_error(c, "--rate needs the timing: give an index "
					"instead of --size");
		if (optind < argc)
			cli_usage_error(c, "--size times nothing: give it without "
					"an index ('%s')", argv[optind]);
	} else {
		o->a.index_path = cli_one_operand(c, argc, argv, "index");
	}
	check_spec(c, o->a.spec);
}

static void on_bad(void *ctx, uint32_t sample, const rfb_err *why)
{
	char text[1200];

	cli_warn(ctx, "%s (sample %u left out of the timing)",
		 rfb_err_text(why, text, sizeof text), sample);
}

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	cli_progress(ctx, done, total, "images");
}

static void print_row(FILE *out, const rfb_advice *a,
		      const struct rfb_advise_row *r)
{
	const struct rfb_advise_split *s = &a->split[r->split];

	fprintf(out, "%d\t%s\t%s\t%d\t", r->final_layers, s->partial_spec,
		s->final_spec, r->reuse);
	if (a->measured) /* --size times nothing */
		fprintf(out, "%.1f\t%.1f\t", r->img_per_cpu_s, r->img_per_s);
	else
		fprintf(out, "-\t-\t");
	fprintf(out, "%.4f\t%.0f\t%.4g\n", r->unique_fraction, r->cache_bytes,
		r->view_collision);
}

/* Layers first .. last by name, joined by sep, into buf; with short,
 * gates left out and a gated layer followed by how often it runs
 * ("colorjitter(0.8)"). */
static const char *layer_names(const rfb_advice *a, int first, int last,
			       const char *sep, int short_names, char *buf,
			       size_t n)
{
	size_t at = 0;

	buf[0] = 0;
	for (int j = first; j <= last && at < n; j++) {
		const char *name = j < 0 ? "decode" : a->layer[j].name;
		if (short_names && (!strcmp(name, "apply") || !strcmp(name, "choice") ||
				    !strcmp(name, "order")))
			continue;
		at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? sep : "", name);
		if (short_names && j >= 0 && a->layer[j].runs < 1 && at < n)
			at += (size_t)snprintf(buf + at, n - at, "(%.3g)",
					       a->layer[j].runs);
	}
	return buf;
}

/* The final layers of row r, short names, into buf. */
static const char *final_names(const rfb_advice *a, const struct rfb_advise_row *r,
			       char *buf, size_t n)
{
	return layer_names(a, a->layers - r->final_layers, a->layers - 1, ",", 1,
			   buf, n);
}

/* One column of layer costs (partial: the decode, at -1, and the layers
 * that can be partial; final: every layer), merged where within noise. */
static void print_cost_column(FILE *out, const rfb_advice *a, int partial)
{
	int L = a->layers, first = partial ? -1 : 0, n = 0, groups;
	double cost[RFB_PIPELINE_MAX_LAYERS + 1], spread[RFB_PIPELINE_MAX_LAYERS + 1];
	struct rfb_advise_cost g[RFB_PIPELINE_MAX_LAYERS + 1];
	char names[2048];

	if (partial) {
		cost[n] = a->decode_s;
		spread[n++] = a->decode_err;
	}
	for (int j = 0; j < L; j++) {
		const struct rfb_advise_layer *l = &a->layer[j];
		if (partial && isnan(l->partial_s))
			break;
		cost[n] = partial ? l->partial_s : l->final_s;
		spread[n++] = partial ? l->partial_err : l->final_err;
	}
	groups = rfb_advise_merge(cost, spread, first, n, g);
	for (int i = 0; i < groups; i++) {
		fprintf(out, "# cost\t%s\t", partial ? "partial" : "final");
		if (g[i].first == g[i].last)
			fprintf(out, "%d", g[i].first + 1);
		else
			fprintf(out, "%d-%d", g[i].first + 1, g[i].last + 1);
		fprintf(out, "\t%s\t%.3f\t%.3f\n",
			layer_names(a, g[i].first, g[i].last, "+", 0, names, sizeof names),
			g[i].cost_s * 1e3, g[i].spread_s * 1e3);
	}
}

static void print_layers(FILE *out, const rfb_advice *a)
{
	fprintf(out, "# layer\tname\tinput\tchoices\truns\tcollision\n");
	fprintf(out, "# 0\tdecode\t-\t1\t1\t1\n");
	for (int j = 0; j < a->layers; j++) {
		const struct rfb_advise_layer *l = &a->layer[j];
		fprintf(out, "# %d\t%s\t%dx%d\t%.6g\t%.6g\t%.6g\n", j + 1, l->name,
			l->in_width, l->in_height, l->choices, l->runs,
			l->collision);
	}
}

static void print_costs(FILE *out, const rfb_advice *a, const struct options *o)
{
	char codec[32];

	if (!a->measured) {
		fprintf(out, "# not timed: images of %dx%d (--size); unique fraction "
			"after %g epochs; %d view%s per sample; |A| = %.4g\n",
			o->width, o->height, o->t.epochs, o->t.views,
			o->t.views > 1 ? "s" : "", a->choices);
		print_layers(out, a);
		return;
	}
	fprintf(out, "# measured: %u images of %u (%u left out), median of %d "
		"runs each, %d threads, seed %llu, codec %s; thread CPU ms per "
		"image\n", a->measured, a->images, a->failed, o->a.repeat,
		o->a.threads,
		(unsigned long long)o->a.seed,
		rfb_codec_text(&o->a.codec, codec, sizeof codec));
	fprintf(out, "# rates: %s on %g cores; unique fraction after %g epochs; "
		"%d view%s per sample; |A| = %.4g\n", o->t.steady ? "steady state" :
		"mean over the epochs", o->t.cores, o->t.epochs, o->t.views,
		o->t.views > 1 ? "s" : "", a->choices);
	print_layers(out, a);
	fprintf(out, "# cost\tpart\tlayers\tnames\tms\tspread_ms\n");
	print_cost_column(out, a, 1);
	print_cost_column(out, a, 0);
	fprintf(out, "# final_layers\tpartial_ms\twrite_ms\tread_ms\tfinal_ms\t"
		"transfer_ms\trecord_bytes\tfinal_choices\tcollision\n");
	for (int k = a->splits - 1; k >= 0; k--) {
		const struct rfb_advise_split *s = &a->split[k];
		fprintf(out, "# %d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.0f\t%.6g\t%.6g\n",
			s->final_layers, s->partial_s * 1e3, s->write_s * 1e3,
			s->read_s * 1e3, s->final_s * 1e3, s->transfer_s * 1e3,
			s->record_bytes, s->final_choices, s->collision);
	}
}

/* The layers of row r's partial part that draw, into buf: with tsv
 * "rrcrop,flip", else "rrcrop's and flip's". */
static const char *shared_names(const rfb_advice *a,
				const struct rfb_advise_row *r, int tsv,
				char *buf, size_t n)
{
	int last = a->layers - r->final_layers - 1, left = 0;
	size_t at = 0;

	for (int j = 0; j <= last; j++)
		left += a->layer[j].draws;
	buf[0] = 0;
	for (int j = 0; j <= last && at < n; j++) {
		if (!a->layer[j].draws)
			continue;
		left--;
		at += (size_t)snprintf(buf + at, n - at, "%s%s%s", !at ? "" : tsv ?
				       "," : left ? ", " : " and ",
				       a->layer[j].name, tsv ? "" : "'s");
	}
	return buf;
}

/* Why row r is ruled out, after "ruled out: final NAMES: ". */
static void print_why(FILE *out, const rfb_advice *a, const struct options *o,
		      const struct rfb_advise_row *r)
{
	char names[2048];

	if (r->ruled_out == RFB_ADVISE_SHARED_DRAWS)
		fprintf(out, "views would share the cached %s draws "
			"(--shared-draws keeps it)\n",
			shared_names(a, r, 0, names, sizeof names));
	else
		fprintf(out, "%s%.3g%% (over %g%%, --max-view-collision)\n",
			o->t.views > 2 ? "two of the views identical with "
			"probability " : "the two views identical with probability ",
			r->view_collision * 100, o->t.max_collision * 100);
}

/* The splits ruled out, one line each (their rows of r = 1: neither
 * the collisions nor the partial part's draws depend on r). */
static void print_ruled_out(FILE *out, const rfb_advice *a,
			    const struct options *o,
			    const struct rfb_advise_row *rows, int n, int tsv)
{
	char names[2048], why[2048];

	for (int i = 0; i < n; i++) {
		const struct rfb_advise_row *r = &rows[i];
		if (!r->ruled_out || r->reuse != 1)
			continue;
		final_names(a, r, names, sizeof names);
		if (tsv)
			fprintf(out, "# ruled out\t%d\t%s\t%.4g\t%s\n", r->final_layers,
				names, r->view_collision,
				r->ruled_out == RFB_ADVISE_SHARED_DRAWS ?
				shared_names(a, r, 1, why, sizeof why) : "-");
		else {
			fprintf(out, "ruled out: final %s: ", names);
			print_why(out, a, o, r);
		}
	}
}

/* How much the rates of two runs on a loaded machine differ (measured:
 * 10 to 30% between runs of one command on 2 shared cores). */
#define NOISE_MARGIN 0.2

/* The row another run may recommend, when one is within the noise. */
static void print_rival(FILE *out, const rfb_advice *a, const struct options *o,
			const struct rfb_advise_row *rows, int n, const char *prefix)
{
	char names[2048];
	int rival;

	if (!o->rate || !a->measured)
		return;
	rival = rfb_advise_rival(rows, n, o->rate, NOISE_MARGIN);
	if (rival == -2)
		return;
	fprintf(out, "%swithin the timing noise (%g%%) of %g images/s, another run "
		"may ", prefix, NOISE_MARGIN * 100, o->rate);
	if (rival == -1)
		fprintf(out, "find that no row sustains it");
	else
		fprintf(out, "recommend r = %d, final '%s' (%.1f images/s)",
			rows[rival].reuse, final_names(a, &rows[rival], names,
						       sizeof names), rows[rival].img_per_s);
	fprintf(out, ": ask for a rate with a margin\n");
}

/* The recommendation (--rate) or the Pareto front, into pick[] (n
 * flags); returns the recommended row, -1 for none, -2 without --rate. */
static int choose(struct cli *c, const struct options *o,
		  const struct rfb_advise_row *rows, int n, unsigned char *pick)
{
	int best, max_r = 1;

	if (o->width) { /* nothing timed: every split at the largest r */
		for (int i = 0; i < n; i++)
			max_r = rows[i].reuse > max_r ? rows[i].reuse : max_r;
		for (int i = 0; i < n; i++)
			pick[i] = rows[i].reuse == max_r && !rows[i].ruled_out;
		return -2;
	}

	memset(pick, 0, (size_t)n);
	if (!o->rate) {
		rfb_advise_pareto(rows, n, pick);
		return -2;
	}
	best = rfb_advise_recommend(rows, n, o->rate);
	if (best < 0)
		cli_warn(c, "no configuration sustains %g images/s on %g cores%s",
			 o->rate, o->t.cores, o->t.views > 1 ?
			 " with views that differ" : "");
	else
		pick[best] = 1;
	return best;
}

static void print_choice_tsv(FILE *out, const rfb_advice *a,
			     const struct options *o,
			     const struct rfb_advise_row *rows, int n,
			     const unsigned char *pick, int best)
{
	if (best == -1) {
		fprintf(out, "# recommended: none sustains %g images/s on "
			"%g cores\n", o->rate, o->t.cores);
		return;
	}
	for (int i = 0; i < n; i++)
		if (pick[i]) {
			if (best >= 0)
				fprintf(out, "# recommended for %g images/s on %g "
					"cores:\t", o->rate, o->t.cores);
			else
				fprintf(out, "# pareto\t");
			print_row(out, a, &rows[i]);
		}
}

static int all_ruled_out(const struct rfb_advise_row *rows, int n)
{
	for (int i = 0; i < n; i++)
		if (!rows[i].ruled_out)
			return 0;
	return n > 0;
}

static int by_speed(const void *x, const void *y)
{
	const struct rfb_advise_row *a = *(const struct rfb_advise_row *const *)x;
	const struct rfb_advise_row *b = *(const struct rfb_advise_row *const *)y;
	return a->img_per_cpu_s < b->img_per_cpu_s ? 1 : a->img_per_cpu_s > b->img_per_cpu_s ? -1 : 0;
}

/* The short table: the rows picked, fastest first. */
static void print_short(FILE *out, const rfb_advice *a, const struct options *o,
			const struct rfb_advise_row *rows, int n,
			const unsigned char *pick, int best)
{
	const struct rfb_advise_row **list = malloc((size_t)n * sizeof *list);
	char names[2048];
	int width = 10, m = 0;

	if (!list)
		return;
	if (a->measured)
		fprintf(out, "%u images timed (median of %d runs), %d view%s per "
			"sample, %g epochs, %s on %g cores\n", a->measured,
			o->a.repeat, o->t.views, o->t.views > 1 ? "s" : "",
			o->t.epochs, o->t.steady ? "steady state" :
			"means over the epochs", o->t.cores);
	else
		fprintf(out, "not timed: images of %dx%d, %d view%s per sample, "
			"%g epochs\n", o->width, o->height, o->t.views,
			o->t.views > 1 ? "s" : "", o->t.epochs);
	for (int i = 0; i < n; i++)
		if (pick[i]) {
			int len = (int)strlen(final_names(a, &rows[i], names, sizeof names));
			width = len > width ? len : width;
			list[m++] = &rows[i];
		}
	qsort(list, (size_t)m, sizeof *list, by_speed);
	fprintf(out, "%s r  %-*s  %10s  %7s  %s\n", best >= 0 ? " " : "", width,
		"final part", "img/CPU-s", "unique", "view collisions");
	for (int i = 0; i < m; i++) {
		const struct rfb_advise_row *r = list[i];
		fprintf(out, "%s%2d  %-*s  ", best >= 0 ? "*" : "", r->reuse, width,
			final_names(a, r, names, sizeof names));
		if (a->measured)
			fprintf(out, "%10.1f", r->img_per_cpu_s);
		else
			fprintf(out, "%10s", "-");
		fprintf(out, "  %7.4f  ", r->unique_fraction);
		if (o->t.views > 1)
			fprintf(out, "%.3g%%\n", r->view_collision * 100);
		else
			fprintf(out, "- (one view)\n");
	}
	free(list);
	if (best >= 0)
		fprintf(out, "recommended for %g images/s on %g cores: r = %d, "
			"partial '%s', final '%s'\n", o->rate, o->t.cores,
			rows[best].reuse, a->split[rows[best].split].partial_spec,
			a->split[rows[best].split].final_spec);
	else if (best == -1)
		fprintf(out, "recommended: none sustains %g images/s on %g cores\n",
			o->rate, o->t.cores);
	print_rival(out, a, o, rows, n, "");
	if (all_ruled_out(rows, n))
		fprintf(out, "no split keeps the %d views apart: every one is ruled "
			"out (below); give the recipe random layers that draw more "
			"(a crop), or run one view\n", o->t.views);
	print_ruled_out(out, a, o, rows, n, 0);
	fprintf(out, "(every row, the layers' costs and their spread: --tsv)\n");
}

static void report(struct cli *c, const rfb_advice *a, const struct options *o)
{
	/* r above the epochs would never be reached */
	int max_r = o->max_r < o->t.epochs ? o->max_r : (int)o->t.epochs;
	int n = a->splits * max_r, i = 0, best;
	struct rfb_advise_row *rows = calloc((size_t)n, sizeof *rows);
	unsigned char *pick = malloc((size_t)n);
	FILE *out;

	if (!rows || !pick)
		cli_die(c, "out of memory");
	for (int k = a->splits - 1; k >= 0; k--)
		for (int r = 1; r <= max_r; r++)
			rfb_advise_predict(a, k, r, &o->t, &rows[i++]);
	best = choose(c, o, rows, n, pick);
	out = cli_open_output(c, o->output, 0, 0);
	if (o->tsv) {
		fprintf(out, "final_layers\tpartial\tfinal\tr\timg_per_cpu_s\t"
			"img_per_s\tunique_fraction\tcache_bytes\tview_collision\n");
		for (i = 0; i < n; i++)
			print_row(out, a, &rows[i]);
		print_costs(out, a, o);
		print_ruled_out(out, a, o, rows, n, 1);
		print_choice_tsv(out, a, o, rows, n, pick, best);
		print_rival(out, a, o, rows, n, "# ");
	} else {
		print_short(out, a, o, rows, n, pick, best);
	}
	cli_close_output(c, out, o->output);
	free(rows);
	free(pick);
}

int main(int argc, char **argv)
{
	struct cli c;
	struct options o = { .output = "-", .max_r = 6 };
	rfb_err err = { 0 };
	rfb_advice *a;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	o.a.sample = 200;
	o.a.repeat = 3;
	o.a.codec.kind = RFB_CODEC_RAW;
	o.a.tmp_dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR")
							      : "/tmp";
	o.t.epochs = 90;
	o.t.steady = 1;
	o.t.cores = cpus > 0 ? (double)cpus : 1;
	o.t.views = 1;
	o.t.max_collision = RFB_VIEW_COLLISION_LIMIT;
	cli_init(&c, "refurb-advise", usage, help);
	parse(&c, &o, argc, argv);
	o.a.threads = o.threads_given ? c.threads
				      : o.t.cores < 1.5 ? 1
				      : o.t.cores > 256 ? 256 : (int)(o.t.cores + 0.5);
	/* --cores for a bigger machine: no more timing threads than this
	 * one's CPUs (more would only wait for them) */
	if (!o.threads_given && cpus > 0 && o.a.threads > cpus)
		o.a.threads = (int)cpus;
	o.a.on_bad = on_bad;
	o.a.on_progress = on_progress;
	o.a.ctx = &c;
	a = o.width ? rfb_advise_space(o.a.spec, o.width, o.height, 0, &err)
		    : rfb_advise_measure(&o.a, &err);
	if (!a)
		cli_die_err(&c, &err);
	cli_progress_clear(&c);
	report(&c, a, &o);
	rfb_advice_free(a);
	return 0;
}

/*
 * dump_preview.c - refurb-dump --preview: run a pipeline K times on each
 * given JPEG and write the results as a contact sheet (see
 * bin/dump_preview.txt for the options).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dump_preview.h"
#include "refurb/io.h"
#include "refurb/pipeline.h"
#include "refurb/sheet.h"
#include "refurb/source.h"

#define MAX_COUNT 64
#define MAX_JPEG_BYTES ((size_t)1 << 28)

static const char preview_usage[] =
	"refurb-dump --preview SPEC [-n K] [-s SEED] [-o FILE] IMAGE.jpg...\n"
	"       refurb-dump --preview SPEC [...] --index INDEX ID...";

static const char preview_help[] =
	"Write a contact sheet (JPEG) of K augmentations of each image under\n"
	"the pipeline SPEC: one row per image; column k is the image as sample\n"
	"i (its position among the images) in epoch EPOCH + k.  With --index,\n"
	"the images are the index's samples ID... (from their files or shards),\n"
	"each augmented as sample ID.\n"
	"\n"
	"  -i, --index INDEX     the arguments are sample ids of INDEX\n"
	"  -P, --preview SPEC    the pipeline (refurb-pipeline(7))\n"
	"  -n, --count K         augmentations per image (default 8)\n"
	"  -s, --seed SEED       RNG seed (default 0)\n"
	"  -e, --epoch EPOCH     epoch of the first column (default 0)\n"
	"      --stage STAGE     partial or final (default partial)\n"
	"  -c, --columns COLS    cells per row (default K)\n"
	"  -Q, --quality Q       JPEG quality (default 90)\n"
	"  -o, --output FILE     output file (default stdout)\n"
	"      --force           write to a terminal anyway\n"
	"      --max-pixels N    the largest image decoded or made by any\n"
	"                        layer, and the sheet's cells together, in\n"
	"                        pixels (default 100000000)\n"
	CLI_COMMON_HELP
	"\nExit status: 0 ok, 1 unreadable image or output, 2 usage error.\n";

enum { OPT_STAGE = 0x2101, OPT_FORCE, OPT_MAX_PIXELS };

struct preview {
	const char *spec, *output, *index;
	int count, columns, quality, force;
	uint64_t seed;
	uint32_t epoch, stage;
	uint64_t max_pixels, sheet_pixels; /* the cap; the cells' so far */
};

static void parse_options(struct cli *c, int argc, char **argv, struct preview *pv)
{
	static const struct option longopts[] = {
		{ "preview", required_argument, NULL, 'P' },
		{ "count", required_argument, NULL, 'n' },
		{ "index", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 's' },
		{ "epoch", required_argument, NULL, 'e' },
		{ "stage", required_argument, NULL, OPT_STAGE },
		{ "columns", required_argument, NULL, 'c' },
		{ "quality", required_argument, NULL, 'Q' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "max-pixels", required_argument, NULL, OPT_MAX_PIXELS },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "P:n:i:s:e:c:Q:o:" CLI_COMMON_SHORTOPTS,
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'P': pv->spec = optarg; break;
		case 'n': pv->count = (int)cli_parse_u64(c, "--count", optarg, 1, MAX_COUNT); break;
		case 's': pv->seed = cli_parse_u64(c, "--seed", optarg, 0, UINT64_MAX); break;
		case 'e': pv->epoch = (uint32_t)cli_parse_u64(c, "--epoch", optarg, 0, UINT32_MAX - MAX_COUNT); break;
		case 'c': pv->columns = (int)cli_parse_u64(c, "--columns", optarg, 1, 4096); break;
		case 'Q': pv->quality = (int)cli_parse_u64(c, "--quality", optarg, 1, 100); break;
		case 'o': pv->output = optarg; break;
		case 'i': pv->index = optarg; break;
		case OPT_FORCE: pv->force = 1; break;
		case OPT_MAX_PIXELS: pv->max_pixels = cli_parse_max_pixels(c, optarg); break;
		case OPT_STAGE:
			if (strcmp(optarg, "partial") && strcmp(optarg, "final"))
				cli_usage_error(c, "--stage: '%s' is not partial or final", optarg);
			pv->stage = optarg[0] == 'p' ? RFB_STAGE_PARTIAL : RFB_STAGE_FINAL;
			break;
		default:
			if (!cli_common_option(c, opt, optarg))
				cli_usage_error(c, "unexpected option");
		}
	}
	if (!pv->spec)
		cli_usage_error(c, "--preview SPEC is required");
	if (optind >= argc)
		cli_usage_error(c, "no image given");
	if (!pv->columns)
		pv->columns = pv->count;
}

/* Report err as being about path, and exit 1. */
static void die_path(struct cli *c, const rfb_err *err, const char *path)
{
	rfb_err named;

	rfb_err_set(&named, err->code, path, "%s", err->msg);
	cli_die_err(c, &named);
}

/* The bytes of argument arg: a JPEG file, or with --index a sample id
 * (its key for the pipeline becomes that id). */
static void load_image(struct cli *c, const char *arg, const rfb_index *idx,
		       rfb_source *src, unsigned char **data, size_t *len,
		       uint32_t *sample)
{
	rfb_err err = { 0 };
	size_t cap = 0;

	*data = NULL;
	if (!idx) {
		if (rfb_file_load(arg, MAX_JPEG_BYTES, data, len, &err))
			cli_die_err(c, &err);
		return;
	}
	*sample = (uint32_t)cli_parse_u64(c, "sample id", arg, 0,
					  rfb_index_count(idx) - 1ull);
	if (rfb_source_read(src, *sample, MAX_JPEG_BYTES, data, &cap, len, &err))
		cli_die_err(c, &err);
}

/* The K outputs of one image, copied into cells[0..K) (backed by bufs). */
/* The cells of the sheet add up to no more than the pixel cap. */
static void check_sheet(struct cli *c, struct preview *pv, const rfb_image *img)
{
	pv->sheet_pixels += (uint64_t)img->width * img->height;
	if (pv->sheet_pixels > pv->max_pixels)
		cli_die(c, "the contact sheet's cells of %dx%d would take more than "
			"the cap of %llu pixels (--max-pixels): give fewer images, "
			"a smaller -n or a smaller output size", img->height,
			img->width, (unsigned long long)pv->max_pixels);
}

static void preview_image(struct cli *c, struct preview *pv,
			  const rfb_pipeline *p, rfb_pipe_ctx *ctx, const char *path,
			  uint32_t sample, rfb_image *cells, rfb_imgbuf *bufs,
			  const rfb_index *idx, rfb_source *src)
{
	unsigned char *data;
	size_t len;
	rfb_err err = { 0 };

	load_image(c, path, idx, src, &data, &len, &sample);
	for (int k = 0; k < pv->count; k++) {
		struct rfb_pipe_key key = { pv->seed, pv->epoch + (uint32_t)k, sample,
					    pv->stage };
		struct rfb_pipe_out out;
		int rc = rfb_pipe_run_jpeg(ctx, p, data, len, &key, &out, &err);
		if (!rc)
			check_sheet(c, pv, &out.img);
		if (rc || rfb_image_alloc(&cells[k], &bufs[k], out.img.width,
				    out.img.height, out.img.channels, &err)) {
			free(data);
			if (src)
				rfb_source_blame(src, sample, &err);
			else
				die_path(c, &err, path);
			cli_die_err(c, &err);
		}
		rfb_image_copy(&cells[k], &out.img);
	}
	free(data);
}

static void write_sheet(struct cli *c, const struct preview *pv, rfb_image *cells,
			int n)
{
	struct rfb_sheet_opts so = { pv->columns, 4, { 24, 24, 24 } };
	rfb_imgbuf sb = { 0 }, jb = { 0 };
	rfb_image sheet;
	rfb_err err = { 0 };
	size_t len;
	FILE *f;

	if (rfb_sheet_build(cells, n, &so, &sheet, &sb, &err) ||
	    rfb_sheet_encode(&sheet, pv->quality, &jb, &len, &err))
		die_path(c, &err, pv->output);
	f = cli_open_output(c, pv->output, 1, pv->force);
	if (fwrite(jb.data, 1, len, f) != len)
		cli_die(c, "%s: write failed", pv->output);
	cli_close_output(c, f, pv->output);
	rfb_imgbuf_free(&sb);
	rfb_imgbuf_free(&jb);
}

/* The sheet is a JPEG: an output named for another format is refused,
 * not written with JPEG bytes under that name. */
static void check_format(const struct cli *c, const char *output)
{
	const char *dot = strrchr(output, '.'), *slash = strrchr(output, '/');

	if (!strcmp(output, "-") || !dot || (slash && dot < slash))
		return;
	if (strcasecmp(dot, ".jpg") && strcasecmp(dot, ".jpeg"))
		cli_usage_error(c, "-o %s: the preview is a JPEG contact sheet: "
				"name it .jpg or .jpeg (other formats are not "
				"written)", output);
}

int dump_preview(struct cli *c, int argc, char **argv)
{
	struct preview pv = { NULL, "-", NULL, 8, 0, 90, 0, 0, 0, RFB_STAGE_PARTIAL,
			      RFB_IMAGE_DEFAULT_MAX_PIXELS, 0 };
	rfb_pipeline *p = NULL;
	rfb_pipe_ctx *ctx;
	rfb_err err = { 0 };
	rfb_index *idx = NULL;
	rfb_source *src = NULL;

	c->usage = preview_usage;
	c->help = preview_help;
	parse_options(c, argc, argv, &pv);
	check_format(c, pv.output);
	if (rfb_pipeline_parse(pv.spec, &p, &err) ||
	    rfb_pipeline_check_pixels(p, pv.max_pixels, &err))
		cli_usage_error(c, "%s", err.msg);
	if (pv.index && (!(idx = rfb_index_open(pv.index, &err)) ||
			 !(src = rfb_source_open(idx, NULL, &err))))
		cli_die_err(c, &err);
	if (idx && rfb_index_count(idx) == 0)
		cli_die(c, "%s: the index has no samples", pv.index);
	int images = argc - optind, n = images * pv.count;
	if (n > 4096)
		cli_usage_error(c, "%d cells: give fewer images or a smaller -n", n);
	rfb_image *cells = calloc((size_t)n, sizeof *cells);
	rfb_imgbuf *bufs = calloc((size_t)n, sizeof *bufs);
	ctx = rfb_pipe_ctx_new(&err);
	if (!cells || !bufs || !ctx)
		cli_die(c, "out of memory");
	rfb_pipe_ctx_set_max_pixels(ctx, pv.max_pixels);
	for (int i = 0; i < images; i++)
		preview_image(c, &pv, p, ctx, argv[optind + i], (uint32_t)i,
			      cells + (size_t)i * pv.count, bufs + (size_t)i * pv.count,
			      idx, src);
	write_sheet(c, &pv, cells, n);
	for (int i = 0; i < n; i++)
		rfb_imgbuf_free(&bufs[i]);
	free(cells);
	free(bufs);
	rfb_pipe_ctx_free(ctx);
	rfb_pipeline_free(p);
	rfb_source_close(src);
	rfb_index_close(idx);
	return 0;
}

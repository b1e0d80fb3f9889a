/*
 * test_dump_preview.c - refurb-dump --preview's implementation, run
 * in-process (bin/dump_preview.c is compiled into this test): each
 * invocation runs in a child process so that exits can be checked.
 * Checks the sheet's size, that its cells are the pipeline's outputs,
 * and the exit statuses of bad invocations.
 */
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dump_preview.c"
#include "refurb/decode.h"
#include "refurb/transform.h"
#include "golden.h"
#include "test.h"

static char sheet_path[64];

/* Run dump_preview with the NULL-terminated args; exit status, stderr
 * in errbuf. */
static int run_preview(char *errbuf, size_t n, ...)
{
	char *argv[32] = { "refurb-dump" };
	int argc = 1, pipefd[2], status;
	va_list ap;
	pid_t pid;

	va_start(ap, n);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	if (pipe(pipefd))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct cli c;
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		cli_init(&c, "refurb-dump", "refurb-dump [OPTIONS] FILE", "");
		_exit(dump_preview(&c, argc, argv));
	}
	close(pipefd[1]);
	size_t used = 0;
	ssize_t got;
	while (used < n - 1 && (got = read(pipefd[0], errbuf + used, n - 1 - used)) > 0)
		used += (size_t)got;
	errbuf[used] = '\0';
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int load_sheet(rfb_image *img, rfb_imgbuf *buf)
{
	unsigned char *data;
	size_t len;
	rfb_decoder *d = rfb_decoder_new(NULL);
	int rc = -1;

	if (rfb_file_load(sheet_path, 1 << 26, &data, &len, NULL) == 0) {
		struct rfb_decode_opts o = { .color = RFB_DECODE_KEEP };
		rc = rfb_decode(d, data, len, &o, img, buf, NULL, NULL);
		free(data);
	}
	rfb_decoder_free(d);
	return rc;
}

static void test_sheet_layout(void)
{
	char errbuf[1024];
	rfb_imgbuf b = { 0 };
	rfb_image img;

	/* 2 images x 3 augmentations of 24x32 (h x w): gap 4 */
	CHECKF(run_preview(errbuf, sizeof errbuf, "--preview", "rrcrop=24x32,flip",
			   "-n", "3", "-s", "7", "-o", sheet_path,
			   "tests/data/jpeg/prog420.jpg", "tests/data/jpeg/gray.jpg",
			   NULL) == 0, "%s", errbuf);
	CHECK(load_sheet(&img, &b) == 0);
	CHECKF(img.width == 3 * (32 + 4) + 4 && img.height == 2 * (24 + 4) + 4,
	       "%dx%d", img.width, img.height);
	/* the gap is background, a cell is not */
	CHECK(abs(rfb_image_px(&img, 1, 1)[0] - 24) <= 3);
	/* --columns wraps: 6 cells in 2 columns = 3 rows */
	CHECK(run_preview(errbuf, sizeof errbuf, "-P", "centercrop=20", "-n", "3",
			  "-c", "2", "-o", sheet_path, "tests/data/jpeg/prog420.jpg",
			  "tests/data/jpeg/prog420.jpg", NULL) == 0);
	CHECK(load_sheet(&img, &b) == 0);
	CHECK(img.width == 2 * 24 + 4 && img.height == 3 * 24 + 4);
	rfb_imgbuf_free(&b);
}

/* Cell (row i, column k) is the pipeline's output for sample i, epoch k. */
static void test_cells_are_outputs(void)
{
	char errbuf[1024];
	rfb_imgbuf b = { 0 };
	rfb_image img;
	rfb_pipeline *p = NULL;
	rfb_pipe_ctx *ctx = rfb_pipe_ctx_new(NULL);
	unsigned char *data;
	size_t len;

	CHECK(run_preview(errbuf, sizeof errbuf, "-P", "gray,resize=40,crop=32,flip",
			  "-n", "4", "-s", "3", "-e", "10", "--stage", "final",
			  "-Q", "100", "-o", sheet_path, "tests/data/jpeg/prog420.jpg",
			  NULL) == 0);
	CHECK(load_sheet(&img, &b) == 0);
	CHECK(rfb_pipeline_parse("gray,resize=40,crop=32,flip", &p, NULL) == 0);
	CHECK(rfb_file_load("tests/data/jpeg/prog420.jpg", 1 << 20, &data, &len, NULL) == 0);
	for (int k = 0; k < 4; k++) {
		struct rfb_pipe_key key = { 3, 10 + (uint32_t)k, 0, RFB_STAGE_FINAL };
		struct rfb_pipe_out o;
		CHECK(rfb_pipe_run_jpeg(ctx, p, data, len, &key, &o, NULL) == 0);
		struct rfb_rect r = { 4, 4 + k * 36, 32, 32 };
		rfb_image cell = rfb_crop_view(&img, &r);
		struct golden_diff d = golden_compare(&cell, &o.img);
		/* a gray JPEG at quality 100 is close, not exact */
		CHECKF(d.same_shape && d.mean_abs < 1.0, "cell %d: mae %.2f", k, d.mean_abs);
	}
	free(data);
	rfb_pipeline_free(p);
	rfb_pipe_ctx_free(ctx);
	rfb_imgbuf_free(&b);
}

static void test_errors(void)
{
	char e[1024];

	CHECK(run_preview(e, sizeof e, "-P", "resize=40,blur", "-o", sheet_path,
			  "tests/data/jpeg/prog420.jpg", NULL) == 2);
	CHECKF(strstr(e, "refurb-dump: bad pipeline spec at column 11: unknown filter") &&
	       strstr(e, "resize=40,blur\n") && strstr(e, "^"), "%s", e);
	CHECK(run_preview(e, sizeof e, "-P", "flip", "-o", sheet_path, NULL) == 2);
	CHECK(strstr(e, "no image given") != NULL);
	CHECK(run_preview(e, sizeof e, "-o", sheet_path, "x.jpg", NULL) == 2);
	CHECK(strstr(e, "--preview SPEC is required") != NULL);
	CHECK(run_preview(e, sizeof e, "-P", "flip", "-n", "0", "x.jpg", NULL) == 2);
	CHECK(run_preview(e, sizeof e, "-P", "flip", "--stage", "middle", "x.jpg", NULL) == 2);
	CHECK(run_preview(e, sizeof e, "-P", "flip", "-o", sheet_path,
			  "tests/data/jpeg/nonexistent.jpg", NULL) == 1);
	CHECKF(strstr(e, "refurb-dump: tests/data/jpeg/nonexistent.jpg:") != NULL, "%s", e);
	CHECK(run_preview(e, sizeof e, "-P", "flip", "-o", sheet_path,
			  "tests/data/jpeg/manifest.tsv", NULL) == 1);
	CHECKF(strstr(e, "manifest.tsv:") != NULL, "%s", e);
	CHECK(run_preview(e, sizeof e, "-P", "crop=500", "-o", sheet_path,
			  "tests/data/jpeg/prog420.jpg", NULL) == 1);
	CHECKF(strstr(e, "prog420.jpg: crop") != NULL, "%s", e);
}

/* rfb_sheet_build: cell size, centring, gray expanded, limits. */
static void test_sheet_build(void)
{
	unsigned char a[2 * 3 * 3], b[4 * 1];
	rfb_image imgs[2] = { { a, 6, 2, 3, 3 }, { b, 4, 4, 1, 1 } };
	struct rfb_sheet_opts so = { 2, 1, { 9, 8, 7 } };
	rfb_imgbuf buf = { 0 };
	rfb_image s;
	rfb_err err = { 0 };

	memset(a, 200, sizeof a);
	memset(b, 50, sizeof b);
	CHECK(rfb_sheet_build(imgs, 2, &so, &s, &buf, NULL) == 0);
	/* cells 4x3, gap 1: 2 * 5 + 1 by 1 * 4 + 1, RGB */
	CHECK(s.width == 11 && s.height == 5 && s.channels == 3);
	CHECK(memcmp(rfb_image_px(&s, 0, 0), "\x09\x08\x07", 3) == 0);
	/* image 0 (2 wide) centred in its 4-wide cell at x 1..4 */
	CHECK(rfb_image_px(&s, 2, 1)[0] == 200 && rfb_image_px(&s, 1, 1)[0] == 9);
	/* image 1 (gray, 4x1) centred vertically: row 1 + 1 */
	CHECK(memcmp(rfb_image_px(&s, 6, 2), "\x32\x32\x32", 3) == 0);
	CHECK(rfb_image_px(&s, 6, 1)[0] == 9);
	so.cols = 0;
	CHECK(rfb_sheet_build(imgs, 2, &so, &s, &buf, &err) == RFB_EINVAL);
	so.cols = 1;
	CHECK(rfb_sheet_build(imgs, 0, &so, &s, &buf, &err) == RFB_EINVAL);
	imgs[1].width = 40000;
	so.cols = 2;
	CHECK(rfb_sheet_build(imgs, 2, &so, &s, &buf, &err) == RFB_ELIMIT);
	rfb_imgbuf_free(&buf);
}

int main(void)
{
	int fd;

	snprintf(sheet_path, sizeof sheet_path, "/tmp/refurb-sheet-XXXXXX");
	fd = mkstemp(sheet_path);
	if (fd >= 0)
		close(fd);
	RUN(test_sheet_build);
	RUN(test_sheet_layout);
	RUN(test_cells_are_outputs);
	RUN(test_errors);
	unlink(sheet_path);
	return test_done();
}
